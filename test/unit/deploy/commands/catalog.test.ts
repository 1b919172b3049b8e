import { test } from "uvu";
import * as assert from "uvu/assert";
import { catalogText } from "../../../../deploy/commands/catalog";
import { catalogFeed, catalogViewsDdl, eventCatalogQuery, propertyCatalogQuery } from "../../../../schemas/clickhouse/catalog";
import { readsTable } from "../../../../deploy/setup/ownership";

const row = { workspace_id: "ws1", type: "track", event: "Order\nCompleted", name: "", count: "3", first_seen: "a", last_seen: "b" };

test("catalogText: an aligned table each, names escaped to one line, types joined", () => {
  const text = catalogText({
    events: [row, { ...row, type: "page", event: "", name: "Home", count: "12" }],
    properties: [{ ...row, source: "properties", key: "plan", types: ["number", "string"] }],
  });
  const lines = text.split("\n");
  assert.is(lines[0], "Events");
  assert.match(lines[2]!, /^ws1 +track +Order\\nCompleted +3 +a +b$/);
  assert.match(lines[3]!, /^ws1 +page +Home +12 +a +b$/);
  assert.ok(lines.includes("Properties"));
  assert.match(text, /properties +plan +number\|string +3/);
});

test("catalog SQL: the workspace is quoted, the feed reads the events table (its _local one on a cluster)", () => {
  assert.match(eventCatalogQuery("db", "w'1"), /WHERE workspace_id = 'w\\'1'/);
  assert.not.match(propertyCatalogQuery("db"), /WHERE/);
  const feed = catalogFeed("legacy", "db", "events");
  assert.match(feed.viewDdl, /TO `db`\.`catalog_shapes` AS SELECT[\s\S]*FROM `db`\.`events`\n/);
  const clustered = catalogFeed("current", "db", "events", "c1");
  assert.match(clustered.viewDdl, /ON CLUSTER `c1` TO `db`\.`catalog_shapes_local` AS [\s\S]*FROM `db`\.`events_local`/);
  assert.match(clustered.tableDdl[1]!, /Distributed\('c1', 'db', 'catalog_shapes_local'/);
  assert.match(clustered.backfill, /^INSERT INTO `db`\.`catalog_shapes` SELECT[\s\S]*FROM `db`\.`events`\n/);
});

test("the catalog views read catalog_shapes, are replaced only when ours, and setup knows them by that", () => {
  const [events, properties] = catalogViewsDdl("current", "db");
  assert.match(events!, /^CREATE VIEW `db`\.`event_catalog` AS /);
  assert.ok(readsTable(properties!, "db", "catalog_shapes"));
  assert.not.ok(readsTable("CREATE VIEW db.x AS SELECT 'FROM db.catalog_shapes' FROM db.other", "db", "catalog_shapes"));
  assert.equal(catalogViewsDdl("legacy", "db", new Set(["event_catalog"])).slice(0, 1), ["DROP TABLE IF EXISTS `db`.`event_catalog`"]);
  assert.match(catalogViewsDdl("current", "db", new Set(["property_catalog"]))[1]!, /^CREATE OR REPLACE VIEW `db`\.`property_catalog`/);
});

test.run();
