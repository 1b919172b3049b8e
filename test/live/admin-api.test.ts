/**
 * The admin API on a running ingest (issue 51), against the real local Kafka and ClickHouse:
 * - a key created through the API accepts an event within seconds, and is refused after revoke;
 * - the CLI's `keys create|list|revoke` give the same result as the API (the same operations);
 * - a workspace token is refused (403) on every route of the served OpenAPI document for another
 *   workspace, and on every operator route; it is served on its own workspace (positive control);
 * - every change is in the audit trail, with its actor and source, the CLI's too;
 * - a regulation made through the API deletes the user's events and its status reaches FINISHED
 *   (test/live/regulations.test.ts runs the same operation on chdb);
 * - a replay of a time range made through the API sends each message of the range once and
 *   reaches FINISHED; one after its position sends nothing; the CLI's replay sends the same; one
 *   stopped with its process is left RUNNING at its position and, resumed, sends the rest once;
 * - a network past its failed attempts is answered 429, even with the right token.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- the answers are JSON of many shapes, read field by field */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import pino from "pino";
import type { ReplayRecord } from "../../schemas/admin/records";
import { clickhouseConfig, kafkaConfig } from "../../schemas/config";
import { createKafka } from "../../schemas/kafka/client";
import { replayOf, runReplay, type ReplaysContext } from "../../deploy/commands/replay-run";
import { Receiver } from "../support/deliveries";
import { adminPort, basic, LiveStack, waitFor } from "../support/harness";

const api = suite("admin API (live)");
const OPERATOR = `operator-${randomUUID()}`;
const WS = `ws-a-${randomUUID().slice(0, 6)}`;
const OTHER = `ws-b-${randomUUID().slice(0, 6)}`;
const stack = new LiveStack({ ADMIN_TOKEN: OPERATOR });
let base = "";

api.before(async () => {
  await stack.start();
  base = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
});
api.after(() => stack.stop());

/** One admin call: status and JSON body. */
async function call(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers };
}

/** Runs the CLI with this stack's settings; resolves with its exit code and output. */
async function cli(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const service = stack.spawn("deploy/cli.js", { USER: "tester" }, args);
  const { code } = await service.exited;
  const out = service.output();
  return { code, out, err: out };
}

const track = (writeKey: string, userId = "u1") =>
  stack.post("/v1/track", { userId, event: "Admin Test", messageId: randomUUID() }, { authorization: basic(writeKey) });

api("a key created through the API is accepted within seconds, and refused after revoke", async () => {
  const made = await call("POST", `/admin/v1/workspaces/${WS}/keys`, OPERATOR);
  assert.is(made.status, 201, JSON.stringify(made.body));
  assert.match(made.body.writeKey, /^wk_/);
  const before = await track(made.body.writeKey);
  const started = Date.now();
  await waitFor("the new key accepted", async () => ((await track(made.body.writeKey)).status === 200 ? true : undefined), 15_000);
  console.log(`  accepted ${Date.now() - started} ms after creation (first try: ${before.status})`);
  const listed = await call("GET", `/admin/v1/workspaces/${WS}/keys`, OPERATOR);
  assert.equal(
    listed.body.keys.map((k: { keyId: string }) => k.keyId),
    [made.body.key.keyId],
  );
  assert.not.ok(JSON.stringify(listed.body).includes(made.body.writeKey), "a list never shows the key");
  const revoked = await call("DELETE", `/admin/v1/workspaces/${WS}/keys/${made.body.key.keyId}`, OPERATOR);
  assert.is(revoked.status, 200);
  assert.ok(revoked.body.revokedAt);
  await waitFor("the revoked key refused", async () => ((await track(made.body.writeKey)).status === 401 ? true : undefined), 15_000);
  assert.is((await track("test-key")).status, 200, "another key still accepted (control)");
});

