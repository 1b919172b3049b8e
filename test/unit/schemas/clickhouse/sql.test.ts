/**
 * The SQL every ClickHouse table shares (schemas/clickhouse/sql.ts), as text: the dialect a
 * server version gets, the types and expressions of each dialect, what a table gains on a
 * cluster (`_local`, ON CLUSTER, Replicated and Distributed engines), the TTL statements, and the
 * quoting of hostile names and strings (18.16 has no query parameters, so this is all there is).
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  SHARDING_KEYS,
  TYPES,
  alterDistributedDdl,
  clusterSettings,
  columnsQuery,
  dialectFor,
  distributedDdl,
  engine,
  epoch,
  jsonString,
  onCluster,
  quoteIdent,
  quoteString,
  storageName,
  ttlDdl,
} from "../../../../schemas/clickhouse/sql";

test("dialectFor: major version 20 and later is current; earlier, or a version that cannot be read, is legacy", () => {
  assert.is(dialectFor("20.1.2.4"), "current");
  assert.is(dialectFor("24.8.14.39"), "current");
  assert.is(dialectFor("100.1"), "current");
  assert.is(dialectFor("19.17.9.60"), "legacy");
  assert.is(dialectFor("18.16.1"), "legacy");
  // A number, not text: "2" sorts after "19" but is older.
  assert.is(dialectFor("2.0"), "legacy");
  assert.is(dialectFor(""), "legacy");
  assert.is(dialectFor("unknown"), "legacy");
});

test("TYPES: DateTime64 in UTC and LowCardinality on current ClickHouse, plain DateTime and String on 18.16", () => {
  assert.equal(TYPES, {
    current: { time: "DateTime64(3, 'UTC')", lowString: "LowCardinality(String)" },
    legacy: { time: "DateTime", lowString: "String" },
  });
});

test("storageName and onCluster leave a table as it is on one server; on a cluster, `_local` and ON CLUSTER", () => {
  assert.is(storageName("events"), "events");
  assert.is(storageName("events", "main"), "events_local");
  assert.is(onCluster(), "");
  assert.is(onCluster("main"), " ON CLUSTER `main`");
  assert.is(onCluster("a`b"), " ON CLUSTER `a\\`b`");
});

test("engine on one server: the family with its arguments, or the bare family without any", () => {
  assert.is(engine("ReplacingMergeTree", "received_at", "db", "events"), "ReplacingMergeTree(received_at)");
  assert.is(engine("MergeTree", "", "db", "schema_migrations"), "MergeTree");
  // `shared` means nothing without a cluster.
  assert.is(engine("MergeTree", "", "db", "schema_migrations", undefined, true), "MergeTree");
});

test("engine on a cluster: Replicated, under a path per shard and table, with the replica macro before the arguments", () => {
  assert.is(
    engine("ReplacingMergeTree", "received_at", "an", "events_local", "main"),
    "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/an/events_local', '{replica}', received_at)",
  );
  assert.is(
    engine("AggregatingMergeTree", "", "an", "users_local", "main"),
    "ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/an/users_local', '{replica}')",
  );
});

test("engine on a cluster, shared: one path for every shard, so every server keeps a copy", () => {
  assert.is(
    engine("MergeTree", "", "an", "schema_migrations", "main", true),
    "ReplicatedMergeTree('/clickhouse/tables/all/an/schema_migrations', '{replica}')",
  );
});

test("engine writes the replication path as an escaped string literal", () => {
  assert.is(
    engine("MergeTree", "", "o'db", "t\\x", "main"),
    "ReplicatedMergeTree('/clickhouse/tables/{shard}/o\\'db/t\\\\x', '{replica}')",
  );
});

test("SHARDING_KEYS hash the workspace with what identifies a row of each table", () => {
  assert.equal(SHARDING_KEYS, {
    rejected: "cityHash64(workspace_id, rejection_id)",
    users: "cityHash64(workspace_id, user_id)",
    identities: "cityHash64(workspace_id, anonymous_id)",
  });
});

test("distributedDdl creates the Distributed table ON CLUSTER over `_local`, naming both as string literals in its engine", () => {
  assert.is(
    distributedDdl("an", "users", "main", "cityHash64(workspace_id, user_id)"),
    "CREATE TABLE IF NOT EXISTS `an`.`users` ON CLUSTER `main` AS `an`.`users_local`\n" +
      "ENGINE = Distributed('main', 'an', 'users_local', cityHash64(workspace_id, user_id))",
  );
});

test("distributedDdl escapes hostile names as identifiers and as literals", () => {
  // database d`b, table t'x, cluster c\1
  assert.is(
    distributedDdl("d`b", "t'x", "c\\1", "rand()"),
    "CREATE TABLE IF NOT EXISTS `d\\`b`.`t'x` ON CLUSTER `c\\\\1` AS `d\\`b`.`t'x_local`\n" +
      "ENGINE = Distributed('c\\\\1', 'd`b', 't\\'x_local', rand())",
  );
});

test("alterDistributedDdl on current ClickHouse: the ALTER itself, of the Distributed table ON CLUSTER", () => {
  assert.equal(alterDistributedDdl("current", "an", "events", "main", "halfMD5(message_id)", "ADD COLUMN IF NOT EXISTS x String"), [
    "ALTER TABLE `an`.`events` ON CLUSTER `main` ADD COLUMN IF NOT EXISTS x String",
  ]);
});

test("alterDistributedDdl on 18.16: the Distributed table dropped ON CLUSTER and made again over `_local`, the ALTER unused", () => {
  assert.equal(alterDistributedDdl("legacy", "an", "events", "main", "halfMD5(message_id)", "ADD COLUMN IF NOT EXISTS x String"), [
    "DROP TABLE IF EXISTS `an`.`events` ON CLUSTER `main`",
    "CREATE TABLE IF NOT EXISTS `an`.`events` ON CLUSTER `main` AS `an`.`events_local`\n" +
      "ENGINE = Distributed('main', 'an', 'events_local', halfMD5(message_id))",
  ]);
});

/** A stored CREATE query as system.tables holds it, with `ttl` (a clause and a space, or nothing) before its settings. */
const created = (ttl: string, settings = "SETTINGS index_granularity = 8192") =>
  "CREATE TABLE an.events (`message_id` String, `event_date` Date) ENGINE = ReplacingMergeTree(received_at) " +
  `PARTITION BY toYYYYMM(event_date) ORDER BY (workspace_id, event_date, message_id) ${ttl}${settings}`;
