/**
 * The sink's retention and merge steps (sink/upkeep/retention.ts) against a recording stand-in for
 * ClickHouse: which statements are issued for a given day, retention and server (version, one
 * server or a cluster), which months are dropped or merged and which are kept at the boundaries,
 * and what each step returns.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { Sql } from "../../../../schemas/clickhouse/client";
import { monthRow } from "../../../support/month-parts";
import type { ClickHouseConfig } from "../../../../schemas/config";
import {
  applyRetention,
  deleteAllExpired,
  deleteExpired,
  deleteExpiredRejected,
  dropExpiredPartitions,
  mergeClosedMonth,
} from "../../../../sink/upkeep/retention";

/** One statement sent: a query read for rows, or a command. */
interface Call {
  kind: "rows" | "command";
  query: string;
}

/**
 * An Sql that records every statement. A query is answered by the rows of the first route whose
 * pattern it matches (a query no route knows fails the test); a command matching `refuse` throws.
 */
function sqlStandIn(routes: [RegExp, Record<string, unknown>[] | Error][], refuse?: RegExp) {
  const calls: Call[] = [];
  const sql: Sql = {
    rows: async <T>(query: string) => {
      calls.push({ kind: "rows", query });
      const route = routes.find(([pattern]) => pattern.test(query));
      if (route === undefined) throw new Error(`no answer for: ${query}`);
      if (route[1] instanceof Error) throw route[1];
      return route[1] as T[];
    },
    command: async (query: string) => {
      calls.push({ kind: "command", query });
      if (refuse?.test(query)) throw new Error(`refused: ${query}`);
    },
  };
  const commands = () => calls.filter((c) => c.kind === "command").map((c) => c.query);
  const queries = () => calls.filter((c) => c.kind === "rows").map((c) => c.query);
  return { sql, calls, commands, queries };
}

const base: ClickHouseConfig = { url: "http://ch:8123", username: "default", password: "", database: "analytics", table: "events" };
const retained = (retentionDays: number, cluster?: string): ClickHouseConfig => ({
  ...base,
  retentionDays,
  ...(cluster === undefined ? {} : { cluster }),
});

const VERSION_QUERY = "SELECT version() AS version";
const version = (v: string): [RegExp, Record<string, unknown>[]] => [/^SELECT version\(\) AS version$/, [{ version: v }]];
const partitions = (...ids: string[]): [RegExp, Record<string, unknown>[]] => [
  /^SELECT DISTINCT partition_id AS id FROM /,
  ids.map((id) => ({ id })),
];
/** The expired-row count of `table` (through its Distributed table on a cluster), as JSONEachRow gives a UInt64. */
const expiredCount = (table: string, n: number): [RegExp, Record<string, unknown>[]] => [
  new RegExp(`^SELECT count\\(\\) AS n FROM \`analytics\`\\.\`${table}\` WHERE `),
  [{ n: String(n) }],
];
/** Expiry deletions of `table` under way or begun in the last day. */
const recentDeletions = (table: string, n: number): [RegExp, Record<string, unknown>[]] => [
  new RegExp(`FROM system\\.mutations\\nWHERE database = 'analytics' AND table = '${table}'\\n`),
  [{ n: String(n) }],
];

/** Epoch seconds of 2026-03-01T00:00:00Z: the first day kept on 2026-03-30 with 30 days of retention. */
const MARCH_1 = 1_772_323_200;

test("dropExpiredPartitions: without RETENTION_DAYS nothing is dropped and ClickHouse is not asked", async () => {
  const { sql, calls } = sqlStandIn([]);
  assert.equal(await dropExpiredPartitions(sql, base, "2026-03-30"), []);
  assert.equal(calls, []);
});

test("dropExpiredPartitions: the months wholly before the first day kept are dropped in the order listed, that day's month stays", async () => {
  // 30 days on 2026-03-15: 2026-02-14 is the first day kept.
  const { sql, calls } = sqlStandIn([partitions("202511", "202512", "202601", "202602", "202603")]);
  assert.equal(await dropExpiredPartitions(sql, retained(30), "2026-03-15"), ["202511", "202512", "202601"]);
  assert.equal(calls, [
    {
      kind: "rows",
      query:
        "SELECT DISTINCT partition_id AS id FROM system.parts\nWHERE database = 'analytics' AND table = 'events' AND active ORDER BY id",
    },
    { kind: "command", query: "ALTER TABLE `analytics`.`events` DROP PARTITION 202511" },
    { kind: "command", query: "ALTER TABLE `analytics`.`events` DROP PARTITION 202512" },
    { kind: "command", query: "ALTER TABLE `analytics`.`events` DROP PARTITION 202601" },
  ]);
});

