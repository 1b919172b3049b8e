/**
 * A destination's health through the admin API (issue 51: deploy/admin/routes-health.ts) on the
 * real local stack, with the delivery process (sink/deliver/health.ts reports to the admin topic)
 * and receivers on 127.0.0.1: one answering 200, one 500 (retried), one 400 (kept). Destinations
 * are added through the API and events sent before the delivery process starts, so each group has
 * no commit yet and every event waits (the count from the destination's creation, exactly N).
 * Then: the healthy destination's delivered reaches N and its waiting 0; the failing one's retried
 * and oldest waiting message grow while its waiting stays above 0 (the control that 0 is earned);
 * the kept failures are counted (the healthy one's 0); another workspace's token gets 403, its own
 * workspace's path with this destination and an unknown destination 404; after a clean stop of
 * the delivery process its reports are gone within seconds.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- answers are JSON read field by field */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminPort, LiveStack, stopService, waitFor } from "../support/harness";
import { delivering, Receiver, startDeliver, type Deliverer } from "../support/deliveries";

const live = suite("destination health (live)");
const OPERATOR = `operator-${randomUUID()}`;
const PREFIX = `test-health-${randomUUID().slice(0, 8)}`;
const OTHER = `ws-other-${randomUUID().slice(0, 6)}`;
const N = 40;
const stack = new LiveStack({ ADMIN_TOKEN: OPERATOR, DELIVER_GROUP_PREFIX: PREFIX });
const receivers = { ok: new Receiver(), down: new Receiver(), strict: new Receiver() };
const ids = { ok: "", down: "", strict: "" };
let deliverer: Deliverer | undefined;
let base = "";

/** One admin call: status and JSON body. */
async function call(method: string, path: string, token = OPERATOR, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}

const healthPath = (id: string, workspaceId = "ws-test") => `/admin/v1/workspaces/${workspaceId}/destinations/${id}/health`;

/** The health of `id`, asserted 200. */
async function health(id: string): Promise<any> {
  const got = await call("GET", healthPath(id));
  assert.is(got.status, 200, JSON.stringify(got.body));
  return got.body;
}

/** Polls the health of `id` until `done` holds; the last answer. */
const healthUntil = (what: string, id: string, done: (h: any) => boolean, ms = 90_000) =>
  waitFor(
    what,
    async () => {
      const h = await health(id);
      return done(h) ? h : undefined;
    },
    ms,
  );

live.before(async () => {
  await stack.start();
  base = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
  await Promise.all(Object.values(receivers).map((r) => r.start()));
  receivers.down.status = () => 500;
  receivers.strict.status = () => 400;
  for (const name of ["ok", "down", "strict"] as const) {
    const made = await call("POST", "/admin/v1/workspaces/ws-test/destinations", OPERATOR, { url: receivers[name].url });
    assert.is(made.status, 201, JSON.stringify(made.body));
    ids[name] = made.body.destination.destinationId;
  }
});

live.after(async () => {
  if (deliverer !== undefined && deliverer.service.child.exitCode === null) await stopService(deliverer.service);
  await Promise.all(Object.values(receivers).map((r) => r.close()));
  await stack.stop();
});

live("before any delivery process: every event waits (from the destination's creation), and no report", async () => {
  const messageIds: string[] = [];
  for (let i = 0; i < N; i += 20) {
    const batch = Array.from({ length: 20 }, () => ({ type: "track", event: "Health Test", userId: "u1", messageId: randomUUID() }));
    assert.is((await stack.post("/v1/batch", { batch })).status, 200);
    messageIds.push(...batch.map((m) => m.messageId));
  }
  const before = await healthUntil(`${N} waiting`, ids.ok, (h) => h.waiting === N, 20_000);
  assert.equal(before, {
    destinationId: ids.ok,
    waiting: N,
    oldestWaitingSeconds: null,
    delivered: 0,
    retried: 0,
    failed: 0,
    failuresKept: 0,
    reportedAt: null,
  });
  deliverer = await startDeliver(stack, PREFIX, { DELIVER_HEALTH_EVERY_MS: "2000" });
  for (const id of Object.values(ids)) await delivering(deliverer, id);
  const started = Date.now();
  await receivers.ok.all(messageIds, 60_000);
  const ok = await healthUntil(
    "the healthy destination's report: all delivered, none waiting",
    ids.ok,
    (h) => h.delivered >= N && h.waiting === 0,
  );
  console.log(`  healthy after ${Date.now() - started} ms: ${JSON.stringify(ok)}`);
  assert.ok(ok.reportedAt !== null && Math.abs(Date.now() - Date.parse(ok.reportedAt)) < 120_000, `reportedAt ${ok.reportedAt}`);
  assert.equal([ok.retried, ok.failed, ok.failuresKept, ok.oldestWaitingSeconds], [0, 0, 0, 0]);
});

