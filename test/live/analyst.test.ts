/**
 * The analyst model, on the local ClickHouse 18.16 (live, through the whole pipeline) and on
 * current ClickHouse (chdb in-process, migrated by the same setup code, rows built by the same
 * code the pipeline runs): retries with different sentAt/receivedAt collapse; `users` holds the
 * latest traits by event time whatever order identifies arrive in; `identities` links
 * anonymousIds (identify) and previousIds (alias) to users; the per-type views and the queries of
 * docs/QUERIES.md give deduplicated answers. The dataset is dated relative to today, as those
 * queries are.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { buildRecords } from "../../ingest/records/build";
import type { Message } from "../../schemas/messages";
import type { EventRow } from "../../schemas/row";
import { decodeRow } from "../../sink/loop/decode";
import { migrate } from "../../deploy/setup/migrate";
import { type Sql } from "../../schemas/clickhouse/client";
import { Chdb } from "../support/chdb";
import { basic, LiveStack } from "../support/harness";
import { readmeQueries as readme } from "../support/queries-doc";

const readmeQueries = readme();

const DAY_MS = 86_400_000;
const todayMs = Date.parse(new Date().toISOString().slice(0, 10));
/** ISO time `daysAgo` days before today (UTC) at `time` (HH:MM:SS.mmm). */
const at = (daysAgo: number, time: string) => `${new Date(todayMs - daysAgo * DAY_MS).toISOString().slice(0, 10)}T${time}Z`;
const day = (daysAgo: number) => at(daysAgo, "00:00:00.000").slice(0, 10);

/**
 * One workspace over a week: user 1043 signs up 7 days ago, identifies yesterday and today (the
 * newer identify is sent first), views, adds to cart and orders; an anonymous visitor later
 * aliased to user 2000, who adds to cart.
 */
const newer: Message[] = [
  { type: "track", messageId: "an-0", userId: "1043", event: "Signed Up", timestamp: at(7, "12:00:00.000") },
  {
    type: "identify",
    messageId: "an-3",
    userId: "1043",
    anonymousId: "anon-1043",
    traits: { plan: "pro", email: "john@email.com" },
    timestamp: at(0, "00:00:00.300"),
  },
  { type: "track", messageId: "an-2", userId: "1043", event: "Product Viewed", timestamp: at(1, "23:04:00.000") },
  { type: "track", messageId: "an-2b", userId: "1043", event: "Added to cart", properties: { sku: "a" }, timestamp: at(1, "23:05:00.200") },
  { type: "track", messageId: "an-4", userId: "1043", event: "Added to cart", properties: { sku: "b" }, timestamp: at(0, "00:00:01.400") },
  {
    type: "track",
    messageId: "an-5",
    userId: "1043",
    event: "Order Completed",
    properties: { total: 30 },
    timestamp: at(0, "00:00:02.500"),
  },
  {
    type: "page",
    messageId: "an-6",
    anonymousId: "anon-7",
    name: "Pricing",
    properties: { path: "/pricing" },
    timestamp: at(0, "00:01:00.000"),
  },
  { type: "track", messageId: "an-7", userId: "2000", event: "Added to cart", properties: { sku: "c" }, timestamp: at(0, "00:02:00.000") },
  { type: "alias", messageId: "an-8", userId: "2000", previousId: "anon-7", timestamp: at(0, "00:03:00.000") },
];
/** The older identify, arriving after the newer one. */
const older: Message[] = [
  {
    type: "identify",
    messageId: "an-1",
    userId: "1043",
    anonymousId: "anon-1043",
    traits: { plan: "free", email: "old@x.test" },
    timestamp: at(1, "23:00:00.100"),
  },
];
/** an-5 again: same message, its client timestamp kept, another sentAt. */
const retried = newer[5]!;

