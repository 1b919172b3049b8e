/**
 * Setup and migrate on the local ClickHouse 18.16 (live) and current ClickHouse's system.tables
 * rows (chdb-core in-process): never dropping, replacing or writing to an object it did not create,
 * moving rows into the time-ordered layout while a sink writes, retention; `rejected_messages`'s
 * columns and retries collapsing under FINAL, on both. The pure decision is
 * test/unit/deploy/setup/ownership.test.ts.
 */
import { type Dialect } from "../../schemas/clickhouse/sql";
import { REJECTED_TABLE, reservedTableNames } from "../../schemas/clickhouse/tables";
import { type ClickHouseConfig, clickhouseConfig } from "../../schemas/config";
import { type Sql, clientSql } from "../../schemas/clickhouse/client";
import { unpartitionedEventsTableDdl } from "../../schemas/clickhouse/events";
import * as assert from "uvu/assert";
import { migrate } from "../../deploy/setup/migrate";
import { suite } from "uvu";
import { Chdb } from "../support/chdb";
import { type TableRow, existingObjectsQuery, classifyExisting } from "../../deploy/setup/ownership";
import { LiveStack, waitFor, stopService } from "../support/harness";
import { type ClickHouseClient, createClient } from "@clickhouse/client";
import { dropExpiredPartitions } from "../../sink/upkeep/retention";

/** The columns of rejected_messages, per dialect, as system.columns reports them. */
const REJECTED_COLUMNS: Record<Dialect, [string, string][]> = {
  legacy: [
    ["workspace_id", "String"],
    ["received_at", "DateTime"],
    ["rejection_id", "String"],
    ["message_id", "String"],
    ["type", "String"],
    ["reasons", "Array(String)"],
    ["raw", "String"],
  ],
  current: [
    ["workspace_id", "LowCardinality(String)"],
    ["received_at", "DateTime64(3, 'UTC')"],
    ["rejection_id", "String"],
    ["message_id", "String"],
    ["type", "LowCardinality(String)"],
    ["reasons", "Array(String)"],
    ["raw", "String"],
  ],
};

/** Two refusals of the same item (same key), received a second apart, as JSONEachRow lines. */
function retriedRejection(time: (s: number) => string): string {
  const row = (s: number) => ({
    workspace_id: "ws1",
    received_at: time(s),
    rejection_id: "ab".repeat(32),
    message_id: "",
    type: "track",
    reasons: ["batch[3].event: string (required)"],
    raw: '{"type":"track"}',
  });
  return [row(1), row(2)].map((r) => JSON.stringify(r)).join("\n");
}

const COLUMNS_OF_REJECTED = (db: string) =>
  `SELECT name, type FROM system.columns WHERE database = '${db}' AND table = '${REJECTED_TABLE}'`;
const FINAL_REJECTED = (db: string) => `SELECT received_at, reasons FROM \`${db}\`.${REJECTED_TABLE} FINAL`;

// ---------------------------------------------------------------- both engines

/** A ClickHouse config for a scratch database (no server address: the Sql is given). */
const scratch = (database: string, retentionDays?: number): ClickHouseConfig => ({
  url: "",
  username: "",
  password: "",
  database,
  table: "events",
  ...(retentionDays === undefined ? {} : { retentionDays }),
});

/** Columns every insert below writes (the rest default). */
const INSERT_COLUMNS =
  "workspace_id, message_id, type, event, user_id, anonymous_id, timestamp, original_timestamp, received_at, properties, traits, context, extra";

/**
 * `n` rows over three months from 2026-08-20, message k from row number: nine messages per ten
 * rows, so every ninth message is retried (a second row, same timestamps, received later);
 * every fifth has no client timestamp, a third are identifies of 40 users.
 */