test("dropExpiredPartitions: a month goes once its last day expires, not a day sooner", async () => {
  const ids = ["202601", "202602", "202603"];
  // 30 days on 2026-03-29 keep 2026-02-28, February's last day.
  const before = sqlStandIn([partitions(...ids)]);
  assert.equal(await dropExpiredPartitions(before.sql, retained(30), "2026-03-29"), ["202601"]);
  // On 2026-03-30 the first day kept is 2026-03-01: February has expired whole.
  const on = sqlStandIn([partitions(...ids)]);
  assert.equal(await dropExpiredPartitions(on.sql, retained(30), "2026-03-30"), ["202601", "202602"]);
  assert.equal(on.commands(), [
    "ALTER TABLE `analytics`.`events` DROP PARTITION 202601",
    "ALTER TABLE `analytics`.`events` DROP PARTITION 202602",
  ]);
  // One day of retention keeps today only: on New Year's Day, December goes.
  const newYear = sqlStandIn([partitions("202511", "202512", "202601")]);
  assert.equal(await dropExpiredPartitions(newYear.sql, retained(1), "2026-01-01"), ["202511", "202512"]);
  const eve = sqlStandIn([partitions("202511", "202512", "202601")]);
  assert.equal(await dropExpiredPartitions(eve.sql, retained(1), "2025-12-31"), ["202511"]);
});

test("dropExpiredPartitions: a partition id that is not a month (YYYYMM, 01 to 12) is never dropped", async () => {
  const { sql, commands } = sqlStandIn([partitions("all", "tuple()", "202600", "202613", "20251", "2025-01", "1999011")]);
  assert.equal(await dropExpiredPartitions(sql, retained(1), "2026-03-30"), []);
  assert.equal(commands(), []);
});

test("dropExpiredPartitions on a cluster: every shard's parts are read, and `_local` is dropped ON CLUSTER", async () => {
  const { sql, calls } = sqlStandIn([partitions("202601", "202603")]);
  assert.equal(await dropExpiredPartitions(sql, retained(30, "main"), "2026-03-30"), ["202601"]);
  assert.equal(calls, [
    {
      kind: "rows",
      query:
        "SELECT DISTINCT partition_id AS id FROM cluster('main', system, parts)\nWHERE database = 'analytics' AND table = 'events_local' AND active ORDER BY id",
    },
    { kind: "command", query: "ALTER TABLE `analytics`.`events_local` ON CLUSTER `main` DROP PARTITION 202601" },
  ]);
});

test("dropExpiredPartitions: a refused drop is thrown, and the months after it are not dropped", async () => {
  const { sql, commands } = sqlStandIn([partitions("202510", "202511", "202512")], /PARTITION 202511$/);
  await dropExpiredPartitions(sql, retained(30), "2026-03-30").then(
    () => assert.unreachable("the refusal is thrown"),
    (e: Error) => assert.match(e.message, /^refused: /),
  );
  assert.equal(commands(), [
    "ALTER TABLE `analytics`.`events` DROP PARTITION 202510",
    "ALTER TABLE `analytics`.`events` DROP PARTITION 202511",
  ]);
});

test("deleteExpired: without RETENTION_DAYS it returns 0 without asking ClickHouse anything", async () => {
  const { sql, calls } = sqlStandIn([]);
  assert.is(await deleteExpired(sql, base, "2026-03-30"), 0);
  assert.equal(calls, []);
});

test("deleteExpired on current ClickHouse (20.1 and later, which has TTLs): nothing but the version is asked", async () => {
  for (const v of ["20.1.2.4", "24.8.4.13"]) {
    const { sql, calls } = sqlStandIn([version(v), expiredCount("rejected_messages", 10), recentDeletions("rejected_messages", 0)]);
    assert.is(await deleteExpired(sql, retained(30), "2026-03-30"), 0, v);
    assert.equal(calls, [{ kind: "rows", query: VERSION_QUERY }], v);
  }
});