const target = "`an`.`events`";

test("ttlDdl: nothing when the stored TTL is the wanted one, spaces aside", () => {
  const stored = created("TTL event_date + toIntervalDay(30) ");
  assert.equal(ttlDdl(target, stored, "TTL event_date + toIntervalDay(30)"), []);
  assert.equal(ttlDdl(target, stored, "TTL event_date+toIntervalDay( 30 )", ["ALTER TABLE x MODIFY SETTING s = 1"]), []);
});

test("ttlDdl: another TTL is modified, after the statements it relies on", () => {
  const stored = created("TTL event_date + toIntervalDay(30) ");
  assert.equal(ttlDdl(target, stored, "TTL event_date + toIntervalDay(90)"), [
    "ALTER TABLE `an`.`events` MODIFY TTL event_date + toIntervalDay(90)",
  ]);
  assert.equal(
    ttlDdl(target, stored, "TTL event_date + toIntervalDay(90)", ["ALTER TABLE `an`.`events` MODIFY SETTING ttl_only_drop_parts = 1"]),
    [
      "ALTER TABLE `an`.`events` MODIFY SETTING ttl_only_drop_parts = 1",
      "ALTER TABLE `an`.`events` MODIFY TTL event_date + toIntervalDay(90)",
    ],
  );
});

test("ttlDdl: a table without a TTL gains the wanted one", () => {
  assert.equal(ttlDdl(target, created(""), "TTL event_date + toIntervalDay(7)", ["B"]), [
    "B",
    "ALTER TABLE `an`.`events` MODIFY TTL event_date + toIntervalDay(7)",
  ]);
});

test("ttlDdl: no TTL wanted removes the table's TTL, or does nothing when it has none", () => {
  assert.equal(ttlDdl(target, created("TTL event_date + toIntervalDay(30) "), undefined, ["B"]), ["ALTER TABLE `an`.`events` REMOVE TTL"]);
  assert.equal(ttlDdl(target, created(""), undefined, ["B"]), []);
  // The setting a removed TTL leaves behind is not a TTL.
  assert.equal(ttlDdl(target, created("", "SETTINGS ttl_only_drop_parts = 1, index_granularity = 8192"), undefined), []);
});