function oldRows(database: string, n: number, offset = 0): string {
  return `INSERT INTO \`${database}\`.events (${INSERT_COLUMNS})
SELECT 'ws1', concat('m', toString(k)), if(k % 3 = 0, 'identify', 'track'), if(k % 3 = 0, '', 'Clicked'),
  concat('u', toString(k % 40)), concat('a', toString(k % 70)),
  toDateTime('2026-08-20 00:00:00') + k * 2927 AS ts, if(k % 5 = 0, NULL, ts), ts + 1 + row % 10 * 60,
  '{}', concat('{"k":', toString(k), '}'), '{}', '{}'
FROM (SELECT number + ${offset} AS row, intDiv(row * 9, 10) AS k FROM numbers(${n}))`;
}

/** Row count and a checksum of every column the sink writes, as FINAL queries see the table. */
function fingerprint(database: string, table = "events"): string {
  return `SELECT count() AS n, sum(cityHash64(workspace_id, message_id, type, event, user_id, anonymous_id, toString(timestamp),
  ifNull(toString(original_timestamp), ''), ifNull(toString(sent_at), ''), toString(received_at), properties, traits, context, extra)) AS sum
FROM \`${database}\`.\`${table}\` FINAL`;
}

/** An Sql that runs `during` once, just before the first statement matching `before`: a sink writing mid-migration. */
function interleaved(sql: Sql, before: RegExp, during: () => Promise<void>): Sql {
  let done = false;
  return {
    rows: (q) => sql.rows(q),
    command: async (q) => {
      if (!done && before.test(q)) {
        done = true;
        await during();
      }
      await sql.command(q);
    },
  };
}

/**
 * Migration of an unpartitioned table with rows, on either engine: (1) a sink inserting between
 * the copy and the rename; (2) a crash mid-copy (a partial copy table left behind); (3) a crash
 * after the rename, before the difference was copied; each ends with the rows, count and
 * checksum under FINAL, the old table had, and a second run changes nothing.
 */
async function migrationWithRows(sql: Sql, dialect: Dialect, prefix: string): Promise<void> {
  const prepare = async (db: string) => {
    await sql.command(`CREATE DATABASE \`${db}\``);
    await sql.command(unpartitionedEventsTableDdl(dialect, db, "events"));
    await sql.command(`CREATE VIEW \`${db}\`.users AS SELECT user_id FROM \`${db}\`.events FINAL WHERE type = 'identify'`);
    await sql.command(oldRows(db, 3000));
  };
  const check = async (db: string, expected: { n: string | number; sum: string | number }, where: string) => {
    const [after] = await sql.rows<{ n: string | number; sum: string | number }>(fingerprint(db));
    assert.equal(
      [String(after!.n), String(after!.sum)],
      [String(expected.n), String(expected.sum)],
      `${dialect}, ${where}: count and checksum`,
    );
    const [layout] = await sql.rows<{ key: string; dates: string | number }>(
      `SELECT (SELECT sorting_key FROM system.tables WHERE database = '${db}' AND name = 'events') AS key, (SELECT uniqExact(event_date) FROM \`${db}\`.events) AS dates`,
    );
    assert.is(layout!.key.replace(/\s/g, ""), "workspace_id,event_date,type,message_id", where);
    assert.ok(Number(layout!.dates) > 60, `${where}: rows spread over their days`);
    const [users] = await sql.rows<{ n: string | number }>(`SELECT uniqExact(user_id) AS n FROM \`${db}\`.users`);
    assert.is(Number(users!.n), 40, `${where}: users backfilled`);
    const again = await migrate(sql, scratch(db));
    assert.is(again.moved, undefined, `${where}: a second run moves nothing`);
    const [same] = await sql.rows<{ n: string | number; sum: string | number }>(fingerprint(db));
    assert.equal([String(same!.n), String(same!.sum)], [String(expected.n), String(expected.sum)], `${where}: unchanged by the second run`);
  };

  // (1) a sink writes 200 more rows (new messages and retries of old ones) after the copy, before the rename
  const one = `${prefix}_during`;
  await prepare(one);
  const writer = interleaved(sql, /^RENAME TABLE/, () => sql.command(oldRows(one, 200, 2950)));
  const moved = await migrate(writer, scratch(one));
  assert.is(moved.moved?.keptAs, `${one}.events__old`);
  await check(one, (await sql.rows<{ n: string; sum: string }>(fingerprint(one, "events__old")))[0]!, "rows written during the copy");

  // (2) a crash mid-copy: a partial copy table is dropped and made again
  const two = `${prefix}_midcopy`;
  await prepare(two);
  const [before2] = await sql.rows<{ n: string; sum: string }>(fingerprint(two));
  const crashing = interleaved(sql, /^RENAME TABLE/, async () => {
    throw new Error("crash before the rename");
  });
  const crashed = await migrate(crashing, scratch(two)).then(
    () => "",
    (e: Error) => e.message,
  );
  assert.is(crashed, "crash before the rename");
  await sql.command(`INSERT INTO \`${two}\`.events__copy (${INSERT_COLUMNS}) SELECT ${INSERT_COLUMNS} FROM \`${two}\`.events LIMIT 7`);
  await migrate(sql, scratch(two));
  await check(two, before2!, "resumed after a crash mid-copy");

  // (3) a crash after the rename, before the difference: the whole old table is copied again, and collapses
  const three = `${prefix}_renamed`;
  await prepare(three);
  const [before3] = await sql.rows<{ n: string; sum: string }>(fingerprint(three));
  let renamed = false;
  const stopAfterRename: Sql = {
    rows: (q) => sql.rows(q),
    command: async (q) => {
      if (renamed && q.startsWith("INSERT INTO")) throw new Error("crash after the rename");
      await sql.command(q);
      if (q.startsWith("RENAME TABLE")) renamed = true;
    },
  };
  assert.is(
    await migrate(stopAfterRename, scratch(three)).then(
      () => "",
      (e: Error) => e.message,
    ),
    "crash after the rename",
  );
  await migrate(sql, scratch(three));
  await check(three, before3!, "resumed after a crash after the rename");
}

