/**
 * The ClickHouse model in cluster mode (CLICKHOUSE_CLUSTER), pure: the DDL setup runs ON CLUSTER
 * (Replicated `_local` tables, Distributed tables over them) and which existing objects of a
 * cluster are ours. The live side is test/faults/cluster (every node's engines, the scenarios)
 * and the analyst, pipeline and refused-item tests run again in cluster mode there.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { feeds, viewsDdl } from "../../../../schemas/clickhouse/analyst";
import { migrationsTableDdl, rejectedTableDdl } from "../../../../schemas/clickhouse/tables";
import { addColumnsDdl, retypeColumnsDdl, tableDdl } from "../../../../schemas/clickhouse/events";
import { partitionsQuery } from "../../../../schemas/clickhouse/partitions";
import { classifyExisting, clusterObjectNames, readsDistributed, type TableRow } from "../../../../deploy/setup/ownership";

test("one server: no ON CLUSTER, plain engines, event_date MATERIALIZED (unchanged)", () => {
  const ddl = tableDdl("legacy", "an", "events").join("\n");
  assert.not.match(ddl, /ON CLUSTER|Replicated|Distributed/);
  assert.match(ddl, /event_date Date MATERIALIZED/);
  assert.match(ddl, /ENGINE = ReplacingMergeTree\(received_at\)/);
});

test("a cluster: events_local replicated per shard, events Distributed by halfMD5(message_id), all ON CLUSTER", () => {
  const [database, local, distributed, ...rest] = tableDdl("legacy", "an", "events", undefined, "pipeline");
  assert.is(rest.length, 0);
  assert.is(database, "CREATE DATABASE IF NOT EXISTS `an` ON CLUSTER `pipeline`");
  assert.match(local!, /^CREATE TABLE IF NOT EXISTS `an`\.`events_local` ON CLUSTER `pipeline` \(/);
  assert.match(
    local!,
    /ENGINE = ReplicatedReplacingMergeTree\('\/clickhouse\/tables\/\{shard\}\/an\/events_local', '\{replica\}', received_at\)/,
  );
  assert.match(local!, /event_date Date DEFAULT toDate\(ifNull\(original_timestamp, received_at\), 'UTC'\)/);
  assert.match(local!, /ORDER BY \(workspace_id, event_date, type, message_id\)/);
  assert.is(
    distributed,
    "CREATE TABLE IF NOT EXISTS `an`.`events` ON CLUSTER `pipeline` AS `an`.`events_local`\n" +
      "ENGINE = Distributed('pipeline', 'an', 'events_local', halfMD5(message_id))",
  );
});

test("a cluster: a migration adds columns ON CLUSTER to events_local, then the Distributed table (made again on 18.16)", () => {
  const existing = new Set(["message_id"]);
  const current = addColumnsDdl("current", "an", "events", existing, "pipeline");
  const legacy = addColumnsDdl("legacy", "an", "events", existing, "pipeline");
  const locals = (ddl: string[]) => ddl.filter((q) => q.startsWith("ALTER TABLE `an`.`events_local` ON CLUSTER `pipeline` ADD COLUMN"));
  assert.ok(locals(current).length > 0 && locals(current).length === locals(legacy).length, "one ALTER per added column of _local");
  assert.match(current[current.length - 1]!, /^ALTER TABLE `an`\.`events` ON CLUSTER `pipeline` ADD COLUMN .*, ADD COLUMN /);
  // 18.16 refuses ALTER ON CLUSTER of a Distributed table in a cluster with internal_replication (code 371)
  assert.not.ok(
    legacy.some((q) => q.startsWith("ALTER TABLE `an`.`events` ")),
    legacy.join("\n"),
  );
  assert.equal(legacy.slice(-2), [
    "DROP TABLE IF EXISTS `an`.`events` ON CLUSTER `pipeline`",
    tableDdl("legacy", "an", "events", undefined, "pipeline")[2],
  ]);
  assert.equal(
    addColumnsDdl(
      "legacy",
      "an",
      "events",
      new Set(
        locals(legacy)
          .map((q) => q.split(" ")[8]!)
          .concat("message_id"),
      ),
      "pipeline",
    ),
    [],
  );
});

test("a cluster: retention reads the partitions of every shard", () => {
  assert.match(partitionsQuery("an", "events"), /FROM system\.parts\nWHERE database = 'an' AND table = 'events' AND active/);
  assert.match(
    partitionsQuery("an", "events", "pipeline"),
    /FROM cluster\('pipeline', system, parts\)\nWHERE database = 'an' AND table = 'events_local'/,
  );
});

test("a cluster: refused items, users, identities and their feeds; views read the Distributed table", () => {
  const [rejectedLocal, rejected] = rejectedTableDdl("legacy", "an", "pipeline");
  assert.match(rejectedLocal!, /`rejected_messages_local` ON CLUSTER `pipeline`[\s\S]*ReplicatedReplacingMergeTree\(/);
  assert.match(rejected!, /Distributed\('pipeline', 'an', 'rejected_messages_local', cityHash64\(workspace_id, rejection_id\)\)/);
  const [users, identities] = feeds("legacy", "an", "events", "pipeline");
  assert.match(
    users!.tableDdl[0]!,
    /`users_local` ON CLUSTER `pipeline`[\s\S]*ReplicatedAggregatingMergeTree\('\/clickhouse\/tables\/\{shard\}\/an\/users_local', '\{replica\}'\)/,
  );
  assert.match(users!.tableDdl[1]!, /Distributed\('pipeline', 'an', 'users_local'/);
  // each server's view reads the rows inserted there and feeds its own _local table
  assert.match(users!.viewDdl, /^CREATE MATERIALIZED VIEW `an`\.`users_mv` ON CLUSTER `pipeline` TO `an`\.`users_local` AS SELECT/);
  assert.match(users!.viewDdl, /FROM `an`\.`events_local`\n/);
  assert.match(identities!.viewDdl, /TO `an`\.`identities_local`[\s\S]*FROM `an`\.`events_local`\n/);
  // the backfill reads and writes every shard
  assert.match(users!.backfill, /^INSERT INTO `an`\.`users` SELECT[\s\S]*FROM `an`\.`events`\n/);
  for (const view of viewsDdl("legacy", "an", "events", new Set(["tracks"]), "pipeline")) {
    assert.match(view, /ON CLUSTER `pipeline`/);
    if (view.startsWith("CREATE")) assert.match(view, /FROM `an`\.`events` FINAL/);
  }
  assert.match(
    migrationsTableDdl("an", "pipeline"),
    /ReplicatedMergeTree\('\/clickhouse\/tables\/all\/an\/schema_migrations', '\{replica\}'\)/,
  );
});

/** system.tables rows as 18.16 stores what setup creates on a cluster (engine clauses as stored). */
function clusterRows(db: string): TableRow[] {
  const distributed = (name: string, key: string): TableRow => ({
    name,
    engine: "Distributed",
    sorting_key: "",
    create_table_query: `CREATE TABLE ${db}.${name} ( a String) ENGINE = Distributed('pipeline', '${db}', '${name}_local', ${key})`,
  });
  const replicated = (name: string, engine: string, key: string): TableRow => ({
    name,
    engine,
    sorting_key: key,
    create_table_query: `CREATE TABLE ${db}.${name} ( a String) ENGINE = ${engine}('/clickhouse/tables/{shard}/${db}/${name}', '{replica}') ORDER BY (${key})`,
  });
  const mv = (name: string, target: string): TableRow => ({
    name,
    engine: "MaterializedView",
    sorting_key: "",
    create_table_query: `CREATE MATERIALIZED VIEW ${db}.${name} TO ${db}.${target} ( a String) AS SELECT a FROM ${db}.events_local  GROUP BY a`,
  });
  return [
    distributed("events", "halfMD5(message_id)"),
    replicated("events_local", "ReplicatedReplacingMergeTree", "workspace_id, event_date, type, message_id"),
    distributed("users", "cityHash64(workspace_id, user_id)"),
    replicated("users_local", "ReplicatedAggregatingMergeTree", "workspace_id, user_id"),
    distributed("identities", "cityHash64(workspace_id, anonymous_id)"),
    replicated("identities_local", "ReplicatedAggregatingMergeTree", "workspace_id, anonymous_id, user_id"),
    distributed("rejected_messages", "cityHash64(workspace_id, rejection_id)"),
    replicated("rejected_messages_local", "ReplicatedReplacingMergeTree", "workspace_id, rejection_id"),
    replicated("schema_migrations", "ReplicatedMergeTree", "step"),
    mv("users_mv", "users_local"),
    mv("identities_mv", "identities_local"),
    {
      name: "tracks",
      engine: "View",
      sorting_key: "",
      create_table_query: `CREATE VIEW ${db}.tracks AS SELECT a FROM ${db}.events FINAL WHERE type = 'track'`,
    },
  ];
}

