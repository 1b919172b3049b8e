import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  addColumnDdl,
  columnName,
  dropColumnDdl,
  extractExpression,
  fillPartitionsQuery,
  materializeColumnDdl,
  optimizePartitionDdl,
  suggestedType,
} from "../../../../schemas/clickhouse/materialize";

test("columnName: prefix by source; keys that would need renaming are refused by name", () => {
  assert.equal(columnName("properties", "plan"), { ok: true, column: "prop_plan" });
  assert.equal(columnName("traits", "_company_size"), { ok: true, column: "trait__company_size" });
  assert.equal(columnName("context", "locale"), { ok: true, column: "ctx_locale" });
  for (const bad of ["utm-source", "a.b", "1st", "", "x".repeat(65), "plan`; DROP TABLE events; --", "$os"]) {
    const named = columnName("properties", bad);
    assert.ok(!named.ok && named.error.includes(JSON.stringify(bad)), bad);
  }
});

test("extractExpression: exact JSONExtract* on current ClickHouse, visitParam* on 18.16, quoted key", () => {
  assert.is(extractExpression("current", { source: "properties", key: "plan", type: "String" }), "JSONExtractString(properties, 'plan')");
  assert.is(extractExpression("legacy", { source: "traits", key: "age", type: "Int64" }), "visitParamExtractInt(traits, 'age')");
  assert.is(extractExpression("current", { source: "context", key: "ok", type: "UInt8" }), "JSONExtractBool(context, 'ok')");
  assert.is(
    extractExpression("legacy", { source: "properties", key: "revenue", type: "Float64" }),
    "visitParamExtractFloat(properties, 'revenue')",
  );
});

test("add and drop: MATERIALIZED on one server; on a cluster DEFAULT on _local ON CLUSTER, then the Distributed table", () => {
  const key = { source: "properties", key: "plan", type: "String" } as const;
  assert.equal(addColumnDdl("current", "db", "events", "prop_plan", key), [
    "ALTER TABLE `db`.`events` ADD COLUMN `prop_plan` String MATERIALIZED JSONExtractString(properties, 'plan')",
  ]);
  const current = addColumnDdl("current", "db", "events", "prop_plan", key, "c1");
  assert.equal(current.length, 2);
  assert.match(current[0]!, /^ALTER TABLE `db`\.`events_local` ON CLUSTER `c1` ADD COLUMN `prop_plan` String DEFAULT JSONExtract/);
  assert.match(current[1]!, /^ALTER TABLE `db`\.`events` ON CLUSTER `c1` ADD COLUMN `prop_plan` String DEFAULT JSONExtract/);
  // 18.16 refuses ALTER ON CLUSTER of a Distributed table: it is made again over the altered _local tables.
  const legacy = addColumnDdl("legacy", "db", "events", "prop_plan", key, "c1");
  assert.match(legacy[0]!, /^ALTER TABLE `db`\.`events_local` ON CLUSTER `c1` ADD COLUMN `prop_plan` String DEFAULT visitParam/);
  assert.ok(!legacy.slice(1).some((q) => q.startsWith("ALTER")), legacy.join("\n"));
  assert.is(legacy[1], "DROP TABLE IF EXISTS `db`.`events` ON CLUSTER `c1`");
  assert.is(
    legacy[2],
    "CREATE TABLE IF NOT EXISTS `db`.`events` ON CLUSTER `c1` AS `db`.`events_local`\nENGINE = Distributed('c1', 'db', 'events_local', halfMD5(message_id))",
  );
  assert.is(legacy.length, 3);
  assert.equal(dropColumnDdl("current", "db", "events", "prop_plan", "c1"), [
    "ALTER TABLE `db`.`events` ON CLUSTER `c1` DROP COLUMN `prop_plan`",
    "ALTER TABLE `db`.`events_local` ON CLUSTER `c1` DROP COLUMN `prop_plan`",
  ]);
  const legacyDrop = dropColumnDdl("legacy", "db", "events", "prop_plan", "c1");
  assert.is(legacyDrop[0], "ALTER TABLE `db`.`events_local` ON CLUSTER `c1` DROP COLUMN `prop_plan`", "_local first, then the remake");
  assert.equal(legacyDrop.slice(1), legacy.slice(1), "then the Distributed table made again");
  assert.equal(dropColumnDdl("legacy", "db", "events", "prop_plan"), ["ALTER TABLE `db`.`events` DROP COLUMN `prop_plan`"]);
});

test("the fill: a mutation on current ClickHouse; on 18.16 a rewrite of each month partition lacking the column", () => {
  assert.is(materializeColumnDdl("db", "events", "prop_plan"), "ALTER TABLE `db`.`events` MATERIALIZE COLUMN `prop_plan`");
  assert.match(fillPartitionsQuery("db", "events", "prop_plan"), /FROM system\.parts\n.*column = 'prop_plan'/);
  assert.match(
    fillPartitionsQuery("db", "events", "prop_plan", "c1"),
    /FROM cluster\('c1', system, parts\)\nWHERE .*table = 'events_local'/,
  );
  assert.is(optimizePartitionDdl("db", "events", "202611"), "OPTIMIZE TABLE `db`.`events` PARTITION 202611 FINAL");
  assert.throws(() => optimizePartitionDdl("db", "events", "1; DROP TABLE x"));
});

test("suggestedType follows the JSON types the catalog saw", () => {
  assert.is(suggestedType(["number"]), "Float64");
  assert.is(suggestedType(["null", "number"]), "Float64");
  assert.is(suggestedType(["boolean"]), "UInt8");
  assert.is(suggestedType(["number", "string"]), "String");
  assert.is(suggestedType([]), "String");
});

test.run();
