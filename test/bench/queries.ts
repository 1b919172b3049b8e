/**
 * `npm run bench:queries`: times the README's example queries on the events layout of the
 * previous release (no partitions, ORDER BY workspace_id, message_id) and on the current one
 * (time-ordered, with `users` and `identities`), on ClickHouse 18.16 (the local server) and on
 * current ClickHouse (chdb), over QUERY_BENCH_ROWS generated events (default 20,000,000).
 * Prints a table, then one JSON line. A refused statement or a lost server ends it non-zero after
 * a best-effort drop of the scratch databases; old and new answers that differ are notes only.
 */
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dialectFor, quoteIdent, quoteString, unpartitionedEventsTableDdl } from "../../schemas/clickhouse";
import { EVENT_ROW_COLUMNS } from "../../schemas/row";
import { clientSql, migrate, serverVersion, type Sql } from "../../sink/migrate";
import { Chdb } from "../chdb";

const OLD_DB = "bench_queries_old";
const NEW_DB = "bench_queries_new";
const DAY = 86_400;

/** Settings read once from the environment. */
interface BenchConfig {
  rows: number;
  url: string;
  username: string;
  password: string;
}

function benchConfig(env: NodeJS.ProcessEnv): BenchConfig {
  const rows = Number(env.QUERY_BENCH_ROWS ?? 20_000_000);
  if (!Number.isInteger(rows) || rows < 1000) throw new Error(`QUERY_BENCH_ROWS must be an integer >= 1000, not ${env.QUERY_BENCH_ROWS}`);
  return {
    rows,
    url: env.CLICKHOUSE_URL ?? "http://127.0.0.1:8123",
    username: env.CLICKHOUSE_USER ?? "default",
    password: env.CLICKHOUSE_PASSWORD ?? "",
  };
}

/** The README's ```sql blocks (the same regex as test/analyst.test.ts), named by their first line. */
function readmeQueries(): { name: string; sql: string }[] {
  const readme = readFileSync(join(__dirname, "..", "..", "..", "README.md"), "utf8");
  return [...readme.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => ({ name: m[1]!.split("\n")[0]!.replace(/^--\s*/, ""), sql: m[1]!.trim() }));
}

/**
 * Each README question as the previous release asked it: on `events FINAL` of the unpartitioned
 * table, days from `toDate(timestamp)`, traits from identify rows (its `users` view was
 * argMax(traits, timestamp) over them, grouped by user), identities from identify and alias rows.
 * The user filter sits inside the subqueries, where current ClickHouse pushes a view's WHERE:
 * the old layout's best case.
 */