test("deleteExpired on 18.16: the rows before the first day kept are counted, then one ALTER DELETE covering them is queued", async () => {
  const { sql, calls } = sqlStandIn([version("18.16.1"), expiredCount("rejected_messages", 42), recentDeletions("rejected_messages", 0)]);
  assert.is(await deleteExpired(sql, retained(30), "2026-03-30"), 42);
  assert.is(calls.length, 4);
  assert.equal(calls[0], { kind: "rows", query: VERSION_QUERY });
  assert.equal(calls[1], {
    kind: "rows",
    query: `SELECT count() AS n FROM \`analytics\`.\`rejected_messages\` WHERE received_at < toDateTime(${MARCH_1})`,
  });
  assert.is(calls[2]!.kind, "rows");
  assert.match(
    calls[2]!.query,
    /^SELECT count\(\) AS n FROM system\.mutations\nWHERE database = 'analytics' AND table = 'rejected_messages'\n/,
  );
  assert.match(calls[2]!.query, /startsWith\(command, 'DELETE WHERE received_at < toDateTime\('\)/);
  assert.match(calls[2]!.query, /\(NOT is_done OR create_time > now\(\) - 86400\)$/);
  assert.equal(calls[3], {
    kind: "command",
    query: `ALTER TABLE \`analytics\`.\`rejected_messages\` DELETE WHERE received_at < toDateTime(${MARCH_1})`,
  });
});

test("deleteExpired: ClickHouse before 20 (19.x) counts as 18.16's dialect and gets the deletion", async () => {
  const { sql, commands } = sqlStandIn([
    version("19.17.4.11"),
    expiredCount("rejected_messages", 3),
    recentDeletions("rejected_messages", 0),
  ]);
  assert.is(await deleteExpired(sql, retained(1), "2026-03-01"), 3);
  assert.equal(commands(), [`ALTER TABLE \`analytics\`.\`rejected_messages\` DELETE WHERE received_at < toDateTime(${MARCH_1})`]);
});

test("deleteExpired: nothing expired, or a deletion under way or begun in the last day: none queued, 0 returned", async () => {
  const none = sqlStandIn([version("18.16.1"), expiredCount("rejected_messages", 0), recentDeletions("rejected_messages", 0)]);
  assert.is(await deleteExpired(none.sql, retained(30), "2026-03-30"), 0);
  assert.equal(none.commands(), []);
  assert.is(none.queries().length, 2, "the mutations are not read when nothing expired");
  const noRow = sqlStandIn([version("18.16.1"), [/^SELECT count\(\) AS n FROM `analytics`/, []]]);
  assert.is(await deleteExpired(noRow.sql, retained(30), "2026-03-30"), 0, "no row counts as 0");
  assert.equal(noRow.commands(), []);
  const recent = sqlStandIn([version("18.16.1"), expiredCount("rejected_messages", 42), recentDeletions("rejected_messages", 1)]);
  assert.is(await deleteExpired(recent.sql, retained(30), "2026-03-30"), 0);
  assert.equal(recent.commands(), []);
  assert.is(recent.queries().length, 3);
});

test("deleteExpired on a cluster: counted through the Distributed table, `_local` mutations checked and deleted ON CLUSTER", async () => {
  const { sql, calls } = sqlStandIn([
    version("18.16.1"),
    expiredCount("rejected_messages", 7),
    recentDeletions("rejected_messages_local", 0),
  ]);
  assert.is(await deleteExpired(sql, retained(30, "main"), "2026-03-30"), 7);
  assert.is(calls[1]!.query, `SELECT count() AS n FROM \`analytics\`.\`rejected_messages\` WHERE received_at < toDateTime(${MARCH_1})`);
  assert.match(calls[2]!.query, /AND table = 'rejected_messages_local'\n/);
  assert.equal(calls[3], {
    kind: "command",
    query: `ALTER TABLE \`analytics\`.\`rejected_messages_local\` ON CLUSTER \`main\` DELETE WHERE received_at < toDateTime(${MARCH_1})`,
  });
});

test("deleteExpired: a first day kept at or before 1970-01-01 deletes nothing (18.16 would read a negative time as after 2100)", async () => {
  const routes = [version("18.16.1"), expiredCount("rejected_messages", 5), recentDeletions("rejected_messages", 0)];
  // 10 days on 1970-01-10 keep 1970-01-01 on.
  const epoch = sqlStandIn(routes);
  assert.is(await deleteExpired(epoch.sql, retained(10), "1970-01-10"), 0);
  assert.equal(epoch.queries(), [VERSION_QUERY]);
  const century = sqlStandIn(routes);
  assert.is(await deleteExpired(century.sql, retained(36_500), "2026-03-30"), 0);
  assert.equal(century.queries(), [VERSION_QUERY]);
  // 9 days keep 1970-01-02 on: the day before goes.
  const dayAfter = sqlStandIn(routes);
  assert.is(await deleteExpired(dayAfter.sql, retained(9), "1970-01-10"), 5);
  assert.equal(dayAfter.commands(), ["ALTER TABLE `analytics`.`rejected_messages` DELETE WHERE received_at < toDateTime(86400)"]);
});