live("a receiver answering 500: retried, its oldest message waiting, its waiting above 0; not kept", async () => {
  const down = await healthUntil(
    "the failing destination's retries reported",
    ids.down,
    (h) => h.retried > 0 && h.oldestWaitingSeconds > 0,
  );
  console.log(`  failing: ${JSON.stringify(down)} (${receivers.down.requests} requests answered 500)`);
  assert.ok(down.waiting > 0 && down.waiting <= N, `waiting ${down.waiting}: the healthy one's 0 is earned`);
  assert.is(down.delivered, 0);
  assert.is(down.failed, 0, "a 500 is retried until the horizon, not kept");
  assert.ok(receivers.down.requests > 0);
});

live("a receiver answering 400: each message kept, counted in failuresKept and failed", async () => {
  const strict = await healthUntil(
    "the kept failures counted",
    ids.strict,
    (h) => h.failuresKept === N && h.failed >= N && h.waiting === 0,
  );
  console.log(`  strict: ${JSON.stringify(strict)}`);
  assert.is(strict.delivered, 0);
  const [row] = await stack.select<{ n: string }>(
    `SELECT count() AS n FROM ${stack.database}.delivery_failures FINAL WHERE destination_id = '${ids.strict}' AND resolved = 0`,
  );
  assert.is(Number(row!.n), N, "the count is the table's");
});

live("another workspace's token 403; its own path with this destination, and an unknown destination, 404", async () => {
  const made = await call("POST", "/admin/v1/tokens", OPERATOR, { name: "other", scope: "workspace", workspaceId: OTHER });
  const mine = await call("POST", "/admin/v1/tokens", OPERATOR, { name: "test", scope: "workspace", workspaceId: "ws-test" });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const token: string = made.body.token;
  await waitFor("the tokens known", async () => {
    const [a, b] = await Promise.all([
      call("GET", `/admin/v1/workspaces/${OTHER}/keys`, token),
      call("GET", "/admin/v1/workspaces/ws-test/keys", mine.body.token),
    ]);
    return a.status === 200 && b.status === 200 ? true : undefined;
  });
  assert.is(
    (await call("GET", healthPath(ids.ok), mine.body.token)).status,
    200,
    "the destination's own workspace token is served (control)",
  );
  const refused = await call("GET", healthPath(ids.ok), token);
  assert.is(refused.status, 403, JSON.stringify(refused.body));
  const elsewhere = await call("GET", healthPath(ids.ok, OTHER), token);
  assert.is(elsewhere.status, 404, JSON.stringify(elsewhere.body));
  const unknown = await call("GET", healthPath("d-00000000"));
  assert.is(unknown.status, 404);
  assert.equal(unknown.body, { error: "not_found", message: "no destination d-00000000", field: "destinationId" });
  assert.equal(
    elsewhere.body,
    { error: "not_found", message: `no destination ${ids.ok}`, field: "destinationId" },
    "as if it did not exist",
  );
});

live("after a clean stop of the delivery process its reports are gone within seconds", async () => {
  assert.ok((await health(ids.ok)).reportedAt !== null, "reported before the stop (control)");
  const { code } = await stopService(deliverer!.service);
  assert.is(code, 0, deliverer!.service.output().slice(-2_000));
  const stopped = Date.now();
  const after = await healthUntil("no report", ids.ok, (h) => h.reportedAt === null, 10_000);
  console.log(`  reports gone ${Date.now() - stopped} ms after the stop`);
  assert.equal([after.oldestWaitingSeconds, after.delivered, after.retried, after.failed], [null, 0, 0, 0]);
  assert.is((await health(ids.down)).reportedAt, null);
  assert.ok((await health(ids.down)).waiting > 0, "what waits in Kafka still waits");
});

live.run();
