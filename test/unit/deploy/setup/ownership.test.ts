/**
 * Migrate never drops, replaces or writes to an object it did not create: the pure decision
 * (deploy/setup/ownership.ts) on system.tables rows as each ClickHouse version stores them, the
 * reserved names, and which months retention drops. Setup and migrate against servers are
 * test/live/migrate.test.ts.
 */
import { suite } from "uvu";
import { type TableRow, classifyExisting, readsFinal, feedsFrom } from "../../../../deploy/setup/ownership";
import {
  REJECTED_TABLE,
  recentExpiryDeletionsQuery,
  rejectedExpiryDeletionDdl,
  rejectedRetentionDdl,
  rejectedTableDdl,
  reservedTableNames,
  tableNameConflict,
} from "../../../../schemas/clickhouse/tables";
import * as assert from "uvu/assert";
import { type Dialect } from "../../../../schemas/clickhouse/sql";
import { viewsDdl, viewNames } from "../../../../schemas/clickhouse/analyst";
import { retentionDdl } from "../../../../schemas/clickhouse/events";
import { firstKeptDay, partitionsToDrop } from "../../../../schemas/clickhouse/partitions";
import { AUDIT_SORTING_KEY, AUDIT_TABLE } from "../../../../schemas/clickhouse/audit";

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

pure("admin_audit is ours only as a MergeTree ordered by (workspace_id, at, audit_id)", () => {
  const audit = (engine: string, sorting_key: string): TableRow => ({ name: AUDIT_TABLE, engine, create_table_query: "", sorting_key });
  assert.is(AUDIT_SORTING_KEY, "workspace_id,at,audit_id");
  const ours = classifyExisting([audit("MergeTree", "workspace_id, at, audit_id")], "d", "events");
  assert.equal([[...ours.ours], ours.conflicts], [[AUDIT_TABLE], []]);
  assert.equal(classifyExisting([audit("ReplacingMergeTree", "workspace_id, at, audit_id")], "d", "events").conflicts, [
    "d.admin_audit (ReplacingMergeTree)",
  ]);
  assert.equal(classifyExisting([audit("MergeTree", "at, audit_id")], "d", "events").conflicts, ["d.admin_audit (MergeTree)"]);
  assert.equal(classifyExisting([audit("Log", "")], "d", "events").conflicts, ["d.admin_audit (Log)"]);
});

pure("readsFinal unquotes backquotes, doubled and backslash escapes", () => {
  assert.ok(readsFinal("SELECT * FROM `a``b`.`c\\`d` FINAL", "a`b", "c`d"));
  assert.ok(readsFinal("select * from a . b final", "a", "b"));
  assert.not.ok(readsFinal("SELECT * FROM a.bc FINAL", "a", "b"));
  assert.not.ok(readsFinal("SELECT * FROM a.b FINALLY", "a", "b"));
});

