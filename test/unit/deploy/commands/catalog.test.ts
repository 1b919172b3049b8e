import { test } from "uvu";
import * as assert from "uvu/assert";
import { catalogText } from "../../../../deploy/commands/catalog";
import { catalogFeeds, eventCatalogQuery, propertyCatalogQuery } from "../../../../schemas/clickhouse/catalog";

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

test("catalog SQL: the workspace is quoted, feeds read the events table (its _local one on a cluster)", () => {
  assert.match(eventCatalogQuery("db", "w'1"), /WHERE workspace_id = 'w\\'1'/);
  assert.not.match(propertyCatalogQuery("db"), /WHERE/);
  const [events, properties] = catalogFeeds("legacy", "db", "events");
  assert.match(events!.viewDdl, /TO `db`\.`event_catalog` AS SELECT[\s\S]*FROM `db`\.`events`\n/);
  assert.match(properties!.viewDdl, /ARRAY JOIN catalog_keys AS entry/);
  const clustered = catalogFeeds("current", "db", "events", "c1");
  assert.match(clustered[0]!.viewDdl, /ON CLUSTER `c1` TO `db`\.`event_catalog_local` AS [\s\S]*FROM `db`\.`events_local`/);
  assert.match(clustered[1]!.tableDdl[1]!, /Distributed\('c1', 'db', 'property_catalog_local'/);
  assert.match(clustered[1]!.backfill, /^INSERT INTO `db`\.`property_catalog` SELECT[\s\S]*FROM `db`\.`events`\n/);
});

test.run();