const OLD_QUERIES: Record<string, string> = {
  "daily active users, last 7 days": `SELECT toDate(timestamp) AS day, uniqExact(if(user_id != '', user_id, anonymous_id)) AS active_users
FROM events FINAL
WHERE workspace_id = 'ws1' AND toDate(timestamp) >= today() - 6
GROUP BY day
ORDER BY day`,
  "top events, since yesterday": `SELECT event, count() AS times, uniqExact(user_id) AS users
FROM events FINAL
WHERE workspace_id = 'ws1' AND toDate(timestamp) >= today() - 1 AND type = 'track'
GROUP BY event
ORDER BY times DESC, event
LIMIT 10`,
  "user_traits: one user's latest traits": `SELECT user_id, traits, visitParamExtractString(traits, 'email') AS email, first_seen, last_seen, events
FROM (
  SELECT user_id, argMax(traits, timestamp) AS traits
  FROM events FINAL
  WHERE workspace_id = 'ws1' AND user_id = '1043' AND type = 'identify'
  GROUP BY user_id
) AS identified ANY INNER JOIN (
  SELECT user_id, min(timestamp) AS first_seen, max(timestamp) AS last_seen, count() AS events
  FROM events FINAL
  WHERE workspace_id = 'ws1' AND user_id = '1043'
  GROUP BY user_id
) AS seen USING user_id`,
  "one user's timeline, last 7 days": `SELECT timestamp, type, event, name
FROM events FINAL
WHERE workspace_id = 'ws1' AND toDate(timestamp) >= today() - 6 AND user_id = '1043'
ORDER BY timestamp, message_id`,
  "funnel: viewed, added to cart, ordered within a day, last 7 days": `SELECT countIf(level >= 1) AS viewed, countIf(level >= 2) AS added, countIf(level >= 3) AS ordered
FROM (
  SELECT if(user_id != '', user_id, anonymous_id) AS person,
    windowFunnel(86400)(toDateTime(timestamp), event = 'Product Viewed', event = 'Added to cart', event = 'Order Completed') AS level
  FROM events FINAL
  WHERE workspace_id = 'ws1' AND toDate(timestamp) >= today() - 6 AND type = 'track'
  GROUP BY person
)`,
  "7-day retention: of the people active 7 days ago, how many came back on each day since": `SELECT sum(r[1]) AS day_0, sum(r[2]) AS day_1, sum(r[3]) AS day_2, sum(r[4]) AS day_3,
  sum(r[5]) AS day_4, sum(r[6]) AS day_5, sum(r[7]) AS day_6, sum(r[8]) AS day_7
FROM (
  SELECT if(user_id != '', user_id, anonymous_id) AS person,
    retention(toDate(timestamp) = today() - 7, toDate(timestamp) = today() - 6, toDate(timestamp) = today() - 5,
      toDate(timestamp) = today() - 4, toDate(timestamp) = today() - 3, toDate(timestamp) = today() - 2,
      toDate(timestamp) = today() - 1, toDate(timestamp) = today()) AS r
  FROM events FINAL
  WHERE workspace_id = 'ws1' AND toDate(timestamp) >= today() - 7
  GROUP BY person
)`,
  "people, not devices: active in the last 7 days, a device counted as its user once linked": `SELECT uniqExact(if(user_id != '', user_id, if(linked_user != '', linked_user, anonymous_id))) AS people
FROM (
  SELECT user_id, anonymous_id FROM events FINAL
  WHERE workspace_id = 'ws1' AND toDate(timestamp) >= today() - 6
) AS active
ANY LEFT JOIN (
  SELECT device AS anonymous_id, argMin(user_id, linked_at) AS linked_user
  FROM (
    SELECT if(type = 'alias', previous_id, anonymous_id) AS device, user_id, min(timestamp) AS linked_at
    FROM events FINAL
    WHERE workspace_id = 'ws1' AND user_id != '' AND ((type = 'identify' AND anonymous_id != '') OR (type = 'alias' AND previous_id != ''))
    GROUP BY device, user_id
  )
  GROUP BY anonymous_id
) AS linked USING anonymous_id`,
};

/** The shape of the generated data; every figure derives from `rows`. */
interface Plan {
  rows: number;
  /** Rows per INSERT, a multiple of 100 (the retry rule below needs it). */
  block: number;
  users: number;
  /** The newest timestamp, epoch seconds. */
  end: number;
}

function plan(rows: number): Plan {
  const block = Math.min(1_000_000, Math.ceil(rows / 4 / 100) * 100);
  return { rows, block, users: Math.min(200_000, Math.max(2000, Math.floor(rows / 100))), end: Math.floor(Date.now() / 1000) };
}

const list = (items: readonly string[], index: string) => `[${items.map(quoteString).join(", ")}][1 + ${index} % ${items.length}]`;
const OTHER_EVENTS = ["Signed Up", "Signed In", "Signed Out", "Products Searched", "Product List Viewed", "Product Clicked", "Product Shared"]
  .concat(["Cart Viewed", "Removed from cart", "Checkout Started", "Checkout Step Viewed", "Payment Info Entered", "Coupon Applied"])
  .concat(["Coupon Denied", "Order Refunded", "Promotion Viewed", "Promotion Clicked", "Wishlist Product Added", "Review Submitted"])
  .concat(["Video Playback Started"]);
const PAGES = ["Home", "Pricing", "Product", "Category", "Search", "Cart", "Checkout", "Blog", "Docs", "About"];
const SCREENS = ["Home", "Product", "Cart", "Checkout", "Settings", "Profile"];
const CATEGORIES = ["Games", "Books", "Garden", "Kitchen", "Toys", "Music"];
const AGENTS = [
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
];

/**
 * One INSERT ... SELECT of rows [from, from + count) (functions of both 18.16 and current). Row n
 * is message k = n, except every hundredth row of the second block on: a retry of message
 * n - block - 1, from the previous INSERT (one INSERT collapses its own retries on current
 * ClickHouse, optimize_on_insert), with the same timestamps and a later received_at.
 */