api("the CLI and the API give the same keys", async () => {
  const made = await cli("keys", "create", OTHER);
  assert.is(made.code, 0, made.out);
  const writeKey = made.out.split("\n").find((l) => l.startsWith("wk_"))!;
  await waitFor("the CLI's key accepted", async () => ((await track(writeKey)).status === 200 ? true : undefined), 15_000);
  const fromCli = (await cli("keys", "list", OTHER, "--json")).out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
  const fromApi = (await call("GET", `/admin/v1/workspaces/${OTHER}/keys`, OPERATOR)).body.keys;
  assert.equal(
    fromApi.map((k: object) => ({ ...k, lastUsedAt: undefined })),
    fromCli.map((k: object) => ({ ...k, lastUsedAt: undefined })),
  );
  assert.is(fromApi.length, 1);
  const revoked = await cli("keys", "revoke", OTHER, fromApi[0].keyId);
  assert.is(revoked.code, 0, revoked.out);
  await waitFor("the CLI's revoke honoured", async () => ((await track(writeKey)).status === 401 ? true : undefined), 15_000);
  const after = (await call("GET", `/admin/v1/workspaces/${OTHER}/keys`, OPERATOR)).body.keys;
  assert.ok(after[0].revokedAt, "the API sees the CLI's revoke");
  assert.is(after[0].revokedBy, "cli:tester");
});

api("destinations and plans: the API and the CLI see and make the same", async () => {
  const added = await call("POST", `/admin/v1/workspaces/${WS}/destinations`, OPERATOR, { url: "http://127.0.0.1:9/hook", batchSize: 0 });
  assert.is(added.status, 400);
  assert.is(added.body.field, "batchSize", JSON.stringify(added.body));
  const made = await call("POST", `/admin/v1/workspaces/${WS}/destinations`, OPERATOR, {
    url: "http://127.0.0.1:9/hook",
    headers: { "X-Team": "a" },
  });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const id: string = made.body.destination.destinationId;
  const fromCli = (await cli("destinations", "list", WS, "--json")).out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
  const fromApi = (await call("GET", `/admin/v1/workspaces/${WS}/destinations`, OPERATOR)).body.destinations;
  assert.equal(fromApi, fromCli);
  assert.equal(fromApi[0].headers, ["X-Team"], "header names only");
  assert.is(
    (await call("POST", `/admin/v1/workspaces/${OTHER}/destinations/${id}/pause`, OPERATOR)).status,
    404,
    "not under another workspace",
  );
  assert.is((await call("POST", `/admin/v1/workspaces/${WS}/destinations/${id}/pause`, OPERATOR)).body.paused, true);
  const failures = await call("GET", `/admin/v1/workspaces/${WS}/destinations/${id}/failures`, OPERATOR);
  assert.equal([failures.status, failures.body.failures], [200, []], "none kept yet");
  assert.is((await call("GET", `/admin/v1/workspaces/${OTHER}/destinations/${id}/failures`, OPERATOR)).status, 404);
  const dlq = await call("GET", "/admin/v1/dlq", OPERATOR);
  assert.equal(dlq.body, { letters: 0, oldestSeconds: null }, "nothing refused by ClickHouse in this stack");
  assert.equal((await call("POST", "/admin/v1/dlq/replay", OPERATOR)).body, { replayed: 0 });
  const body = { unplanned: "flag", violations: "flag", track: { "Admin Test": { type: "object" } } };
  const applied = await call("PUT", `/admin/v1/workspaces/${WS}/plan`, OPERATOR, body);
  assert.is(applied.status, 200, JSON.stringify(applied.body));
  const printed = (await cli("plans", "show", WS)).out;
  const shown = JSON.parse(printed.slice(printed.indexOf("{"), printed.lastIndexOf("}") + 1));
  assert.equal(shown, (await call("GET", `/admin/v1/workspaces/${WS}/plan`, OPERATOR)).body);
  assert.is(shown.version, applied.body.version);
  assert.is((await call("DELETE", `/admin/v1/workspaces/${WS}/plan`, OPERATOR)).status, 200);
});

