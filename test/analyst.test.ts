/**
 * The analyst model: the per-type views, `users`, and the README's example queries give
 * deduplicated answers, on the local ClickHouse 18.16 (live, through the whole pipeline) and on
 * current ClickHouse (chdb-core in-process, with the current-dialect DDL and rows built by the
 * same code the pipeline runs).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { buildRecords } from "../ingest/envelope";
import { tableDdl, viewsDdl } from "../schemas/clickhouse";
import type { Message } from "../schemas/messages";
import type { EventRow } from "../schemas/row";
import { decode } from "../sink/decode";
import { basic, LiveStack } from "./harness";

const root = join(__dirname, "..", "..");

/** The README's ```sql blocks, named by their first-line comment. */
const readmeQueries: { name: string; sql: string }[] = [
  ...readFileSync(join(root, "README.md"), "utf8").matchAll(/```sql\n([\s\S]*?)```/g),
].map((m) => ({ name: m[1]!.split("\n")[0]!.replace(/^--\s*/, ""), sql: m[1]!.trim() }));

/** Two days of one workspace: user 1043 identifies twice, shops; an anonymous visitor and user 2000. */
const dataset: Message[] = [
  {
    type: "identify",
    messageId: "an-1",
    userId: "1043",
    traits: { plan: "free", email: "old@x.test" },
    timestamp: "2026-11-20T09:00:00.100Z",
  },
  {
    type: "track",
    messageId: "an-2",
    userId: "1043",
    event: "Added to cart",
    properties: { sku: "a" },
    timestamp: "2026-11-20T09:05:00.200Z",
  },
  {
    type: "identify",
    messageId: "an-3",
    userId: "1043",
    traits: { plan: "pro", email: "john@email.com" },
    timestamp: "2026-11-21T10:00:00.300Z",
  },
  {
    type: "track",
    messageId: "an-4",
    userId: "1043",
    event: "Added to cart",
    properties: { sku: "b" },
    timestamp: "2026-11-21T10:01:00.400Z",
  },
  {
    type: "track",
    messageId: "an-5",
    userId: "1043",
    event: "Order Completed",
    properties: { total: 30 },
    timestamp: "2026-11-21T10:02:00.500Z",
  },
  {
    type: "page",
    messageId: "an-6",
    anonymousId: "anon-7",
    name: "Pricing",
    properties: { path: "/pricing" },
    timestamp: "2026-11-21T11:00:00.000Z",
  },
  {
    type: "track",
    messageId: "an-7",
    userId: "2000",
    event: "Added to cart",
    properties: { sku: "c" },
    timestamp: "2026-11-21T12:00:00.000Z",
  },
];
/** A retry of an-5: same messageId, sent again. */
const retry = dataset[4]!;

/** What the README queries must answer for the dataset, in README order. */
function checkReadmeResults(results: Record<string, string | number>[][], where: string): void {
  const byName = Object.fromEntries(readmeQueries.map((q, i) => [q.name, results[i]!]));
  assert.equal(Object.keys(byName), ["daily active users", "top events", "a user's latest traits", "one user's timeline"], where);
  const dau = byName["daily active users"]!.map((r) => [String(r.day), Number(r.active_users)]);
  assert.equal(
    dau,
    [
      ["2026-11-20", 1],
      ["2026-11-21", 3],
    ],
    `${where}: daily active users`,
  );
  const top = byName["top events"]!.map((r) => [r.event, Number(r.times), Number(r.users)]);
  assert.equal(
    top,
    [
      ["Added to cart", 3, 2],
      ["Order Completed", 1, 1],
    ],
    `${where}: top events (the retry counted once)`,
  );
  const [latest] = byName["a user's latest traits"]!;
  assert.equal(JSON.parse(String(latest!.traits)), { plan: "pro", email: "john@email.com" }, `${where}: latest traits`);
  assert.is(latest!.email, "john@email.com");
  const timeline = byName["one user's timeline"]!.map((r) => `${r.type}:${r.event}`);
  assert.equal(
    timeline,
    ["identify:", "track:Added to cart", "identify:", "track:Added to cart", "track:Order Completed"],
    `${where}: timeline`,
  );
}