test("deleteExpired of another table expires by that table's time; deleteExpiredRejected is that of rejected_messages", async () => {
  const users = sqlStandIn([version("18.16.1"), expiredCount("users", 9), recentDeletions("users", 0)]);
  const expiring = { table: "users", time: "finalizeAggregation(last_seen)" };
  assert.is(await deleteExpired(users.sql, retained(30), "2026-03-30", expiring), 9);
  assert.is(
    users.queries()[1],
    `SELECT count() AS n FROM \`analytics\`.\`users\` WHERE finalizeAggregation(last_seen) < toDateTime(${MARCH_1})`,
  );
  assert.match(users.queries()[2]!, /startsWith\(command, 'DELETE WHERE finalizeAggregation\(last_seen\) < toDateTime\('\)/);
  assert.equal(users.commands(), [
    `ALTER TABLE \`analytics\`.\`users\` DELETE WHERE finalizeAggregation(last_seen) < toDateTime(${MARCH_1})`,
  ]);
  const rejected = sqlStandIn([version("18.16.1"), expiredCount("rejected_messages", 4), recentDeletions("rejected_messages", 0)]);
  assert.is(await deleteExpiredRejected(rejected.sql, retained(30), "2026-03-30"), 4);
  assert.equal(rejected.commands(), [`ALTER TABLE \`analytics\`.\`rejected_messages\` DELETE WHERE received_at < toDateTime(${MARCH_1})`]);
});

/** Routes of an 18.16 server with `counts` expired rows by table and a deletion under way in `busy`. */
function legacyTables(counts: Record<string, number>, busy: string[] = []) {
  return [
    version("18.16.1"),
    ...Object.entries(counts).map(([table, n]) => expiredCount(table, n)),
    ...Object.keys(counts).map((table) => recentDeletions(table, busy.includes(table) ? 1 : 0)),
  ];
}

test("deleteAllExpired on 18.16: each table in turn, refused items first, each with its own time and its own answer", async () => {
  const { sql, commands } = sqlStandIn(
    legacyTables({ rejected_messages: 5, users: 0, identities: 7, catalog_shapes: 3 }, ["catalog_shapes"]),
  );
  const deleted = await deleteAllExpired(sql, retained(30), "2026-03-30");
  assert.equal(deleted, { rejected_messages: 5, users: 0, identities: 7, catalog_shapes: 0 });
  assert.equal(Object.keys(deleted), ["rejected_messages", "users", "identities", "catalog_shapes"]);
  assert.equal(commands(), [
    `ALTER TABLE \`analytics\`.\`rejected_messages\` DELETE WHERE received_at < toDateTime(${MARCH_1})`,
    `ALTER TABLE \`analytics\`.\`identities\` DELETE WHERE finalizeAggregation(last_linked_at) < toDateTime(${MARCH_1})`,
  ]);
});

test("deleteAllExpired on current ClickHouse: 0 for every table, no row counted, nothing deleted", async () => {
  const { sql, queries, commands } = sqlStandIn([version("24.8.4.13")]);
  assert.equal(await deleteAllExpired(sql, retained(30), "2026-03-30"), {
    rejected_messages: 0,
    users: 0,
    identities: 0,
    catalog_shapes: 0,
  });
  assert.equal(queries(), [VERSION_QUERY, VERSION_QUERY, VERSION_QUERY, VERSION_QUERY]);
  assert.equal(commands(), []);
});

test("deleteAllExpired: the first ClickHouse error is thrown, the tables after it left alone", async () => {
  const routes = legacyTables({ rejected_messages: 5, identities: 7, catalog_shapes: 3 });
  const { sql, queries, commands } = sqlStandIn([[/`users`/, new Error("Code: 241. Memory limit exceeded")], ...routes]);
  await deleteAllExpired(sql, retained(30), "2026-03-30").then(
    () => assert.unreachable("the error is thrown"),
    (e: Error) => assert.match(e.message, /^Code: 241/),
  );
  assert.equal(commands(), [`ALTER TABLE \`analytics\`.\`rejected_messages\` DELETE WHERE received_at < toDateTime(${MARCH_1})`]);
  assert.not.ok(
    queries().some((q) => /identities|catalog_shapes/.test(q)),
    "identities and catalog_shapes not asked",
  );
});