function insertSql(database: string, p: Plan, from: number, count: number): string {
  const device = (owner: string, d: string) => `UUIDNumToString(sipHash128(concat('d', toString(${owner}), '.', toString(${d}))))`;
  const cents = "(100 + x * 37 % 20000)";
  const price = `concat(toString(intDiv(${cents}, 100)), '.', toString(intDiv(${cents} % 100, 10)), toString(${cents} % 10))`;
  const page = list(PAGES, "x");
  const columns: Record<(typeof EVENT_ROW_COLUMNS)[number], string> = {
    workspace_id: "'ws1'",
    message_id: "UUIDNumToString(sipHash128(concat('m', toString(k))))",
    type: "kind",
    event: `if(kind = 'track', multiIf(x < 200, 'Product Viewed', x < 280, 'Added to cart', x < 310, 'Order Completed', ${list(OTHER_EVENTS, "x")}), '')`,
    name: `multiIf(kind = 'page', ${page}, kind = 'screen', ${list(SCREENS, "x")}, '')`,
    category: `if(kind = 'page', if(x % 3 = 0, 'Docs', 'Shop'), '')`,
    user_id: "if(anon, '', toString(uix))",
    anonymous_id: device("owner", "dev"),
    group_id: "if(kind = 'group', concat('g', toString(uix % 5000)), '')",
    previous_id: `if(kind = 'alias', ${device("uix", "dev")}, '')`,
    timestamp: "toDateTime(ts)",
    original_timestamp: "if(clockless, NULL, toDateTime(ts))",
    sent_at: "if(clockless, NULL, toDateTime(ts))",
    received_at: `toDateTime(ts + if(clockless, 0, 1 + cityHash64(k, 8) % 4) + if(retry, 60 + n % 3600, 0))`,
    properties: `multiIf(
      kind = 'track', concat('{"product_id":"p', toString(x), '","sku":"SKU-', toString(x * 7), '","name":"Product ', toString(x), '","price":', ${price}, ',"currency":"USD","quantity":', toString(1 + x % 4), ',"category":"', ${list(CATEGORIES, "x")}, '"}'),
      kind = 'page', concat('{"path":"/', lower(${page}), '/', toString(x), '","url":"https://shop.example.com/', lower(${page}), '/', toString(x), '","title":"', ${page}, ' | Shop","referrer":"https://www.google.com/search?q=', toString(x), '","search":""}'),
      kind = 'screen', concat('{"screen_id":"s', toString(x), '","orientation":"portrait","build":"', toString(100 + x % 7), '"}'),
      '{}')`,
    traits: `multiIf(
      kind = 'identify', concat('{"email":"user', toString(uix), '@example.com","name":"User ', toString(uix), '","plan":"', ${list(["free", "pro", "team"], "cityHash64(k, 10)")}, '","company":"Company ', toString(uix % 5000), '","logins":', toString(k % 1000), ',"createdAt":"2025-0', toString(1 + uix % 9), '-15T10:00:00.000Z"}'),
      kind = 'group', concat('{"name":"Company ', toString(uix % 5000), '","industry":"', ${list(["Retail", "Software", "Finance", "Health"], "uix")}, '","employees":', toString(10 + uix % 990), ',"plan":"enterprise"}'),
      '{}')`,
    context: `concat('{"ip":"10.', toString(owner % 256), '.', toString(intDiv(owner, 256) % 256), '.', toString(dev), '","userAgent":"', ${list(AGENTS, "(owner + dev)")}, '","library":{"name":"analytics.js","version":"1.84.3"},"locale":"en-US","timezone":"Europe/Berlin"}')`,
    extra: `'{"channel":"client","integrations":{}}'`,
  };
  // 60% track, 25% page, 8% identify, 4% screen, 2% group, 1% alias; ~25% of rows anonymous
  // (track, page and screen only); the first 8 messages are identifies of user 1043.
  return `INSERT INTO ${quoteIdent(database)}.events (${EVENT_ROW_COLUMNS.join(", ")})
SELECT ${EVENT_ROW_COLUMNS.map((c) => `${columns[c]} AS ${c}`).join(",\n  ")}
FROM (
  SELECT n, k, retry,
    if(k < 8, 'identify', multiIf(cityHash64(k, 1) % 100 < 60, 'track', cityHash64(k, 1) % 100 < 85, 'page',
      cityHash64(k, 1) % 100 < 93, 'identify', cityHash64(k, 1) % 100 < 97, 'screen', cityHash64(k, 1) % 100 < 99, 'group', 'alias')) AS kind,
    if(k < 8, 1043, cityHash64(k, 2) % ${p.users}) AS uix,
    cityHash64(k, 3) % 3 AS dev,
    kind IN ('track', 'page', 'screen') AND cityHash64(k, 4) % 1000 < 281 AS anon,
    if(anon, cityHash64(k, 5) % ${p.users * 2}, uix) AS owner,
    ${p.end} - cityHash64(k, 6) % ${60 * DAY} AS ts,
    cityHash64(k, 7) % 50 = 0 AS clockless,
    cityHash64(k, 9) % 1000 AS x
  FROM (
    SELECT number AS n, if(number % 100 = 99 AND number >= ${p.block}, toUInt64(number - ${p.block + 1}), number) AS k, k != n AS retry
    FROM numbers(${from}, ${count})
  )
)`;
}