/** What the queries of docs/QUERIES.md must answer for the dataset, by name. */
function checkReadmeResults(results: Record<string, unknown>[][], where: string): void {
  const byName = Object.fromEntries(readmeQueries.map((q, i) => [q.name, results[i]!]));
  const dau = byName["daily active users, last 7 days"]!.map((r) => [String(r.day), Number(r.active_users)]);
  assert.equal(
    dau,
    [
      [day(1), 1],
      [day(0), 3],
    ],
    `${where}: daily active users`,
  );
  const top = byName["top events, since yesterday"]!.map((r) => [r.event, Number(r.times), Number(r.users)]);
  assert.equal(
    top,
    [
      ["Added to cart", 3, 2],
      ["Order Completed", 1, 1],
      ["Product Viewed", 1, 1],
    ],
    `${where}: top events (the retry counted once)`,
  );
  const [user] = byName["user_traits: one user's latest traits"]!;
  assert.equal(JSON.parse(String(user!.traits)), { plan: "pro", email: "john@email.com" }, `${where}: latest traits by event time`);
  assert.is(user!.email, "john@email.com");
  assert.is(String(user!.first_seen).slice(0, 19), at(7, "12:00:00").replace("T", " ").slice(0, 19), `${where}: first seen`);
  assert.is(Number(user!.events), 7, `${where}: 7 messages of 1043, the retry counted once`);
  const timeline = byName["one user's timeline, last 7 days"]!.map((r) => `${r.type}:${r.event}`);
  assert.equal(
    timeline,
    ["identify:", "track:Product Viewed", "track:Added to cart", "identify:", "track:Added to cart", "track:Order Completed"],
    `${where}: timeline`,
  );
  const [funnel] = byName["funnel: viewed, added to cart, ordered within a day, last 7 days"]!;
  assert.equal([funnel!.viewed, funnel!.added, funnel!.ordered].map(Number), [1, 1, 1], `${where}: funnel`);
  const [retention] = byName["7-day retention: of the people active 7 days ago, how many came back on each day since"]!;
  assert.equal(
    Array.from({ length: 8 }, (_, i) => Number(retention![`day_${i}`])),
    [1, 0, 0, 0, 0, 0, 1, 1],
    `${where}: retention`,
  );
  const [people] = byName["people, not devices: active in the last 7 days, a device counted as its user once linked"]!;
  assert.is(Number(people!.people), 2, `${where}: anon-7 is user 2000, so two people`);
}

/** Counts of the views and tables, and the identities rows, for the dataset. */
const MODEL_QUERIES = [
  `SELECT
  (SELECT count() FROM identifies WHERE workspace_id = 'ws1') AS i,
  (SELECT count() FROM tracks WHERE workspace_id = 'ws1') AS t,
  (SELECT count() FROM pages WHERE workspace_id = 'ws1') AS p,
  (SELECT count() FROM aliases WHERE workspace_id = 'ws1') AS a,
  (SELECT uniqExact(user_id) FROM users WHERE workspace_id = 'ws1') AS u`,
  `SELECT anonymous_id, user_id, minMerge(first_linked_at) AS first_linked_at FROM identities
WHERE workspace_id = 'ws1' GROUP BY anonymous_id, user_id ORDER BY anonymous_id`,
  "SELECT count() AS n, uniqExact(event_date) AS days, min(event_date) AS day FROM events WHERE message_id = 'an-5'",
  "SELECT count() AS n FROM events FINAL WHERE message_id = 'an-5'",
];

function checkModel(results: Record<string, unknown>[][], where: string, time: (iso: string) => string): void {
  const [counts, identities, raw, final] = results;
  const c = counts![0]!;
  assert.equal([c.i, c.t, c.p, c.a, c.u].map(Number), [2, 6, 1, 1, 2], `${where}: identifies, tracks, pages, aliases, users`);
  assert.equal(
    identities!.map((r) => [r.anonymous_id, r.user_id, r.first_linked_at]),
    [
      ["anon-1043", "1043", time(older[0]!.timestamp!)],
      ["anon-7", "2000", time(newer[8]!.timestamp!)],
    ],
    `${where}: identify and alias link ids to users`,
  );
  // Two attempts with different sentAt/receivedAt pairs share event_date (the client's day), so
  // the sorting key and partition: FINAL returns one row.
  assert.equal([Number(raw![0]!.days), String(raw![0]!.day)], [1, day(0)], `${where}: one event_date for every attempt`);
  assert.is(Number(final![0]!.n), 1, `${where}: the retry collapses under FINAL`);
}

const stack = new LiveStack({ WRITE_KEYS: "analyst-key=ws1" });
const analyst = suite("analyst model");

analyst.before(() => stack.start());
analyst.after(() => stack.stop());

analyst("the README has its example queries", () => {
  assert.equal(
    readmeQueries.map((q) => q.name.split(/[,:]/)[0]),
    ["daily active users", "top events", "user_traits", "one user's timeline", "funnel", "7-day retention", "people"],
  );
});

