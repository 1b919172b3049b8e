/**
 * Migrate never drops, replaces or writes to an object it did not create: the pure decision
 * (schemas/ownership.ts) on rows as each version stores them; setup and migrate on the local
 * ClickHouse 18.16 (live); and current ClickHouse's system.tables rows (chdb-core in-process).
 * Also `rejected_messages`: its columns, and retries collapsing under FINAL, on both.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  REJECTED_TABLE,
  rejectedTableDdl,
  reservedTableNames,
  tableDdl,
  tableNameConflict,
  viewNames,
  viewsDdl,
  type Dialect,
} from "../schemas/clickhouse";
import { clickhouseConfig } from "../schemas/config";
import { classifyExisting, existingObjectsQuery, readsFinal, type TableRow } from "../schemas/ownership";
import { migrate } from "../sink/migrate";
import { LiveStack } from "./harness";

const root = join(__dirname, "..", "..");

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

// ---------------------------------------------------------------- pure

const pure = suite("ownership, pure");

const view = (name: string, query: string): TableRow => ({ name, engine: "View", create_table_query: query, sorting_key: "" });

pure("our views as 18.16 and current store them are ours; anything else with our names is not", () => {
  const rows: TableRow[] = [
    // 18.16: no backquotes where not needed, two spaces after FINAL
    view("tracks", "CREATE VIEW an.tracks ( event String) AS SELECT event FROM an.events FINAL  WHERE type = 'track'"),
    // current: backquotes where needed
    view("users", "CREATE VIEW `my-db`.users (`a` String) AS SELECT a FROM (SELECT a FROM `my-db`.`ev ents` FINAL WHERE x)"),
    view("pages", "CREATE VIEW an.pages AS SELECT * FROM an.events WHERE type = 'page'"), // no FINAL
    view("screens", "CREATE VIEW an.screens AS SELECT * FROM other.events FINAL"), // another database
    view("groups", "CREATE VIEW an.groups AS SELECT 'FROM an.events FINAL' AS x FROM an.mine"), // only in a literal
    {
      name: "identifies",
      engine: "MergeTree",
      create_table_query: "CREATE TABLE an.identifies (a UInt8) ENGINE = MergeTree ORDER BY a",
      sorting_key: "a",
    },
    {
      name: "aliases",
      engine: "MaterializedView",
      create_table_query: "CREATE MATERIALIZED VIEW an.aliases ENGINE = Log AS SELECT * FROM an.events FINAL",
      sorting_key: "",
    },
    { name: REJECTED_TABLE, engine: "ReplacingMergeTree", create_table_query: "", sorting_key: "workspace_id, rejection_id" },
    { name: "unrelated", engine: "Log", create_table_query: "", sorting_key: "" },
  ];
  const an = classifyExisting(rows, "an", "events");
  assert.equal([...an.ours].sort(), [REJECTED_TABLE, "tracks"]);
  assert.equal(an.conflicts, [
    "an.aliases (MaterializedView)",
    "an.groups (View)",
    "an.identifies (MergeTree)",
    "an.pages (View)",
    "an.screens (View)",
    "an.users (View)",
  ]);
  const quoted = classifyExisting(rows.slice(1, 2), "my-db", "ev ents");
  assert.equal([...quoted.ours], ["users"], "backquoted names are read back");
});

pure("rejected_messages is ours only as a ReplacingMergeTree ordered by (workspace_id, rejection_id)", () => {
  const rejected = (engine: string, sorting_key: string): TableRow => ({
    name: REJECTED_TABLE,
    engine,
    create_table_query: "",
    sorting_key,
  });
  assert.equal(classifyExisting([rejected("ReplacingMergeTree", "(`workspace_id`, rejection_id)")], "d", "events").conflicts, []);
  assert.equal(classifyExisting([rejected("MergeTree", "workspace_id, rejection_id")], "d", "events").conflicts, [
    "d.rejected_messages (MergeTree)",
  ]);
  assert.equal(classifyExisting([rejected("ReplacingMergeTree", "rejection_id")], "d", "events").conflicts, [
    "d.rejected_messages (ReplacingMergeTree)",
  ]);
});

pure("readsFinal unquotes backquotes, doubled and backslash escapes", () => {
  assert.ok(readsFinal("SELECT * FROM `a``b`.`c\\`d` FINAL", "a`b", "c`d"));
  assert.ok(readsFinal("select * from a . b final", "a", "b"));
  assert.not.ok(readsFinal("SELECT * FROM a.bc FINAL", "a", "b"));
  assert.not.ok(readsFinal("SELECT * FROM a.b FINALLY", "a", "b"));
});

pure("reservedTableNames and tableNameConflict", () => {
  const names = reservedTableNames();
  assert.equal(names, [...viewNames(), REJECTED_TABLE]);
  assert.equal([...names].sort(), ["aliases", "groups", "identifies", "pages", REJECTED_TABLE, "screens", "tracks", "users"]);
  for (const name of names) assert.match(tableNameConflict(name) ?? "", name);
  assert.is(tableNameConflict("events"), undefined);
  assert.is(tableNameConflict("Users"), undefined, "ClickHouse names are case-sensitive");
});

pure("viewsDdl replaces only the views it is told are ours", () => {
  for (const dialect of ["legacy", "current"] as Dialect[]) {
    const ddl = viewsDdl(dialect, "d", "events", new Set(["tracks"]));
    const replacing = ddl.filter((q) => /^(DROP|CREATE OR REPLACE)/.test(q));
    assert.is(replacing.length, 1, dialect);
    assert.match(replacing[0]!, "`d`.`tracks`");
    assert.is(ddl.filter((q) => q.startsWith("CREATE VIEW ")).length, dialect === "legacy" ? viewNames().length : viewNames().length - 1);
  }
});

pure.run();

// ---------------------------------------------------------------- current ClickHouse, chdb

const current = suite("current ClickHouse (chdb)");

current("system.tables rows: our views and rejected_messages are ours; a user's objects conflict", () => {
  const ours = "mig_ours";
  const theirs = "mig_theirs";
  const migration = (ownedAlready: Set<string>) => [
    ...tableDdl("current", ours, "events"),
    rejectedTableDdl("current", ours),
    ...viewsDdl("current", ours, "events", ownedAlready),
  ];
  const job = {
    database: ours,
    ddl: [
      ...migration(new Set()),
      // the second migration replaces every view (CREATE OR REPLACE runs on current ClickHouse)
      ...migration(new Set(viewNames())),
      `CREATE DATABASE ${theirs}`,
      `CREATE TABLE ${theirs}.users (id UInt32) ENGINE = MergeTree ORDER BY id`,
      `CREATE TABLE ${theirs}.events (type String) ENGINE = MergeTree ORDER BY type`,
      `CREATE VIEW ${theirs}.tracks AS SELECT type FROM ${theirs}.events`,
      `INSERT INTO ${ours}.${REJECTED_TABLE} FORMAT JSONEachRow\n${retriedRejection((s) => `2026-11-23 10:00:0${s}.500`)}`,
    ],
    inserts: [],
    queries: [existingObjectsQuery(ours), existingObjectsQuery(theirs), COLUMNS_OF_REJECTED(ours), FINAL_REJECTED(ours)],
  };
  const run = spawnSync("python3", [join(root, "test", "chdb_run.py")], { input: JSON.stringify(job), encoding: "utf8", timeout: 120_000 });
  assert.is(run.status, 0, run.stderr);
  const { version, results } = JSON.parse(run.stdout) as { version: string; results: Record<string, unknown>[][] };
  assert.ok(Number(version.split(".")[0]) >= 23, `current ClickHouse, got ${version}`);
  const [oursRows, theirsRows, columns, final] = results as [TableRow[], TableRow[], { name: string; type: string }[], unknown[]];
  assert.equal(oursRows.map((r) => r.name).sort(), [...reservedTableNames()].sort());
  const mine = classifyExisting(oursRows, ours, "events");
  assert.equal(mine.conflicts, [], `chdb ${version}`);
  assert.equal([...mine.ours].sort(), [...reservedTableNames()].sort());
  assert.equal(classifyExisting(theirsRows, theirs, "events").conflicts, [`${theirs}.tracks (View)`, `${theirs}.users (MergeTree)`]);
  assert.equal(
    columns.map((c) => [c.name, c.type]),
    REJECTED_COLUMNS.current,
  );
  assert.equal(final, [{ received_at: "2026-11-23 10:00:02.500", reasons: ["batch[3].event: string (required)"] }]);
});

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
  const failed = await stack.run("sink/setup.js").then(
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
  const refused = await migrate(ch, { ...config, database: db }).then(
    () => "",
    (e: Error) => e.message,
  );
  assert.match(refused, `${db}.tracks (View)`);
  assert.equal(await tablesOf(db), before);
  assert.equal(await select(`SELECT x FROM ${db}.tracks`), [{ x: 7 }]);
  // a second conflict: both are named in the one error
  await ch.command({ query: `CREATE TABLE ${db}.${REJECTED_TABLE} (x UInt8) ENGINE = Log` });
  const both = await migrate(ch, { ...config, database: db }).then(
    () => "",
    (e: Error) => e.message,
  );
  assert.match(both, `${db}.tracks (View)`);
  assert.match(both, `${db}.${REJECTED_TABLE} (Log)`);
});

live("(c) migrating twice works: our views are recognised from system.tables and replaced", async () => {
  const db = fresh("c");
  const cfg = { ...config, database: db };
  assert.is((await migrate(ch, cfg)).dialect, "legacy");
  const rows = await select<TableRow>(existingObjectsQuery(db));
  assert.equal(rows.map((r) => r.name).sort(), [...reservedTableNames()].sort(), "every reserved name created");
  const verdict = classifyExisting(rows, db, "events");
  assert.equal(verdict.conflicts, []);
  assert.equal([...verdict.ours].sort(), [...reservedTableNames()].sort());
  // an older definition of one of our views (it reads events FINAL) is replaced by the current one
  await ch.command({ query: `DROP TABLE ${db}.tracks` });
  await ch.command({ query: `CREATE VIEW ${db}.tracks AS SELECT message_id FROM ${db}.events FINAL` });
  await migrate(ch, cfg);
  const columns = await select<{ name: string }>(`SELECT name FROM system.columns WHERE database = '${db}' AND table = 'tracks'`);
  assert.ok(
    columns.some((c) => c.name === "event"),
    "tracks has the current definition again",
  );
  await migrate(ch, cfg);
});

live("rejected_messages on 18.16: exactly its columns; a retried refusal is one row under FINAL", async () => {
  const db = fresh("r");
  await migrate(ch, { ...config, database: db });
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
  await stack.run("sink/setup.js", env);
  await ch.command({ query: `ALTER TABLE ${env.CLICKHOUSE_DATABASE}.events DROP COLUMN extra` });
  const sink = stack.spawn("sink/main.js", env);
  const { code } = await sink.exited;
  assert.is(code, 1, sink.output());
  assert.match(sink.output(), /lacks column\(s\) extra: run npm run setup/);
  await stack.run("sink/setup.js", env); // the migration adds the column back
  const [found] = await select<{ n: string }>(
    `SELECT count() AS n FROM system.columns WHERE database = '${env.CLICKHOUSE_DATABASE}' AND table = 'events' AND name = 'extra'`,
  );
  assert.is(found!.n, "1");
});

live.run();