/** RETENTION_DAYS=60 on rows 120, 100, 59, 40 and 5 days old: the first two months' partitions go, nothing newer. */
async function retentionKeepsRecentMonths(sql: Sql, database: string, expire: () => Promise<void>): Promise<void> {
  await migrate(sql, scratch(database, 60));
  for (const daysAgo of [120, 100, 59, 40, 5]) {
    await sql.command(`INSERT INTO \`${database}\`.events (${INSERT_COLUMNS})
VALUES ('ws1', 'r${daysAgo}', 'track', 'Kept', 'u1', '', now() - ${daysAgo * 86_400}, now() - ${daysAgo * 86_400}, now(), '{}', '{}', '{}', '{}')`);
  }
  await expire();
  const kept = await sql.rows<{ message_id: string }>(`SELECT message_id FROM \`${database}\`.events ORDER BY event_date`);
  assert.equal(
    kept.map((r) => r.message_id),
    ["r59", "r40", "r5"],
  );
}

const current = suite("current ClickHouse (chdb)");
let chdb: Chdb;
current.before(async () => {
  chdb = new Chdb();
  assert.ok(Number((await chdb.start()).split(".")[0]) >= 23, `current ClickHouse, got ${chdb.version}`);
});
current.after(() => chdb.close());

current("system.tables rows: everything setup made is ours, run twice; a user's objects conflict", async () => {
  const ours = "mig_ours";
  const theirs = "mig_theirs";
  assert.is((await migrate(chdb, scratch(ours))).dialect, "current");
  await migrate(chdb, scratch(ours)); // the second run replaces every view (CREATE OR REPLACE)
  await chdb.command(`CREATE DATABASE ${theirs}`);
  await chdb.command(`CREATE TABLE ${theirs}.users (id UInt32) ENGINE = MergeTree ORDER BY id`);
  await chdb.command(`CREATE TABLE ${theirs}.events (type String) ENGINE = MergeTree ORDER BY type`);
  await chdb.command(`CREATE VIEW ${theirs}.tracks AS SELECT type FROM ${theirs}.events`);
  await chdb.command(`INSERT INTO ${ours}.${REJECTED_TABLE} FORMAT JSONEachRow\n${retriedRejection((s) => `2026-11-23 10:00:0${s}.500`)}`);
  const oursRows = await chdb.rows<TableRow>(existingObjectsQuery(ours));
  assert.equal(oursRows.map((r) => r.name).sort(), [...reservedTableNames()].sort());
  const mine = classifyExisting(oursRows, ours, "events");
  assert.equal(mine.conflicts, []);
  assert.equal([...mine.ours].sort(), [...reservedTableNames()].sort());
  assert.equal(classifyExisting(await chdb.rows<TableRow>(existingObjectsQuery(theirs)), theirs, "events").conflicts, [
    `${theirs}.tracks (View)`,
    `${theirs}.users (MergeTree)`,
  ]);
  const columns = await chdb.rows<{ name: string; type: string }>(COLUMNS_OF_REJECTED(ours));
  assert.equal(
    columns.map((c) => [c.name, c.type]),
    REJECTED_COLUMNS.current,
  );
  assert.equal(await chdb.rows(FINAL_REJECTED(ours)), [
    { received_at: "2026-11-23 10:00:02.500", reasons: ["batch[3].event: string (required)"] },
  ]);
});