/** One engine: `sql` for statements with qualified names, `use` for one whose default database is set. */
interface Engine {
  sql: Sql;
  use(database: string): Promise<Sql>;
  close(): Promise<void>;
}

function legacyEngine(c: BenchConfig): Engine {
  const clients = new Map<string, ClickHouseClient>();
  const open = (database: string) => {
    // Progress headers every 10 s keep an hour-long INSERT's connection from looking idle.
    const settings = { send_progress_in_http_headers: 1, http_headers_progress_interval_ms: "10000" } as const;
    const client =
      clients.get(database) ??
      createClient({ url: c.url, username: c.username, password: c.password, database, request_timeout: 3_600_000, clickhouse_settings: settings });
    clients.set(database, client);
    return clientSql(client);
  };
  const close = async () => {
    await Promise.all([...clients.values()].map((client) => client.close()));
  };
  return { sql: open("default"), use: async (database) => open(database), close };
}

/** chdb with a data directory under os.tmpdir(), removed on close. */
async function currentEngine(): Promise<Engine> {
  const dir = mkdtempSync(join(tmpdir(), "bench-queries-"));
  const chdb = new Chdb(dir);
  const close = async () => {
    await chdb.close();
    rmSync(dir, { recursive: true, force: true });
  };
  await chdb.start().catch(async (error: unknown) => {
    await close();
    throw error;
  });
  const use = async (database: string) => {
    await chdb.command(`USE ${quoteIdent(database)}`);
    return chdb;
  };
  return { sql: chdb, use, close };
}

interface Timing {
  old_s: number;
  new_s: number;
}

/** Best wall time of two runs, in seconds, and the answer. */
async function timed(sql: Sql, query: string): Promise<{ seconds: number; rows: unknown[] }> {
  let seconds = Infinity;
  let rows: unknown[] = [];
  for (let run = 0; run < 2; run++) {
    const start = performance.now();
    rows = await sql.rows(query);
    seconds = Math.min(seconds, (performance.now() - start) / 1000);
  }
  return { seconds: Number(seconds.toFixed(3)), rows };
}

/** Waits until no merge runs in the scratch databases (at most 20 minutes), so none runs while timing. */
async function settle(sql: Sql): Promise<void> {
  const deadline = Date.now() + 20 * 60_000;
  const running = `SELECT count() AS n FROM system.merges WHERE database IN (${quoteString(OLD_DB)}, ${quoteString(NEW_DB)})`;
  while (Date.now() < deadline && Number((await sql.rows<{ n: string }>(running))[0]?.n ?? 0) > 0) await new Promise((r) => setTimeout(r, 1000));
}

async function dropScratch(sql: Sql): Promise<void> {
  for (const db of [OLD_DB, NEW_DB]) await sql.command(`DROP DATABASE IF EXISTS ${quoteIdent(db)}`);
}