test("applyRetention on 18.16: partitions dropped first, then the rows of each table; the refused items' count reported apart", async () => {
  const { sql, commands } = sqlStandIn([
    partitions("202601", "202602", "202603"),
    ...legacyTables({ rejected_messages: 5, users: 2, identities: 0, catalog_shapes: 1 }),
  ]);
  assert.equal(await applyRetention(sql, retained(30), "2026-03-30"), {
    dropped: ["202601", "202602"],
    rejectedDeleted: 5,
    rowsDeleted: { rejected_messages: 5, users: 2, identities: 0, catalog_shapes: 1 },
  });
  assert.equal(
    commands().map((c) => /^ALTER TABLE `analytics`\.`(\w+)` (DROP PARTITION \d+|DELETE)/.exec(c)?.slice(1)),
    [
      ["events", "DROP PARTITION 202601"],
      ["events", "DROP PARTITION 202602"],
      ["rejected_messages", "DELETE"],
      ["users", "DELETE"],
      ["catalog_shapes", "DELETE"],
    ],
  );
});

test("applyRetention on current ClickHouse: months are still dropped, no rows deleted", async () => {
  const { sql, commands } = sqlStandIn([partitions("202512", "202603"), version("25.3.1.1")]);
  assert.equal(await applyRetention(sql, retained(30), "2026-03-30"), {
    dropped: ["202512"],
    rejectedDeleted: 0,
    rowsDeleted: { rejected_messages: 0, users: 0, identities: 0, catalog_shapes: 0 },
  });
  assert.equal(commands(), ["ALTER TABLE `analytics`.`events` DROP PARTITION 202512"]);
});

test("applyRetention without RETENTION_DAYS: nothing dropped or deleted, ClickHouse not asked", async () => {
  const { sql, calls } = sqlStandIn([]);
  assert.equal(await applyRetention(sql, base, "2026-03-30"), {
    dropped: [],
    rejectedDeleted: 0,
    rowsDeleted: { rejected_messages: 0, users: 0, identities: 0, catalog_shapes: 0 },
  });
  assert.equal(calls, []);
});

test("applyRetention: a refused drop ends the step before any deletion", async () => {
  const { sql, queries } = sqlStandIn(
    [partitions("202601"), ...legacyTables({ rejected_messages: 5, users: 2, identities: 0, catalog_shapes: 1 })],
    /DROP PARTITION/,
  );
  await applyRetention(sql, retained(30), "2026-03-30").then(
    () => assert.unreachable("the refusal is thrown"),
    (e: Error) => assert.match(e.message, /DROP PARTITION 202601/),
  );
  assert.is(queries().length, 1, "only the partitions were read");
});

const month = monthRow;
const monthParts = (...rows: ReturnType<typeof month>[]): [RegExp, Record<string, unknown>[]] => [
  /^SELECT partition_id AS id, hostName\(\)/,
  rows as unknown as Record<string, unknown>[],
];

test("mergeClosedMonth on one server: the newest closed month due is merged into one part, the current month never", async () => {
  const { sql, calls } = sqlStandIn([
    monthParts(month("202601", 3, 1_000, 500), month("202602", 4, 2_000, 1_000), month("202603", 9, 9_000, 1_000)),
  ]);
  assert.is(await mergeClosedMonth(sql, base, "202603"), "202602");
  assert.is(calls.length, 2, "no version asked on one server");
  assert.is(calls[0]!.kind, "rows");
  assert.match(calls[0]!.query, /\nFROM system\.parts\nWHERE database = 'analytics' AND table = 'events' AND active\n/);
  assert.match(calls[0]!.query, /sumIf\(bytes_on_disk, modification_time > now\(\) - 86400\) AS recent/);
  assert.equal(calls[1], { kind: "command", query: "OPTIMIZE TABLE `analytics`.`events` PARTITION 202602 FINAL" });
});