api(
  "a replay of a time range through the API sends the range once each and reaches FINISHED; the CLI's replay sends the same",
  async () => {
    const receiver = await new Receiver().start();
    try {
      const added = await call("POST", "/admin/v1/workspaces/ws-test/destinations", OPERATOR, { url: receiver.url, batchSize: 5 });
      assert.is(added.status, 201, JSON.stringify(added.body));
      const id: string = added.body.destination.destinationId;
      const started = Date.now();
      const listed = await call("GET", "/admin/v1/workspaces/ws-test/destinations", OPERATOR);
      console.log(`  a destination list through the API: ${Date.now() - started} ms`);
      assert.ok(
        listed.body.destinations.some((d: any) => d.destinationId === id),
        "the destination just added is listed at once",
      );
      const from = new Date(Date.now() - 1_000).toISOString();
      const ids = Array.from({ length: 12 }, () => randomUUID());
      for (const messageId of ids)
        assert.is((await stack.post("/v1/track", { userId: "replayed", event: "Replay Test", messageId })).status, 200);
      await waitFor("12 rows", async () => ((await stack.finalRows(ids)).length === 12 ? true : undefined));
      const to = new Date(Date.now() + 1_000).toISOString();
      const bad = await call("POST", `/admin/v1/workspaces/ws-test/destinations/${id}/replays`, OPERATOR, { from: to, to: from });
      assert.equal([bad.status, bad.body.field], [400, "from"]);
      const made = await call("POST", `/admin/v1/workspaces/ws-test/destinations/${id}/replays`, OPERATOR, { from, to, rate: 50 });
      assert.is(made.status, 201, JSON.stringify(made.body));
      assert.is(made.body.status, "INITIALIZED");
      const path = `/admin/v1/workspaces/ws-test/destinations/${id}/replays/${made.body.replayId}`;
      const done = await waitFor("FINISHED", async () => {
        const got = await call("GET", path, OPERATOR);
        assert.not.equal(got.body.status, "FAILED", JSON.stringify(got.body));
        return got.body.status === "FINISHED" ? got.body : undefined;
      });
      console.log(
        `  replay FINISHED ${Date.parse(done.updatedAt) - Date.parse(done.createdAt)} ms after creation: ${JSON.stringify(done.counts)}`,
      );
      assert.equal([done.total, done.counts], [12, { read: 12, delivered: 12, failed: 0, skipped: 0 }]);
      assert.equal(receiver.count(ids), { sent: 12, delivered: 12, duplicates: 0, extra: 0 });
      assert.is(receiver.messages, 12, "nothing outside the range");
      // Going on after the position it reached sends nothing more.
      const after = await call("POST", `/admin/v1/workspaces/ws-test/destinations/${id}/replays`, OPERATOR, {
        from,
        to,
        after: done.position,
      });
      assert.is(after.status, 201, JSON.stringify(after.body));
      const rest = await waitFor("the second FINISHED", async () => {
        const got = await call("GET", `/admin/v1/workspaces/ws-test/destinations/${id}/replays/${after.body.replayId}`, OPERATOR);
        return got.body.status === "FINISHED" ? got.body : undefined;
      });
      assert.equal([rest.counts.read, receiver.messages], [0, 12]);
      const list = (await call("GET", `/admin/v1/workspaces/ws-test/destinations/${id}/replays`, OPERATOR)).body.replays;
      assert.equal(
        list.map((r: any) => r.replayId),
        [after.body.replayId, made.body.replayId],
      );
      assert.is((await call("GET", path.replace("ws-test", OTHER), OPERATOR)).status, 404, "not under another workspace's path");
      // The CLI's replay of the same range: the same run in the foreground, each message once more.
      const fromCli = await cli("destinations", "replay", id, "--from", from, "--to", to, "--rate", "50");
      assert.is(fromCli.code, 0, fromCli.out);
      assert.match(fromCli.out, /12 delivered\t0 failed\t0 skipped/);
      assert.equal(receiver.count(ids).extra, 12);
    } finally {
      await receiver.close();
    }
  },
);