/** Row counts of every view, for the dataset. */
const VIEW_COUNTS = `SELECT
  (SELECT count() FROM identifies WHERE workspace_id = 'ws1') AS i,
  (SELECT count() FROM tracks WHERE workspace_id = 'ws1') AS t,
  (SELECT count() FROM pages WHERE workspace_id = 'ws1') AS p,
  (SELECT count() FROM users WHERE workspace_id = 'ws1') AS u`;
function checkViewCounts(row: Record<string, string | number> | undefined, where: string): void {
  assert.equal(
    [Number(row!.i), Number(row!.t), Number(row!.p), Number(row!.u)],
    [2, 4, 1, 1],
    `${where}: identifies, tracks, pages, users`,
  );
}

const stack = new LiveStack({ WRITE_KEYS: "analyst-key=ws1" });
const analyst = suite("analyst model");

analyst.before(() => stack.start());
analyst.after(() => stack.stop());

analyst("the README has the four example queries", () => {
  assert.is(readmeQueries.length, 4);
});

analyst("ClickHouse 18.16, live: views and README queries answer deduplicated", async () => {
  const headers = { authorization: basic("analyst-key") };
  assert.is((await stack.post("/v1/batch", { batch: dataset }, headers)).status, 200);
  await stack.rowsLanded(dataset.map((m) => m.messageId));
  assert.is((await stack.post("/v1/batch", { batch: [retry] }, headers)).status, 200);
  await stack.marker();
  const raw = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} WHERE message_id = 'an-5'`);
  assert.ok(Number(raw[0]!.n) >= 1);
  const results = [];
  for (const q of readmeQueries) results.push(await stack.select<Record<string, string | number>>(q.sql));
  checkReadmeResults(results, "18.16");
  checkViewCounts((await stack.select<Record<string, string>>(VIEW_COUNTS))[0], "18.16");
  const [page] = await stack.select<{ name: string; path: string; anonymous_id: string }>(
    "SELECT name, path, anonymous_id FROM pages WHERE workspace_id = 'ws1'",
  );
  assert.equal(page, { name: "Pricing", path: "/pricing", anonymous_id: "anon-7" });
});

analyst("current ClickHouse (chdb): the current-dialect DDL, views and README queries", () => {
  const receipt = { workspaceId: "ws1", receivedAt: "2026-11-22T00:00:00.000Z" };
  const toRows = (messages: Message[]): EventRow[] => {
    const built = buildRecords(messages, {}, receipt, 32 * 1024);
    if (!built.ok) throw new Error("dataset message too large");
    return built.records.map((r) => {
      const d = decode(Buffer.from(r.value));
      if (!d.ok) throw new Error(d.reason);
      return d.row;
    });
  };
  const job = {
    database: "analyst",
    ddl: [...tableDdl("current", "analyst", "events"), ...viewsDdl("current", "analyst", "events")],
    inserts: [toRows(dataset), toRows([retry])],
    queries: [
      ...readmeQueries.map((q) => q.sql),
      VIEW_COUNTS,
      "SELECT timestamp, toTypeName(timestamp) AS t, toTypeName(workspace_id) AS lc FROM tracks WHERE message_id = 'an-5'",
    ],
  };
  const run = spawnSync("python3", [join(root, "test", "chdb_run.py")], { input: JSON.stringify(job), encoding: "utf8", timeout: 120_000 });
  assert.is(run.status, 0, run.stderr);
  const { version, results } = JSON.parse(run.stdout) as { version: string; results: Record<string, string | number>[][] };
  assert.ok(Number(version.split(".")[0]) >= 23, `current ClickHouse, got ${version}`);
  checkReadmeResults(results.slice(0, readmeQueries.length), `chdb ${version}`);
  checkViewCounts(results[readmeQueries.length]![0], `chdb ${version}`);
  const [typed] = results[readmeQueries.length + 1]!;
  assert.equal(
    typed,
    { timestamp: "2026-11-21 10:02:00.500", t: "DateTime64(3, 'UTC')", lc: "LowCardinality(String)" },
    "milliseconds kept",
  );
});

analyst.run();