/** Loads both layouts on one engine, times every query on each, drops them. Notes collect answer differences. */
async function benchEngine(label: string, engine: Engine, p: Plan, notes: string[]): Promise<Record<string, Timing>> {
  const { sql } = engine;
  const version = await serverVersion(sql);
  const dialect = dialectFor(version);
  const queries = readmeQueries().map((q) => {
    const old = OLD_QUERIES[q.name];
    if (old === undefined) throw new Error(`README query "${q.name}" has no old-layout variant in test/bench/queries.ts`);
    return { ...q, old };
  });
  try {
    await dropScratch(sql);
    await sql.command(`CREATE DATABASE ${quoteIdent(OLD_DB)}`);
    await sql.command(unpartitionedEventsTableDdl(dialect, OLD_DB, "events"));
    await migrate(sql, { url: "", username: "", password: "", database: NEW_DB, table: "events" });
    let start = performance.now();
    for (let from = 0; from < p.rows; from += p.block) {
      for (const db of [OLD_DB, NEW_DB]) await sql.command(insertSql(db, p, from, Math.min(p.block, p.rows - from)));
    }
    const loaded = (performance.now() - start) / 1000;
    start = performance.now();
    await settle(sql);
    const parts = await sql.rows<{ database: string; n: string }>(
      `SELECT database, count() AS n FROM system.parts WHERE active AND table = 'events' AND database IN (${quoteString(OLD_DB)}, ${quoteString(NEW_DB)}) GROUP BY database ORDER BY database`,
    );
    const partCounts = parts.map((r) => `${r.database === OLD_DB ? "old" : "new"} ${r.n}`).join(", ");
    console.log(`${label} ${version} (${dialect}): ${p.rows} rows into each layout in ${loaded.toFixed(0)} s, merges settled in ${((performance.now() - start) / 1000).toFixed(0)} s; active parts: ${partCounts}`);
    const timings: Record<string, Timing> = {};
    for (const q of queries) {
      const old = await timed(await engine.use(OLD_DB), q.old);
      const now = await timed(await engine.use(NEW_DB), q.sql);
      timings[q.name] = { old_s: old.seconds, new_s: now.seconds };
      if (JSON.stringify(old.rows) !== JSON.stringify(now.rows)) notes.push(`${label}, ${q.name}: old and new answers differ:\n  old ${brief(old.rows)}\n  new ${brief(now.rows)}`);
    }
    return timings;
  } finally {
    await dropScratch(sql).catch((error: unknown) => console.error(`${label}: dropping the scratch databases failed: ${String(error)}`));
  }
}

const brief = (rows: unknown[]) => `${rows.length} rows ${JSON.stringify(rows).slice(0, 400)}`;

function table(results: Record<"legacy" | "current", Record<string, Timing>>): string {
  const secs = (s: number | undefined) => (s === undefined ? "-" : `${s.toFixed(3)} s`);
  const speedup = (t: Timing | undefined) => (t === undefined || t.new_s <= 0 ? "-" : `${(t.old_s / t.new_s).toFixed(1)}x`);
  const rows = Object.keys(results.legacy).map((name) => {
    const [l, c] = [results.legacy[name], results.current[name]];
    return [name, secs(l?.old_s), secs(l?.new_s), secs(c?.old_s), secs(c?.new_s), `${speedup(l)} / ${speedup(c)}`];
  });
  const all = [["query", "legacy old", "legacy new", "current old", "current new", "speed-up (legacy / current)"], ...rows];
  const widths = all[0]!.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(" | ")} |`;
  return [line(all[0]!), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

async function main(): Promise<void> {
  const config = benchConfig(process.env);
  const p = plan(config.rows);
  const notes: string[] = [];
  const legacy = legacyEngine(config);
  const legacyTimings = await benchEngine("legacy", legacy, p, notes).finally(() => legacy.close());
  const current = await currentEngine();
  const currentTimings = await benchEngine("current", current, p, notes).finally(() => current.close());
  const results = { legacy: legacyTimings, current: currentTimings };
  console.log(table(results));
  if (notes.length > 0) {
    console.log(`notes (expected where the layouts differ in meaning, e.g. event_date vs toDate(timestamp) without original_timestamp):`);
    for (const note of notes) console.log(`- ${note}`);
  }
  console.log(JSON.stringify({ ...results, rows: config.rows }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