api("a replay stopped with its process is left RUNNING at its position; resumed, it sends the rest, each message once", async () => {
  const receiver = await new Receiver().start();
  receiver.delayMs = 150;
  const kafka = createKafka(kafkaConfig(stack.env), "test-replay-run");
  try {
    const added = await call("POST", "/admin/v1/workspaces/ws-test/destinations", OPERATOR, { url: receiver.url, batchSize: 1 });
    const destinationId: string = added.body.destination.destinationId;
    const from = new Date(Date.now() - 1_000).toISOString();
    const ids = Array.from({ length: 10 }, () => randomUUID());
    for (const messageId of ids) await stack.post("/v1/track", { userId: "resumed", event: "Replay Test", messageId });
    await waitFor("10 rows", async () => ((await stack.finalRows(ids)).length === 10 ? true : undefined));
    const ch = clickhouseConfig(stack.env);
    const published: ReplayRecord[] = [];
    const ctx: ReplaysContext = {
      kafka,
      settings: {
        kafka: kafkaConfig(stack.env),
        allowLinkLocal: false,
        env: stack.env,
        post: { timeoutMs: 5_000, maxAnswerBytes: 65_536, allowLinkLocal: false },
        database: ch.database,
        table: ch.table,
      },
      client: stack.ch,
      log: pino({ level: "silent" }),
      now: () => new Date(),
      publish: async (records) => void published.push(...records),
      progressEveryMs: 0,
    };
    const made = replayOf(
      { from, to: new Date(Date.now() + 1_000).toISOString(), rate: 1000 },
      "ws-test",
      destinationId,
      "operator",
      new Date(),
    );
    if (!made.ok) throw new Error(made.error);
    const abort = new AbortController();
    const running = runReplay(ctx, made.value, abort.signal);
    await waitFor("3 delivered", async () => (receiver.messages >= 3 ? true : undefined));
    abort.abort();
    const left = await running;
    assert.is(left.status, "RUNNING", JSON.stringify(left));
    assert.ok(left.position, "its position is kept");
    assert.ok(left.counts.delivered >= 3 && left.counts.delivered < 10, JSON.stringify(left.counts));
    assert.is(left.counts.delivered, receiver.messages, "the position counts exactly what was delivered");
    const resumed = await runReplay(ctx, left);
    assert.is(resumed.status, "FINISHED", JSON.stringify(resumed));
    assert.equal([resumed.total, resumed.counts], [10, { read: 10, delivered: 10, failed: 0, skipped: 0 }]);
    assert.equal(receiver.count(ids), { sent: 10, delivered: 10, duplicates: 0, extra: 0 });
    console.log(`  stopped after ${left.counts.delivered} of 10; resumed from ${left.position}: ${receiver.messages} deliveries in all`);
  } finally {
    await receiver.close();
  }
});

api("a workspace token: its own workspace served, every other workspace's route and every operator route 403", async () => {
  const made = await call("POST", "/admin/v1/tokens", OPERATOR, { name: "team a", scope: "workspace", workspaceId: WS });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const token: string = made.body.token;
  await waitFor("the token known", async () =>
    (await call("GET", `/admin/v1/workspaces/${WS}/keys`, token)).status === 200 ? true : undefined,
  );
  const doc = (await fetch(`${base}/admin/v1/openapi.json`).then((r) => r.json())) as {
    paths: Record<string, Record<string, { "x-scope": string }>>;
  };
  let checked = 0;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const concrete = path.replace("{workspaceId}", OTHER).replace(/\{\w+\}/g, "x");
      const answer = await call(method.toUpperCase(), concrete, token, method === "get" || method === "delete" ? undefined : {});
      if (operation["x-scope"] === "any") {
        assert.is(answer.status, 200, `${method} ${path}`);
        assert.not.ok(JSON.stringify(answer.body).includes(OTHER), `${method} ${path} shows nothing of ${OTHER}`);
      } else assert.is(answer.status, 403, `${method} ${path} for ${OTHER}: ${JSON.stringify(answer.body)}`);
      checked++;
    }
  }
  console.log(`  ${checked} operations of the document refused or narrowed for another workspace`);
  assert.ok(checked >= 12);
  const own = await call("POST", `/admin/v1/workspaces/${WS}/keys`, token);
  assert.is(own.status, 201, "its own workspace: served");
  assert.is((await call("GET", "/admin/v1/workspaces", token)).body.workspaces[0].workspaceId, WS);
  const live = await fetch(`${base}/live/recent?workspaceId=${OTHER}`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(live.status, 403, "the live view of another workspace");
  const liveOwn = await fetch(`${base}/live/recent?workspaceId=${WS}`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(liveOwn.status, 200, "the live view of its own");
  const revoked = await call("DELETE", `/admin/v1/tokens/${made.body.listed.tokenId}`, OPERATOR);
  assert.is(revoked.status, 200);
  assert.is((await call("GET", `/admin/v1/workspaces/${WS}/keys`, token)).status, 401, "revoked: refused by this ingest at once");
});

