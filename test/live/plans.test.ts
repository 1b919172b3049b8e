/**
 * Tracking plans end to end on the live stack: a plan drafted from the catalog of real traffic and
 * applied with the CLI; each ingest follows it without a restart. Flag stores a violating event
 * with its violations (counted, shown by the live view); block refuses it into rejected_messages
 * naming the path while the valid items of the same batch land; unplanned events allowed, flagged
 * and blocked; omit stores the event without its unplanned properties and says so; `plans check`
 * on stored events; the violations queries of docs/QUERIES.md on 18.16 (live) and on current
 * ClickHouse (chdb).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "../../deploy/setup/migrate";
import { violationTexts } from "../../ingest/records/plan";
import { buildRecords } from "../../ingest/records/build";
import type { Message } from "../../schemas/messages";
import { adminPort, basic, LiveStack, sqlList, waitFor } from "../support/harness";
import { Chdb } from "../support/chdb";
import { planQueries } from "../support/queries-doc";

const ADMIN_TOKEN = "test-plans-admin-token-0123456789";
const stack = new LiveStack({ WRITE_KEYS: "plan-key=ws1", ADMIN_TOKEN });
const live = suite("tracking plans (live)");
const headers = { authorization: basic("plan-key") };
const scratch = join(tmpdir(), `plans-${randomUUID().slice(0, 8)}`);
const started = new Date(Date.now() - 5_000).toISOString();

async function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  const service = stack.spawn("deploy/cli.js", {}, args);
  const { code } = await service.exited;
  return { code, output: service.output() };
}

/** Writes `plan` to a file and applies it; waits until the ingest says it applied that version. */
async function apply(plan: object): Promise<number> {
  const file = `${scratch}-${randomUUID().slice(0, 6)}.json`;
  writeFileSync(file, JSON.stringify(plan));
  const applied = await cli(["plans", "apply", "ws1", file]);
  assert.is(applied.code, 0, applied.output);
  const version = Number(/applied version (\d+)/.exec(applied.output)?.[1]);
  await waitFor(`the ingest applies v${version}`, async () =>
    stack.ingest!.output().includes(`"version":${version},"msg":"plan applied"`) ? true : undefined,
  );
  return version;
}

const order = (total: unknown, extra: Record<string, unknown> = {}) => ({
  type: "track",
  event: "Order Completed",
  userId: "u1",
  messageId: randomUUID(),
  properties: { total, currency: "EUR", ...extra },
});

live.before(() => stack.start());
live.after(() => stack.stop());