test("a cluster: what setup made is ours; a one-server table or another Distributed table is not", () => {
  const rows = clusterRows("an");
  const mine = classifyExisting(rows, "an", "events", "pipeline");
  assert.equal(mine.conflicts, []);
  assert.equal([...mine.ours].sort(), rows.map((r) => r.name).sort());
  assert.ok(clusterObjectNames("events", "pipeline").includes("events_local"));

  const single = rows.map((r) => (r.name === "users_local" ? { ...r, engine: "AggregatingMergeTree" } : r));
  assert.equal(classifyExisting(single, "an", "events", "pipeline").conflicts, ["an.users_local (AggregatingMergeTree)"]);
  const elsewhere = rows.map((r) =>
    r.name === "users" ? { ...r, create_table_query: r.create_table_query.replace("'users_local'", "'people'") } : r,
  );
  assert.equal(classifyExisting(elsewhere, "an", "events", "pipeline").conflicts, ["an.users (Distributed)"]);
  const otherCluster = rows.map((r) =>
    r.name === "events" ? { ...r, create_table_query: r.create_table_query.replace("'pipeline'", "'other'") } : r,
  );
  assert.equal(classifyExisting(otherCluster, "an", "events", "pipeline").conflicts, ["an.events (Distributed)"]);
  // one server's tables seen from a cluster setup: a plain events table is not ours to put under Distributed
  const plainEvents: TableRow = {
    name: "events",
    engine: "ReplacingMergeTree",
    sorting_key: "workspace_id, event_date, type, message_id",
    create_table_query: "",
  };
  assert.equal(classifyExisting([plainEvents], "an", "events", "pipeline").conflicts, ["an.events (ReplacingMergeTree)"]);
});

