import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  addColumnDdl,
  columnName,
  columnTypeFor,
  dropColumnDdl,
  extractExpression,
  fillPartitionsQuery,
  keyTypesSeen,
  keyTypesSeenQuery,
  materializeColumnDdl,
  optimizePartitionDdl,
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
  // 18.16's String: a quoted value as visitParamExtractString reads it, null as '', any other value raw (as JSONExtractString)
  assert.is(
    extractExpression("legacy", { source: "properties", key: "amount", type: "String" }),
    "multiIf(startsWith(visitParamExtractRaw(properties, 'amount'), '\"'), visitParamExtractString(properties, 'amount'), " +
      "visitParamExtractRaw(properties, 'amount') = 'null', '', visitParamExtractRaw(properties, 'amount'))",
  );
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
  assert.match(
    legacy[0]!,
    /^ALTER TABLE `db`\.`events_local` ON CLUSTER `c1` ADD COLUMN `prop_plan` String DEFAULT multiIf\(startsWith\(visitParamExtractRaw/,
  );
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

test("columnTypeFor: one JSON type besides null decides the column type", () => {
  const seen = (type: string, messages = 5, workspaces = 1) => ({ type, messages, workspaces });
  assert.equal(columnTypeFor("properties", "amount", [seen("number")]), { ok: true, type: "Float64" });
  assert.equal(columnTypeFor("properties", "amount", [seen("number"), seen("null")]), { ok: true, type: "Float64" });
  assert.equal(columnTypeFor("traits", "vip", [seen("boolean")]), { ok: true, type: "UInt8" });
  for (const t of ["string", "object", "array"]) assert.equal(columnTypeFor("context", "k", [seen(t)]), { ok: true, type: "String" }, t);
});

test("columnTypeFor: two types, only null or nothing seen is an error naming what was seen and --type", () => {
  // one track with amount "lol" from another workspace: no longer a String column over every workspace's numbers
  const mixed = columnTypeFor("properties", "amount", [
    { type: "number", messages: 2, workspaces: 1 },
    { type: "string", messages: 1, workspaces: 1 },
  ]);
  assert.ok(!mixed.ok, JSON.stringify(mixed));
  assert.match(
    mixed.error,
    /^properties\.amount: the catalog saw 2 JSON types: number \(2 messages, 1 workspace\), string \(1 message, 1 workspace\)/,
  );
  assert.match(mixed.error, /nothing was changed/);
  assert.match(mixed.error, /--type: Float64 or Int64 .*UInt8 .*String/);
  const nulls = columnTypeFor("traits", "plan", [{ type: "null", messages: 3, workspaces: 2 }]);
  assert.ok(!nulls.ok && nulls.error.includes("saw only null (3 messages, 2 workspaces)"), JSON.stringify(nulls));
  const none = columnTypeFor("properties", "plan", []);
  assert.ok(!none.ok && none.error.startsWith("properties.plan: the catalog saw no value of it"), JSON.stringify(none));
  const three = columnTypeFor("properties", "x", [
    { type: "number", messages: 9, workspaces: 3 },
    { type: "boolean", messages: 1, workspaces: 1 },
    { type: "null", messages: 1, workspaces: 1 },
  ]);
  assert.ok(
    !three.ok && three.error.includes("2 JSON types: number (9 messages, 3 workspaces), boolean (1 message, 1 workspace), null"),
    JSON.stringify(three),
  );
});

test("keyTypesSeenQuery: one source's entries of the key, per JSON type, joined by shape, in small blocks; the key quoted", () => {
  const query = keyTypesSeenQuery("db", "traits", "pl'an");
  assert.match(
    query,
    /^SELECT code, uniqMerge\(count\) AS messages, uniqExact\(workspace_id\) AS workspaces\nFROM `db`\.`catalog_shapes`\n/,
  );
  assert.match(
    query,
    /has\(\['tspl\\'an', 'tnpl\\'an', 'tbpl\\'an', 'topl\\'an', 'tapl\\'an', 'tzpl\\'an'\], e\), finalizeAggregation\(keys\)/,
  );
  assert.match(query, /\) AS holding USING shape\nGROUP BY code\n/);
  assert.match(query, /SETTINGS max_block_size = 1024$/);
  assert.not.match(query, /argMaxMerge/, "no shape's list is merged with the others'");
});

test("keyTypesSeen: code letters become type names, numbers of either form; an unknown letter is left out", () => {
  assert.equal(
    keyTypesSeen([
      { code: "n", messages: "12", workspaces: 2 },
      { code: "z", messages: 1, workspaces: "1" },
      { code: "?", messages: 1, workspaces: 1 },
    ]),
    [
      { type: "number", messages: 12, workspaces: 2 },
      { type: "null", messages: 1, workspaces: 1 },
    ],
  );
});

test.run();