current("migration with rows: a sink writing mid-copy, a crash mid-copy, a crash after the rename", () =>
  migrationWithRows(chdb, "current", "mig_rows"),
);

current("retention: the TTL drops whole expired months and nothing newer", () =>
  retentionKeepsRecentMonths(chdb, "mig_ttl", async () => {
    await chdb.command("OPTIMIZE TABLE mig_ttl.events FINAL");
  }),
);

current.run();

// ---------------------------------------------------------------- live, 18.16

const stack = new LiveStack();
const live = suite("migrate, live ClickHouse 18.16");
let ch: ClickHouseClient;
const config = clickhouseConfig(stack.env);
const databases: string[] = [];
/** A fresh database name for one test; dropped after the suite. */
const fresh = (tag: string) => {
  const db = `${stack.database}_${tag}`;
  databases.push(db);
  return db;
};
const select = async <T>(query: string): Promise<T[]> => (await ch.query({ query, format: "JSONEachRow" })).json<T>();
const tablesOf = async (db: string) =>
  select<{ name: string; engine: string; create_table_query: string }>(
    `SELECT name, engine, create_table_query FROM system.tables WHERE database = '${db}' ORDER BY name`,
  );

live.before(() => {
  ch = createClient({ url: config.url, username: config.username, password: config.password });
});
live.after(async () => {
  for (const db of [stack.database, ...databases]) await ch.command({ query: `DROP DATABASE IF EXISTS \`${db}\`` });
  await ch.close();
  await stack.stop(); // the topics setup created
});

live("(a) setup refuses when the user's own MergeTree `users` is there, and leaves it and its rows alone", async () => {
  const db = stack.database;
  await ch.command({ query: `CREATE DATABASE ${db}` });
  await ch.command({ query: `CREATE TABLE ${db}.users (id UInt32, name String) ENGINE = MergeTree ORDER BY id` });
  await ch.command({ query: `INSERT INTO ${db}.users VALUES (1, 'ada'), (2, 'grace'), (3, 'edsger')` });
  const before = await tablesOf(db);
  const failed = await stack.run("deploy/setup/main.js").then(
    () => "",
    (e: Error) => e.message,
  );
  assert.match(failed, `${db}.users (MergeTree)`, "setup names the user's table");
  assert.equal(await tablesOf(db), before, "nothing created, dropped or changed");
  assert.equal(await select(`SELECT id, name FROM ${db}.users ORDER BY id`), [
    { id: 1, name: "ada" },
    { id: 2, name: "grace" },
    { id: 3, name: "edsger" },
  ]);
});