test("ttlDdl reads a TTL that ends the query, or one broken over lines", () => {
  const last = created("TTL event_date + toIntervalDay(30)", "");
  assert.equal(ttlDdl(target, last, "TTL event_date + toIntervalDay(30)"), []);
  assert.equal(ttlDdl(target, last, undefined), ["ALTER TABLE `an`.`events` REMOVE TTL"]);
  const lines =
    "CREATE TABLE an.events (x Date)\nENGINE = MergeTree\nORDER BY x\nTTL x +\n    toIntervalDay(30)\nSETTINGS index_granularity = 8192";
  assert.equal(ttlDdl(target, lines, "TTL x + toIntervalDay(30)"), []);
  assert.equal(ttlDdl(target, lines, "TTL x + toIntervalDay(31)"), ["ALTER TABLE `an`.`events` MODIFY TTL x + toIntervalDay(31)"]);
});

test("columnsQuery lists name and type from system.columns, database and table as escaped literals", () => {
  assert.is(columnsQuery("an", "events"), "SELECT name, type FROM system.columns WHERE database = 'an' AND table = 'events'");
  assert.is(
    columnsQuery("a' OR 1=1 --", "t\\"),
    "SELECT name, type FROM system.columns WHERE database = 'a\\' OR 1=1 --' AND table = 't\\\\'",
  );
});

test("jsonString on current ClickHouse follows the exact path in one JSONExtractString", () => {
  assert.is(jsonString("current", "traits", "email"), "JSONExtractString(traits, 'email')");
  assert.is(jsonString("current", "context", "library", "name"), "JSONExtractString(context, 'library', 'name')");
});

test("jsonString on 18.16 narrows to each key's raw value before extracting the last key's string", () => {
  assert.is(jsonString("legacy", "traits", "email"), "visitParamExtractString(traits, 'email')");
  assert.is(
    jsonString("legacy", "context", "library", "name"),
    "visitParamExtractString(visitParamExtractRaw(context, 'library'), 'name')",
  );
  assert.is(
    jsonString("legacy", "properties", "a", "b", "c"),
    "visitParamExtractString(visitParamExtractRaw(visitParamExtractRaw(properties, 'a'), 'b'), 'c')",
  );
});

test("jsonString escapes a quote in a key, in both dialects", () => {
  assert.is(jsonString("current", "properties", "it's"), "JSONExtractString(properties, 'it\\'s')");
  assert.is(jsonString("legacy", "properties", "it's", "x"), "visitParamExtractString(visitParamExtractRaw(properties, 'it\\'s'), 'x')");
});

test("epoch is time zero in each dialect's time type", () => {
  assert.is(epoch("current"), "toDateTime64(0, 3, 'UTC')");
  assert.is(epoch("legacy"), "toDateTime(0)");
});

test("quoteString quotes text, escaping backslashes, quotes and control characters", () => {
  assert.is(quoteString("events"), "'events'");
  assert.is(quoteString(""), "''");
  assert.is(quoteString("o'brien"), "'o\\'brien'");
  assert.is(quoteString("a\\b"), "'a\\\\b'");
  // A backslash before a quote: both escaped, so the quote cannot end the literal.
  assert.is(quoteString("\\'"), "'\\\\\\''");
  assert.is(quoteString("x' OR 1=1 --"), "'x\\' OR 1=1 --'");
  assert.is(quoteString("a\nb\rc\td\be\ff\0g"), "'a\\nb\\rc\\td\\be\\ff\\0g'");
});

test("quoteString leaves backticks, double quotes and other text as they are", () => {
  assert.is(quoteString('`id` "x" é 😀 \u0001'), "'`id` \"x\" é 😀 \u0001'");
});

test("quoteIdent backquotes a name, escaping backslashes and backticks only", () => {
  assert.is(quoteIdent("events"), "`events`");
  assert.is(quoteIdent("a`b"), "`a\\`b`");
  assert.is(quoteIdent("a\\b"), "`a\\\\b`");
  // A backslash before a backtick: both escaped, so the backtick cannot end the name.
  assert.is(quoteIdent("\\`"), "`\\\\\\``");
  assert.is(quoteIdent('o\'x "y"'), '`o\'x "y"`');
});

test("clusterSettings: inserts synchronous and not deduplicated on a cluster, nothing on one server", () => {
  assert.equal(clusterSettings(), {});
  assert.equal(clusterSettings("main"), { insert_distributed_sync: 1, insert_deduplicate: 0 });
});

test.run();