api("every change is in the audit trail, the CLI's too", async () => {
  const rows = await waitFor("the audit rows", async () => {
    const got = await call("GET", "/admin/v1/audit?limit=100", OPERATOR);
    const actions = new Set(got.body.entries.map((e: { action: string }) => e.action));
    return ["keys.create", "keys.revoke", "tokens.create", "tokens.revoke"].every((a) => actions.has(a)) ? got.body.entries : undefined;
  });
  const created = rows.find((r: any) => r.action === "keys.create" && r.workspace_id === WS && r.actor === "operator");
  assert.ok(created, "the API's key creation, by the operator token");
  assert.is(created.status, 201);
  assert.is(created.source_ip.replace("::ffff:", ""), "127.0.0.1");
  const cliRow = rows.find((r: any) => r.action === "keys.create" && r.workspace_id === OTHER);
  assert.is(cliRow?.actor, "cli:tester");
  assert.is(cliRow?.source_ip, "cli");
  assert.not.ok(JSON.stringify(rows).includes("wk_"), "no key in the trail");
  assert.not.ok(JSON.stringify(rows).includes("sat_"), "no token in the trail");
  const since = new Date(Date.parse(created.at.replace(" ", "T") + "Z") - 1_000).toISOString();
  const recent = await call("GET", `/admin/v1/audit?since=${since}&action=keys.create`, OPERATOR);
  assert.is(recent.status, 200, JSON.stringify(recent.body));
  assert.ok(
    recent.body.entries.some((e: any) => e.audit_id === created.audit_id),
    "since: a row at that time",
  );
  const later = await call("GET", `/admin/v1/audit?since=${new Date(Date.now() + 3_600_000).toISOString()}`, OPERATOR);
  assert.equal(later.body.entries, [], "since: none after now");
  const scoped = await call("GET", `/admin/v1/workspaces/${OTHER}/audit`, OPERATOR);
  assert.ok(scoped.body.entries.length > 0 && scoped.body.entries.every((e: any) => e.workspace_id === OTHER));
});

api("a regulation through the API deletes the user's events and reaches FINISHED", async () => {
  const made = await call("POST", `/admin/v1/workspaces/${WS}/keys`, OPERATOR);
  await waitFor("key", async () => ((await track(made.body.writeKey, "gone")).status === 200 ? true : undefined), 15_000);
  assert.is((await track(made.body.writeKey, "kept")).status, 200);
  const count = async (userId: string) =>
    Number(
      (
        await (
          await stack.ch.query({
            query: `SELECT count() AS n FROM ${stack.table} FINAL WHERE workspace_id = '${WS}' AND user_id = '${userId}'`,
            format: "JSONEachRow",
          })
        ).json<{ n: string }>()
      )[0]!.n,
    );
  await waitFor("both users stored", async () => ((await count("gone")) > 0 && (await count("kept")) > 0 ? true : undefined));
  const bad = await call("POST", `/admin/v1/workspaces/${WS}/regulations`, OPERATOR, {
    regulationType: "DELETE_ONLY",
    subjectType: "USER_ID",
    subjectIds: ["ok", ""],
  });
  assert.is(bad.status, 400);
  assert.is(bad.body.field, "subjectIds[1]");
  const regulation = await call("POST", `/admin/v1/workspaces/${WS}/regulations`, OPERATOR, {
    regulationType: "SUPPRESS_WITH_DELETE",
    subjectType: "USER_ID",
    subjectIds: ["gone"],
  });
  assert.is(regulation.status, 201, JSON.stringify(regulation.body));
  assert.is(regulation.body.overallStatus, "INITIALIZED");
  const started = Date.now();
  const finished = await waitFor(
    "FINISHED",
    async () => {
      const got = await call("GET", `/admin/v1/workspaces/${WS}/regulations/${regulation.body.regulateId}`, OPERATOR);
      assert.not.equal(got.body.overallStatus, "FAILED", JSON.stringify(got.body));
      return got.body.overallStatus === "FINISHED" ? got.body : undefined;
    },
    120_000,
  );
  console.log(`  FINISHED ${Date.now() - started} ms after creation`);
  assert.is(finished.finished, 1);
  assert.is(await count("gone"), 0, "the user's events are gone");
  assert.ok((await count("kept")) > 0, "the other user's stay (control)");
  const other = await call("GET", `/admin/v1/workspaces/${OTHER}/regulations/${regulation.body.regulateId}`, OPERATOR);
  assert.is(other.status, 404, "not under another workspace's path");
});