live("(b) a user's VIEW `tracks` reading something else is refused and untouched; every conflict is named", async () => {
  const db = fresh("b");
  await ch.command({ query: `CREATE DATABASE ${db}` });
  await ch.command({ query: `CREATE TABLE ${db}.mine (x UInt8) ENGINE = Log` });
  await ch.command({ query: `INSERT INTO ${db}.mine VALUES (7)` });
  await ch.command({ query: `CREATE VIEW ${db}.tracks AS SELECT x FROM ${db}.mine` });
  const before = await tablesOf(db);
  const refused = await migrate(clientSql(ch), { ...config, database: db }).then(
    () => "",
    (e: Error) => e.message,
  );
  assert.match(refused, `${db}.tracks (View)`);
  assert.equal(await tablesOf(db), before);
  assert.equal(await select(`SELECT x FROM ${db}.tracks`), [{ x: 7 }]);
  // a second conflict: both are named in the one error
  await ch.command({ query: `CREATE TABLE ${db}.${REJECTED_TABLE} (x UInt8) ENGINE = Log` });
  const both = await migrate(clientSql(ch), { ...config, database: db }).then(
    () => "",
    (e: Error) => e.message,
  );
  assert.match(both, `${db}.tracks (View)`);
  assert.match(both, `${db}.${REJECTED_TABLE} (Log)`);
});

live("(c) migrating twice works: our views are recognised from system.tables and replaced", async () => {
  const db = fresh("c");
  const cfg = { ...config, database: db };
  assert.is((await migrate(clientSql(ch), cfg)).dialect, "legacy");
  const rows = await select<TableRow>(existingObjectsQuery(db));
  assert.equal(rows.map((r) => r.name).sort(), [...reservedTableNames()].sort(), "every reserved name created");
  const verdict = classifyExisting(rows, db, "events");
  assert.equal(verdict.conflicts, []);
  assert.equal([...verdict.ours].sort(), [...reservedTableNames()].sort());
  // an older definition of one of our views (it reads events FINAL) is replaced by the current one
  await ch.command({ query: `DROP TABLE ${db}.tracks` });
  await ch.command({ query: `CREATE VIEW ${db}.tracks AS SELECT message_id FROM ${db}.events FINAL` });
  await migrate(clientSql(ch), cfg);
  const columns = await select<{ name: string }>(`SELECT name FROM system.columns WHERE database = '${db}' AND table = 'tracks'`);
  assert.ok(
    columns.some((c) => c.name === "event"),
    "tracks has the current definition again",
  );
  await migrate(clientSql(ch), cfg);
});

live("rejected_messages on 18.16: exactly its columns; a retried refusal is one row under FINAL", async () => {
  const db = fresh("r");
  await migrate(clientSql(ch), { ...config, database: db });
  const columns = await select<{ name: string; type: string }>(COLUMNS_OF_REJECTED(db));
  assert.equal(
    columns.map((c) => [c.name, c.type]),
    REJECTED_COLUMNS.legacy,
  );
  const lines = retriedRejection((s) => `2026-11-23 10:00:0${s}`);
  await ch.command({ query: `INSERT INTO ${db}.${REJECTED_TABLE} FORMAT JSONEachRow\n${lines}` });
  assert.equal(await select(`SELECT count() AS n FROM ${db}.${REJECTED_TABLE}`), [{ n: "2" }], "both inserts stored");
  assert.equal(await select(FINAL_REJECTED(db)), [{ received_at: "2026-11-23 10:00:02", reasons: ["batch[3].event: string (required)"] }]);
});

live("a sink newer than its table refuses to start, naming the missing column, instead of dead-lettering every row", async () => {
  const env = { CLICKHOUSE_DATABASE: fresh("s") };
  await stack.run("deploy/setup/main.js", env);
  await ch.command({ query: `ALTER TABLE ${env.CLICKHOUSE_DATABASE}.events DROP COLUMN extra` });
  const sink = stack.spawn("sink/main.js", env);
  const { code } = await sink.exited;
  assert.is(code, 1, sink.output());
  assert.match(sink.output(), /lacks column\(s\) extra: run npm run setup/);
  await stack.run("deploy/setup/main.js", env); // the migration adds the column back
  const [found] = await select<{ n: string }>(
    `SELECT count() AS n FROM system.columns WHERE database = '${env.CLICKHOUSE_DATABASE}' AND table = 'events' AND name = 'extra'`,
  );
  assert.is(found!.n, "1");
});