test("readsDistributed: quoted strings or identifiers, all three arguments must match", () => {
  const stored = "CREATE TABLE d.e (a String) ENGINE = Distributed('pipeline', 'd', 'e_local', halfMD5(a))";
  assert.ok(readsDistributed(stored, "pipeline", "d", "e_local"));
  assert.ok(readsDistributed("ENGINE = Distributed(pipeline, d, e_local, rand())", "pipeline", "d", "e_local"));
  assert.ok(readsDistributed("ENGINE = Distributed('pi\\'pe', `my-db`, 'e_local')", "pi'pe", "my-db", "e_local"));
  assert.not.ok(readsDistributed(stored, "pipeline", "d", "e"));
  assert.not.ok(readsDistributed(stored, "pipeline", "x", "e_local"));
  assert.not.ok(readsDistributed("ENGINE = MergeTree ORDER BY a", "pipeline", "d", "e_local"));
});

test("retyping event on a cluster: the local tables ON CLUSTER, then the Distributed table; nothing when the type is right or on 18.16", () => {
  const older = new Map([["event", "String"]]);
  assert.equal(retypeColumnsDdl("current", "db", "events", older, "c1"), [
    "ALTER TABLE `db`.`events_local` ON CLUSTER `c1` MODIFY COLUMN event LowCardinality(String)",
    "ALTER TABLE `db`.`events` ON CLUSTER `c1` MODIFY COLUMN event LowCardinality(String)",
  ]);
  assert.equal(retypeColumnsDdl("current", "db", "events", new Map([["event", "LowCardinality(String)"]]), "c1"), []);
  assert.equal(retypeColumnsDdl("legacy", "db", "events", older, "c1"), []);
  assert.equal(retypeColumnsDdl("current", "db", "events", new Map(), undefined), [], "no such column: nothing to retype");
});

test.run();