pure("reservedTableNames and tableNameConflict", () => {
  const names = reservedTableNames();
  assert.equal([...names].sort(), [
    AUDIT_TABLE,
    "aliases",
    "catalog_shapes",
    "catalog_shapes_mv",
    "delivery_failures",
    "event_catalog",
    "groups",
    "identifies",
    "identities",
    "identities_mv",
    "pages",
    "privacy_requests",
    "property_catalog",
    REJECTED_TABLE,
    "schema_migrations",
    "screens",
    "tracks",
    "users",
    "users_mv",
  ]);
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

pure("users, identities, their feeds and schema_migrations: ours by engine, key and what they read and write", () => {
  const table = (name: string, engine: string, sorting_key: string, create_table_query = ""): TableRow => ({
    name,
    engine,
    sorting_key,
    create_table_query,
  });
  const mv = (name: string, target: string, source: string) =>
    table(
      name,
      "MaterializedView",
      "",
      `CREATE MATERIALIZED VIEW d.${name} TO d.${target} (\`a\` String) AS SELECT a FROM ${source} WHERE x = 'FROM d.events'`,
    );
  const ours = classifyExisting(
    [
      table("users", "AggregatingMergeTree", "workspace_id, user_id"),
      table("identities", "AggregatingMergeTree", "workspace_id, anonymous_id, user_id"),
      mv("users_mv", "users", "d.events"),
      mv("identities_mv", "identities", "d.events"),
      table("schema_migrations", "MergeTree", "step"),
    ],
    "d",
    "events",
  );
  assert.equal(ours.conflicts, []);
  assert.is(ours.usersIsView, false);
  const older = classifyExisting([view("users", "CREATE VIEW d.users AS SELECT a FROM (SELECT a FROM d.events FINAL)")], "d", "events");
  assert.equal([[...older.ours], older.usersIsView], [["users"], true], "the users view of older releases is ours, to replace");
  const theirs = classifyExisting(
    [
      table("users", "AggregatingMergeTree", "workspace_id, user_id, x"),
      table("identities", "ReplacingMergeTree", "workspace_id, anonymous_id, user_id"),
      mv("users_mv", "identities", "d.events"), // writes elsewhere
      mv("identities_mv", "identities", "d.other"), // reads elsewhere (the literal does not count)
      table("schema_migrations", "Log", ""),
    ],
    "d",
    "events",
  );
  assert.equal(theirs.conflicts, [
    "d.identities (ReplacingMergeTree)",
    "d.identities_mv (MaterializedView)",
    "d.schema_migrations (Log)",
    "d.users (AggregatingMergeTree)",
    "d.users_mv (MaterializedView)",
  ]);
  assert.ok(feedsFrom("CREATE MATERIALIZED VIEW `d`.`m` TO `d`.`users` AS SELECT 1 FROM `d`.`ev ents`", "d", "ev ents", "users"));
});

pure("retention: partitionsToDrop keeps every month holding a day of the last N; retentionDdl only changes what differs", () => {
  const months = ["202607", "202608", "202609", "202610", "202611", "bad", "202613"];
  // N = 60 on 2026-11-23 keeps 2026-09-25 .. 2026-11-23: July and August are wholly older.
  assert.equal(partitionsToDrop(months, "2026-11-23", 60), ["202607", "202608"]);
  // N = 54 keeps 2026-10-01 on: September's last day is the first dropped day, so September goes.
  assert.equal(partitionsToDrop(months, "2026-11-23", 54), ["202607", "202608", "202609"]);
  assert.equal(partitionsToDrop(months, "2026-11-23", 55), ["202607", "202608"], "keeping 2026-09-30 keeps September");
  assert.equal(partitionsToDrop(months, "2026-11-23", 1), ["202607", "202608", "202609", "202610"]);
  const created = (ttl: string) =>
    `CREATE TABLE d.events (a Date) ENGINE = ReplacingMergeTree ORDER BY a ${ttl}SETTINGS index_granularity = 8192`;
  assert.equal(retentionDdl("legacy", "d", "events", created(""), 30), [], "18.16: no TTL");
  assert.equal(retentionDdl("current", "d", "events", created(""), undefined), []);
  assert.equal(retentionDdl("current", "d", "events", created("TTL event_date + toIntervalDay(30) "), 30), []);
  assert.equal(retentionDdl("current", "d", "events", created("TTL event_date + toIntervalDay(30) "), undefined), [
    "ALTER TABLE `d`.`events` REMOVE TTL",
  ]);
  assert.equal(
    retentionDdl("current", "d", "events", created("TTL event_date + toIntervalDay(30) "), 90).at(-1),
    "ALTER TABLE `d`.`events` MODIFY TTL event_date + toIntervalDay(90)",
  );
});

pure(
  "retention of refused items: a TTL by UTC receive day on current ClickHouse only; the 18.16 deletion's cutoff is the first day kept",
  () => {
    assert.match(rejectedTableDdl("current", "d", undefined, 30)[0]!, /\nTTL toDate\(received_at\) \+ toIntervalDay\(30\)$/);
    assert.not.match(rejectedTableDdl("current", "d")[0]!, /TTL/);
    assert.not.match(rejectedTableDdl("legacy", "d", undefined, 30)[0]!, /TTL/, "18.16 has no TTL");
    const created = (ttl: string) =>
      `CREATE TABLE d.rejected_messages (received_at DateTime64(3, 'UTC')) ENGINE = ReplacingMergeTree(received_at) ORDER BY a ${ttl}SETTINGS index_granularity = 8192`;
    assert.equal(rejectedRetentionDdl("legacy", "d", created(""), 30), []);
    assert.equal(rejectedRetentionDdl("current", "d", created(""), 30), [
      "ALTER TABLE `d`.`rejected_messages` MODIFY TTL toDate(received_at) + toIntervalDay(30)",
    ]);
    assert.equal(rejectedRetentionDdl("current", "d", created("TTL toDate(received_at) + toIntervalDay(30) "), 30), []);
    assert.equal(rejectedRetentionDdl("current", "d", created("TTL toDate(received_at) + toIntervalDay(30) "), undefined), [
      "ALTER TABLE `d`.`rejected_messages` REMOVE TTL",
    ]);
    assert.equal(rejectedRetentionDdl("current", "d", created(""), 30, "c"), [
      "ALTER TABLE `d`.`rejected_messages_local` ON CLUSTER `c` MODIFY TTL toDate(received_at) + toIntervalDay(30)",
    ]);
    // N = 30 on 2026-11-23 keeps 2026-10-25 .. 2026-11-23.
    const firstKept = firstKeptDay("2026-11-23", 30) / 1000;
    assert.is(new Date(firstKept * 1000).toISOString(), "2026-10-25T00:00:00.000Z");
    assert.is(
      rejectedExpiryDeletionDdl("d", firstKept, "c"),
      `ALTER TABLE \`d\`.\`rejected_messages_local\` ON CLUSTER \`c\` DELETE WHERE received_at < toDateTime(${firstKept})`,
    );
    // ClickHouse stores the mutation as "DELETE WHERE <condition>"; the query finds it by that start.
    const start = /startsWith\(command, '([^']*)'\)/.exec(recentExpiryDeletionsQuery("d", "c"))?.[1];
    assert.ok(start !== undefined && rejectedExpiryDeletionDdl("d", firstKept).includes(` ${start}${firstKept})`));
    assert.match(recentExpiryDeletionsQuery("d", "c"), /table = 'rejected_messages_local'/);
  },
);

pure.run();