live(
  "a plan drafted from the catalog of real traffic, then applied; flag stores a violation with its event, counted and shown live",
  async () => {
    const traffic = [
      ...Array.from({ length: 20 }, (_, i) => order(10 + i, i % 2 === 0 ? { coupon: "X" } : {})),
      ...Array.from({ length: 5 }, () => ({ type: "identify", userId: "u1", messageId: randomUUID(), traits: { email: "a@b.c" } })),
    ];
    assert.is((await stack.post("/v1/batch", { batch: traffic }, headers)).status, 200);
    await stack.rowsLanded(traffic.map((m) => m.messageId));
    const drafted = await cli(["plans", "draft", "ws1"]);
    assert.is(drafted.code, 0, drafted.output);
    const plan = JSON.parse(drafted.output.slice(drafted.output.indexOf("{"))) as {
      track: Record<string, { required?: string[]; properties: object }>;
    };
    const schema = plan.track["Order Completed"]!;
    assert.equal(schema.properties, { total: { type: "number" }, currency: { type: "string" }, coupon: { type: "string" } });
    assert.equal(schema.required, ["currency", "total"], "coupon came on half the orders: not required");
    assert.is(await apply(plan), 1);

    const bad = order("12.50");
    const mystery = { type: "track", event: "Mystery", userId: "u1", messageId: randomUUID() };
    assert.is((await stack.post("/v1/batch", { batch: [bad, mystery] }, headers)).status, 200);
    const rows = await stack.rowsLanded<{ message_id: string; violations: string[] }>([bad.messageId, mystery.messageId]);
    const byId = Object.fromEntries(rows.map((r) => [r.message_id, r.violations.map((v) => JSON.parse(v) as Record<string, string>)]));
    assert.equal(
      byId[bad.messageId]!.map((v) => [v.path, v.keyword]),
      [["/properties/total", "type"]],
    );
    assert.equal(
      byId[mystery.messageId]!.map((v) => [v.path, v.keyword]),
      [["/event", "unplanned"]],
    );
    const admin = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    assert.match(metrics, /ingest_plan_messages_total\{outcome="flag"\} 2/);
    assert.not.match(metrics, /ingest_plan_messages_total\{[^}]*workspace/);
    const items = await waitFor("the live view's flagged event", async () => {
      const answer = await fetch(`${admin}/live/recent?workspaceId=ws1&event=Order%20Completed&limit=100`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      const { items } = (await answer.json()) as { items: { messageId: string; message: { violations?: { path: string }[] } }[] };
      return items.find((i) => i.messageId === bad.messageId);
    });
    assert.is(items.message.violations?.[0]?.path, "/properties/total");
  },
);

live(
  "block refuses the violating items into rejected_messages naming the path; the valid ones beside them land; unplanned events blocked",
  async () => {
    assert.is(
      await apply({
        unplanned: "block",
        violations: "block",
        track: { "Order Completed": { type: "object", properties: { total: { type: "number" } }, required: ["total"] } },
      }),
      2,
    );
    const good = order(5);
    const bad = order("five");
    const unplanned = { type: "track", event: "Mystery", userId: "u1", messageId: randomUUID() };
    const answer = await stack.post("/v1/batch", { batch: [good, bad, unplanned] }, headers);
    assert.is(answer.status, 200);
    assert.is(answer.headers.get("x-rejected-messages"), "2");
    await stack.rowsLanded([good.messageId]);
    const refused = await waitFor("two refused items", async () => {
      const rows = await stack.select<{ message_id: string; reasons: string[] }>(
        `SELECT message_id, reasons FROM ${stack.database}.rejected_messages FINAL WHERE message_id IN (${sqlList([bad.messageId, unplanned.messageId])})`,
      );
      return rows.length === 2 ? rows : undefined;
    });
    const reasons = Object.fromEntries(refused.map((r) => [r.message_id, r.reasons]));
    assert.match(reasons[bad.messageId]![0]!, /^\/properties\/total: .*\(tracking plan v2\)$/);
    assert.match(reasons[unplanned.messageId]![0]!, /^\/event: is not in the plan/);
    assert.equal(await stack.finalRows([bad.messageId, unplanned.messageId]), [], "neither stored");
  },
);

live("omit stores the event without its unplanned properties and says so; allow lets an unplanned event through", async () => {
  assert.is(
    await apply({
      unplanned: "allow",
      violations: "omit",
      track: { "Order Completed": { type: "object", properties: { total: { type: "number" }, currency: { type: "string" } } } },
    }),
    3,
  );
  const trimmed = order(7, { debug: true });
  const other = { type: "track", event: "Mystery", userId: "u1", messageId: randomUUID() };
  assert.is((await stack.post("/v1/batch", { batch: [trimmed, other] }, headers)).status, 200);
  const rows = await stack.rowsLanded<{ message_id: string; properties: string; violations: string[] }>([
    trimmed.messageId,
    other.messageId,
  ]);
  const row = rows.find((r) => r.message_id === trimmed.messageId)!;
  assert.equal(JSON.parse(row.properties), { total: 7, currency: "EUR" });
  assert.equal(
    row.violations.map((v) => (JSON.parse(v) as { path: string; keyword: string }).path),
    ["/properties/debug"],
  );
  assert.equal(rows.find((r) => r.message_id === other.messageId)!.violations, [], "allowed: no violation");
});

live("plans check reports how stored events fare against a plan before it is applied; show and diff", async () => {
  const strict = `${scratch}-strict.json`;
  writeFileSync(
    strict,
    JSON.stringify({
      unplanned: "block",
      violations: "block",
      track: { "Order Completed": { type: "object", properties: { coupon: { type: "string" } }, required: ["coupon"] } },
    }),
  );
  const checked = await cli([
    "plans",
    "check",
    "ws1",
    "--from",
    started,
    "--to",
    new Date(Date.now() + 2_000).toISOString(),
    "--plan",
    strict,
  ]);
  assert.is(checked.code, 1, checked.output);
  const [, total, counts] = /(\d+) messages checked: (.*)/.exec(checked.output) ?? [];
  const stored = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} FINAL WHERE workspace_id = 'ws1'`);
  assert.is(Number(total), Number(stored[0]!.n), "every stored message of the range, once");
  assert.match(counts!, /\d+ block/);
  assert.match(checked.output, /\/properties\/coupon required/);
  const shown = await cli(["plans", "show", "ws1"]);
  assert.match(shown.output, /"version": 3/);
  const diff = await cli(["plans", "diff", "ws1", strict]);
  assert.match(diff.output, /unplanned: allow -> block\nviolations: omit -> block\n~ track "Order Completed"/);
  const broken = `${scratch}-broken.json`;
  writeFileSync(
    broken,
    JSON.stringify({ unplanned: "flag", violations: "flag", track: { A: { type: "object", properties: { n: { type: "numbr" } } } } }),
  );
  const refused = await cli(["plans", "apply", "ws1", broken]);
  assert.is(refused.code, 2);
  assert.match(refused.output, /\/track\/A\/properties\/n\/type/);
  assert.match((await cli(["plans", "show", "ws1"])).output, /"version": 3/, "nothing applied");
});

live("the violations queries of docs/QUERIES.md on 18.16 (live) and current ClickHouse (chdb)", async () => {
  const queries = planQueries();
  assert.equal(
    queries.map((q) => q.name.split(",")[0]),
    ["plan: violations per event per day", "plan: most frequent violations"],
  );
  const check = (results: Record<string, unknown>[][], where: string) => {
    const perEvent = results[0]!.filter((r) => r.what === "Order Completed");
    assert.ok(perEvent.length >= 1 && Number(perEvent[0]!.flagged) >= 1, `${where}: violations of Order Completed counted`);
    const paths = results[1]!.map((r) => `${String(r.path)} ${String(r.keyword)}`);
    assert.ok(paths.includes("/properties/total type"), `${where}: ${paths.join(", ")}`);
  };
  check(await Promise.all(queries.map((q) => stack.select<Record<string, unknown>>(q.sql))), "18.16");

  const chdb = new Chdb();
  try {
    await chdb.start();
    await migrate(chdb, { url: "", username: "", password: "", database: "plans", table: "events" });
    const now = new Date().toISOString();
    const messages = [order("x"), order(1), { type: "track", event: "Mystery", userId: "u1", messageId: randomUUID() }] as Message[];
    const violations = [
      violationTexts([{ path: "/properties/total", keyword: "type", message: "must be number" }]),
      undefined,
      violationTexts([{ path: "/event", keyword: "unplanned", message: "is not in the plan" }]),
    ];
    const built = buildRecords(messages, {}, { workspaceId: "ws1", receivedAt: now }, 32_768, undefined, undefined, violations);
    await chdb.command(
      `INSERT INTO plans.events SETTINGS date_time_input_format = 'best_effort' FORMAT JSONEachRow\n${built.records.map((r) => r.value).join("\n")}`,
    );
    await chdb.command("USE plans");
    check(await Promise.all(queries.map((q) => chdb.rows<Record<string, unknown>>(q.sql))), "chdb");
  } finally {
    await chdb.close();
  }
});

live.run();