/** The JSON a CLI command printed (one document, or one per line with `lines`). */
function printed(text: string, lines = false): any {
  // the CLI's log lines (pino JSON, with a level) share the output with what it printed
  const out = text
    .split("\n")
    .filter((l) => !/^\{"level":/.test(l))
    .join("\n");
  if (lines)
    return out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l));
  const start = Math.min(...["{", "["].map((c) => out.indexOf(c)).filter((i) => i >= 0));
  return JSON.parse(out.slice(start, Math.max(out.lastIndexOf("}"), out.lastIndexOf("]")) + 1));
}

api("the CLI's other operations give what the API gives: tokens, pause and resume, regulations, the draft, the catalog", async () => {
  const made = await cli("tokens", "create", "from the cli", "--workspace", WS);
  assert.is(made.code, 0, made.out);
  const token = made.out.split("\n").find((l) => l.startsWith("sat_"))!;
  await waitFor("the CLI's token works", async () =>
    (await call("GET", `/admin/v1/workspaces/${WS}/keys`, token)).status === 200 ? true : undefined,
  );
  const fromApi = (await call("GET", "/admin/v1/tokens", OPERATOR)).body.tokens;
  assert.equal(printed((await cli("tokens", "list", "--json")).out, true), fromApi);
  const mine = fromApi.find((t: any) => t.name === "from the cli");
  assert.equal([mine.createdBy, mine.scope, mine.workspaceId], ["cli:tester", "workspace", WS]);
  assert.is((await cli("tokens", "revoke", mine.tokenId)).code, 0);
  await waitFor("the CLI's revoke honoured", async () =>
    (await call("GET", `/admin/v1/workspaces/${WS}/keys`, token)).status === 401 ? true : undefined,
  );

  const [destination] = (await call("GET", `/admin/v1/workspaces/${WS}/destinations`, OPERATOR)).body.destinations;
  assert.is((await cli("destinations", "resume", destination.destinationId)).code, 0);
  assert.is(
    (await call("GET", `/admin/v1/workspaces/${WS}/destinations`, OPERATOR)).body.destinations[0].paused,
    false,
    "the CLI's resume, seen by the API",
  );
  await call("POST", `/admin/v1/workspaces/${WS}/destinations/${destination.destinationId}/pause`, OPERATOR);
  assert.is(printed((await cli("destinations", "list", WS, "--json")).out, true)[0].paused, true, "the API's pause, seen by the CLI");

  const regulations = (await call("GET", `/admin/v1/workspaces/${WS}/regulations`, OPERATOR)).body.regulations;
  assert.ok(regulations.length > 0);
  assert.equal(printed((await cli("regulations", "list", WS, "--json")).out), regulations);
  assert.equal(printed((await cli("plans", "draft", WS)).out), (await call("GET", `/admin/v1/workspaces/${WS}/plan/draft`, OPERATOR)).body);
  const catalog = (await call("GET", `/admin/v1/workspaces/${WS}/catalog`, OPERATOR)).body;
  assert.ok(
    catalog.events.some((e: any) => e.event === "Admin Test"),
    "the catalog has the test's events",
  );
  assert.equal(printed((await cli("catalog", WS, "--json")).out), catalog);
});

api("a network past its failed attempts gets 429, even with the right token", async () => {
  let last = 0;
  for (let i = 0; i < 12; i++) last = (await call("GET", "/admin/v1/tokens", `wrong-${i}`)).status;
  assert.is(last, 429);
  const right = await call("GET", "/admin/v1/tokens", OPERATOR);
  assert.is(right.status, 429);
  assert.ok(Number(right.headers.get("retry-after")) > 0);
});

api.run();