analyst("ClickHouse 18.16, live: retries collapse, users and identities, views and README queries", async () => {
  const headers = { authorization: basic("analyst-key") };
  assert.is((await stack.post("/v1/batch", { batch: newer }, headers)).status, 200);
  assert.is((await stack.post("/v1/batch", { batch: older }, headers)).status, 200);
  await stack.rowsLanded([...newer, ...older].map((m) => m.messageId));
  // The retry: sent again a second before now, so its sentAt/receivedAt pair differs from the first
  // attempt's (which had none) and its skew-corrected timestamp differs too; the client's timestamp is kept.
  const retrySentAt = new Date(Date.now() - 1000).toISOString();
  assert.is((await stack.post("/v1/batch", { batch: [retried], sentAt: retrySentAt }, headers)).status, 200);
  await stack.marker();
  const [times] = await stack.select<{ n: string; stamps: string }>(
    `SELECT count() AS n, uniqExact(timestamp) AS stamps FROM ${stack.table} WHERE message_id = 'an-5'`,
  );
  if (Number(times!.n) === 2) assert.is(Number(times!.stamps), 2, "the attempts' skew-corrected timestamps differ");
  const results = [];
  for (const q of readmeQueries) results.push(await stack.select<Record<string, unknown>>(q.sql));
  checkReadmeResults(results, "18.16");
  const model = [];
  for (const q of MODEL_QUERIES) model.push(await stack.select<Record<string, unknown>>(q));
  checkModel(model, "18.16", (iso) => iso.slice(0, 19).replace("T", " "));
  const [page] = await stack.select<{ name: string; path: string; anonymous_id: string }>(
    "SELECT name, path, anonymous_id FROM pages WHERE workspace_id = 'ws1'",
  );
  assert.equal(page, { name: "Pricing", path: "/pricing", anonymous_id: "anon-7" });
});

/** Rows as the sink would insert them for messages received at `receivedAt` in a batch sent at `sentAt`. */
function toRows(messages: Message[], receivedAt: string, sentAt?: string): EventRow[] {
  const built = buildRecords(messages, sentAt === undefined ? {} : { sentAt }, { workspaceId: "ws1", receivedAt }, 32 * 1024);
  if (built.oversized.length > 0) throw new Error("dataset message too large");
  return built.records.map((r) => {
    const d = decodeRow(Buffer.from(r.value));
    if (!d.ok) throw new Error(d.reason);
    return d.row;
  });
}

async function insert(sql: Sql, database: string, rows: EventRow[]): Promise<void> {
  const lines = rows.map((r) => JSON.stringify(r)).join("\n");
  await sql.command(`INSERT INTO \`${database}\`.events SETTINGS date_time_input_format = 'best_effort' FORMAT JSONEachRow\n${lines}`);
}

analyst("current ClickHouse (chdb): retries days apart collapse, users and identities, views and README queries", async () => {
  const chdb = new Chdb();
  try {
    const version = await chdb.start();
    assert.ok(Number(version.split(".")[0]) >= 23, `current ClickHouse, got ${version}`);
    const config = { url: "", username: "", password: "", database: "analyst", table: "events" };
    assert.is((await migrate(chdb, config)).dialect, "current");
    const now = new Date().toISOString();
    await insert(chdb, "analyst", toRows(newer, now));
    await insert(chdb, "analyst", toRows(older, now));
    // Two more attempts of an-5, days apart: one with the first attempt's sentAt (a file-based SDK),
    // whose skew-corrected timestamp moves by two days, then one whose SDK re-stamps sentAt.
    const sent = Date.parse(retried.timestamp!) + 1000;
    await insert(chdb, "analyst", toRows([retried], new Date(sent + 2 * DAY_MS).toISOString(), new Date(sent).toISOString()));
    await insert(
      chdb,
      "analyst",
      toRows([retried], new Date(sent + 3 * DAY_MS + 800).toISOString(), new Date(sent + 3 * DAY_MS).toISOString()),
    );
    await chdb.command("USE analyst");
    const [spread] = await chdb.rows<{ n: number; days: number }>(
      "SELECT count() AS n, uniqExact(toDate(timestamp)) AS days FROM events WHERE message_id = 'an-5'",
    );
    assert.equal([Number(spread!.n), Number(spread!.days)], [3, 2], "three attempts stored; skew correction put one on another day");
    const results = [];
    for (const q of readmeQueries) results.push(await chdb.rows<Record<string, unknown>>(q.sql));
    const model = [];
    for (const q of MODEL_QUERIES) model.push(await chdb.rows<Record<string, unknown>>(q));
    checkModel(model, `chdb ${version}`, (iso) => iso.slice(0, 23).replace("T", " "));
    checkReadmeResults(results, `chdb ${version}`);
    const [typed] = await chdb.rows(
      "SELECT toTypeName(timestamp) AS t, toTypeName(workspace_id) AS lc, toTypeName(event_date) AS d FROM tracks WHERE message_id = 'an-4'",
    );
    assert.equal(typed, { t: "DateTime64(3, 'UTC')", lc: "LowCardinality(String)", d: "Date" });
  } finally {
    await chdb.close();
  }
});

analyst.run();