live("migration with rows on 18.16: a sink writing mid-copy, a crash mid-copy, a crash after the rename", async () => {
  const prefix = fresh("rows");
  databases.push(`${prefix}_during`, `${prefix}_midcopy`, `${prefix}_renamed`);
  await migrationWithRows(clientSql(ch), "legacy", prefix);
});

live("retention on 18.16: the scheduled step drops whole expired months and nothing newer", async () => {
  const db = fresh("ttl");
  const sql = clientSql(ch);
  await retentionKeepsRecentMonths(sql, db, async () => {
    const dropped = await dropExpiredPartitions(sql, scratch(db, 60), new Date().toISOString().slice(0, 10));
    // The months of the rows 120 and 100 days old: two on most days, one when both fall in the same month.
    const monthOf = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 7).replace("-", "");
    assert.equal([...dropped].sort(), [...new Set([120, 100].map(monthOf))].sort(), `dropped ${dropped.join(", ")}`);
  });
});

live(
  "the sink runs the retention step at start: drops expired months, deletes expired refused items; the CLI drops months as well",
  async () => {
    const env = { CLICKHOUSE_DATABASE: fresh("sinkttl"), RETENTION_DAYS: "60", SINK_RETENTION_JITTER_MS: "0" };
    await stack.run("deploy/setup/main.js", env);
    const sql = clientSql(ch);
    const insertAged = async (daysAgo: number[]) => {
      for (const d of daysAgo) {
        await sql.command(`INSERT INTO \`${env.CLICKHOUSE_DATABASE}\`.events (${INSERT_COLUMNS})
VALUES ('ws1', 's${d}', 'track', 'Kept', 'u1', '', now() - ${d * 86_400}, now() - ${d * 86_400}, now(), '{}', '{}', '{}', '{}')`);
      }
    };
    const left = async () =>
      (await select<{ message_id: string }>(`SELECT message_id FROM \`${env.CLICKHOUSE_DATABASE}\`.events ORDER BY event_date`)).map(
        (r) => r.message_id,
      );
    // Refused items keep the same days by receive time (the sink's daily deletion on 18.16).
    const rejected = `\`${env.CLICKHOUSE_DATABASE}\`.rejected_messages`;
    for (const d of [120, 5])
      await sql.command(`INSERT INTO ${rejected} (workspace_id, received_at, rejection_id, message_id, type, reasons, raw)
VALUES ('ws1', now() - ${d * 86_400}, 'r${d}', '', 'track', ['event: string'], '{}')`);
    const refused = async () =>
      (
        await select<{ rejection_id: string }>(
          `SELECT rejection_id FROM ${rejected} WHERE rejection_id IN ('r5', 'r120') ORDER BY rejection_id`,
        )
      ).map((r) => r.rejection_id);
    await insertAged([120, 59, 5]);
    const sink = stack.spawn("sink/main.js", env);
    const started = Date.now();
    try {
      await waitFor("the sink's retention step", async () => ((await left()).length === 2 ? true : undefined));
      assert.equal(await left(), ["s59", "s5"]);
      // A mutation: 18.16 applies it in its background pool, which a busy server may hold a while.
      await waitFor("the expired refused item deleted", async () => ((await refused()).length === 1 ? true : undefined), 90_000).catch(
        async (error: Error) => {
          const mutations = await select<Record<string, unknown>>(
            `SELECT substring(command, 1, 80) AS command, create_time, is_done FROM system.mutations WHERE database = '${env.CLICKHOUSE_DATABASE}'`,
          );
          throw new Error(`${error.message}; the database's mutations: ${JSON.stringify(mutations)}; the sink's log:\n${sink.output()}`);
        },
      );
      assert.equal(await refused(), ["r5"]);
      console.log(`  the expired refused item gone ${((Date.now() - started) / 1000).toFixed(1)} s after the sink's start`);
    } finally {
      await stopService(sink);
    }
    await insertAged([100]);
    const cli = stack.spawn("deploy/cli.js", env, ["retention"]);
    assert.is((await cli.exited).code, 0, cli.output());
    assert.equal(await left(), ["s59", "s5"]);
  },
);

live.run();