test("mergeClosedMonth: a month in `skip` is passed over for the next one; how recent a part is can be set", async () => {
  const rows = monthParts(month("202601", 3, 1_000, 500), month("202602", 4, 2_000, 1_000));
  const { sql, calls } = sqlStandIn([rows]);
  assert.is(await mergeClosedMonth(sql, base, "202603", new Set(["202602"]), 0), "202601");
  assert.match(calls[0]!.query, /modification_time > now\(\) - 0\)/);
  assert.equal(calls[1], { kind: "command", query: "OPTIMIZE TABLE `analytics`.`events` PARTITION 202601 FINAL" });
  const both = sqlStandIn([rows]);
  assert.is(await mergeClosedMonth(both.sql, base, "202603", new Set(["202601", "202602"])), undefined);
  assert.equal(both.commands(), []);
});

test("mergeClosedMonth: a month still receiving (1% of its bytes recent) or merged (90% in one part) waits; just under, it goes", async () => {
  const waiting = sqlStandIn([
    monthParts(month("202512", 2, 1_000, 100, 10), month("202601", 5, 1_000, 900), month("202602", 1, 2_000, 2_000)),
  ]);
  assert.is(await mergeClosedMonth(waiting.sql, base, "202603"), undefined);
  assert.equal(waiting.commands(), []);
  const quiet = sqlStandIn([monthParts(month("202512", 2, 1_000, 100, 9), month("202601", 5, 1_000, 900))]);
  assert.is(await mergeClosedMonth(quiet.sql, base, "202603"), "202512");
  const unmerged = sqlStandIn([monthParts(month("202512", 2, 1_000, 100, 10), month("202601", 5, 1_000, 899))]);
  assert.is(await mergeClosedMonth(unmerged.sql, base, "202603"), "202601");
});

test("mergeClosedMonth on a cluster before 22.4: nothing merged, only the version asked", async () => {
  for (const v of ["18.16.1", "22.3.15.33"]) {
    const { sql, calls } = sqlStandIn([version(v), monthParts(month("202602", 4, 2_000, 1_000))]);
    assert.is(await mergeClosedMonth(sql, retained(30, "main"), "202603"), undefined, v);
    assert.equal(calls, [{ kind: "rows", query: VERSION_QUERY }], v);
  }
});

test("mergeClosedMonth on a cluster from 22.4: every shard's parts read, `_local` merged ON CLUSTER skipping merged shards", async () => {
  // 202602: due on ch-1, one part on ch-2 (not holding it back). 202601: due on ch-1 but unmerged and busy on ch-2.
  const { sql, calls } = sqlStandIn([
    version("22.4.1.752"),
    monthParts(
      month("202601", 3, 1_000, 500, 0, "ch-1"),
      month("202601", 3, 1_000, 500, 500, "ch-2"),
      month("202602", 4, 2_000, 1_000, 0, "ch-1"),
      month("202602", 1, 300, 300, 300, "ch-2"),
    ),
  ]);
  assert.is(await mergeClosedMonth(sql, { ...base, cluster: "main" }, "202603"), "202602");
  assert.equal(calls[0], { kind: "rows", query: VERSION_QUERY });
  assert.match(
    calls[1]!.query,
    /\nFROM cluster\('main', system, parts\)\nWHERE database = 'analytics' AND table = 'events_local' AND active\n/,
  );
  assert.equal(calls[2], {
    kind: "command",
    query:
      "OPTIMIZE TABLE `analytics`.`events_local` ON CLUSTER `main` PARTITION 202602 FINAL SETTINGS optimize_skip_merged_partitions = 1",
  });
  // Without 202602, 202601 is held back by ch-2.
  const held = sqlStandIn([
    version("24.8.4.13"),
    monthParts(month("202601", 3, 1_000, 500, 0, "ch-1"), month("202601", 3, 1_000, 500, 500, "ch-2")),
  ]);
  assert.is(await mergeClosedMonth(held.sql, { ...base, cluster: "main" }, "202603"), undefined);
  assert.equal(held.commands(), []);
});

test("mergeClosedMonth: a refused OPTIMIZE is thrown", async () => {
  const { sql } = sqlStandIn([monthParts(month("202602", 4, 2_000, 1_000))], /^OPTIMIZE/);
  await mergeClosedMonth(sql, base, "202603").then(
    () => assert.unreachable("the refusal is thrown"),
    (e: Error) => assert.match(e.message, /^refused: OPTIMIZE TABLE `analytics`\.`events` PARTITION 202602 FINAL$/),
  );
});

test.run();
