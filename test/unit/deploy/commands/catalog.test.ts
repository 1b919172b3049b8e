import { test } from "uvu";
import * as assert from "uvu/assert";
import { CELL_WIDTH, catalogText, cellText, safeJson } from "../../../../deploy/commands/catalog";
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

test("catalogText: a long name is cut to CELL_WIDTH with an ellipsis; the other rows keep their width", () => {
  const short = catalogText({ events: [row, { ...row, event: "Signed Up" }], properties: [] });
  const long = catalogText({
    events: [row, { ...row, event: "Signed Up" }, { ...row, type: "page", event: "", name: "A".repeat(32_000) }],
    properties: [],
  });
  const lines = long.split("\n");
  assert.match(lines[4]!, new RegExp(`^ws1 +page +${"A".repeat(CELL_WIDTH - 1)}… +3 +a +b$`));
  assert.is(lines[2]!.length, lines[4]!.length, "rows padded to the cut cell, not to 32,000 characters");
  assert.ok(long.length < short.length * 2, `${long.length} against ${short.length}`);
  assert.is(cellText("x".repeat(CELL_WIDTH)), "x".repeat(CELL_WIDTH), "exactly CELL_WIDTH: shown whole");
  // an escape is kept whole or left out, never split
  assert.is(cellText(`${"x".repeat(CELL_WIDTH - 3)}\u202eabc`), `${"x".repeat(CELL_WIDTH - 3)}…`);
  assert.is(cellText(`${"x".repeat(CELL_WIDTH - 3)}😀😀`), `${"x".repeat(CELL_WIDTH - 3)}😀…`, "a surrogate pair kept whole");
});

test("catalogText: 20,000 property rows and one 32,000-character name make bounded text, no RangeError", () => {
  const props = Array.from({ length: 20_000 }, (_, i) => ({
    ...row,
    event: `Event ${i % 300}`,
    source: "properties",
    key: `k${i}`,
    types: ["string"],
  }));
  props.push({ ...props[0]!, event: "A".repeat(32_000) });
  const text = catalogText({ events: [], properties: props });
  const widest = Math.max(...text.split("\n").map((l) => l.length));
  assert.ok(widest < 9 * CELL_WIDTH, `widest line ${widest}`);
  assert.is(text.split("\n").length, 20_001 + 6, "titles, headers, a blank line, the rows and the final newline");
});

test("cellText: C0 and C1 controls, DEL, zero-width, separators, bidi controls and BOM escaped as \\uXXXX", () => {
  const listed = [
    ...Array.from({ length: 0x9f - 0x7f + 1 }, (_, i) => 0x7f + i),
    0x200b,
    0x200c,
    0x200d,
    0x200e,
    0x200f,
    0x2028,
    0x2029,
    0x202a,
    0x202b,
    0x202c,
    0x202d,
    0x202e,
    0x2066,
    0x2067,
    0x2068,
    0x2069,
    0xfeff,
  ];
  for (const cp of listed) {
    const shown = cellText(`a${String.fromCodePoint(cp)}b`);
    assert.is(shown, `a\\u${cp.toString(16).padStart(4, "0")}b`, `U+${cp.toString(16)}`);
  }
  assert.is(cellText("Order\nCompleted\u001b[31m"), "Order\\nCompleted\\u001b[31m", "C0 as JSON.stringify writes them");
  assert.is(cellText("\ud800x"), "\\ud800x", "a lone surrogate");
  assert.is(cellText('say "hé" \\ 日本'), 'say \\"hé\\" \\\\ 日本', "printable text kept");
  const text = catalogText({
    events: [
      { ...row, event: "Order Completed\u202e" },
      { ...row, event: "Order Completed\u200b" },
    ],
    properties: [],
  });
  assert.not.match(text, /[\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/);
  assert.match(text, /Order Completed\\u202e/);
});

test("safeJson (--json): C1 controls, bidi controls and marks as \\uXXXX; valid JSON that parses back to the same strings", () => {
  const hostile = [
    "Buy\u009b31mnow",
    "osc\u009d0;title\u009c",
    "a\u202eevil\u202c",
    "\u2066iso\u2069",
    "ltr\u200e rtl\u200f alm\u061c",
    "del\u007f nel\u0085",
    "esc\u001b[2J bell\u0007",
  ];
  const catalog = { events: hostile.map((event) => ({ ...row, event })), properties: [] };
  const text = safeJson(catalog);
  const raw = [...text].filter((ch) => {
    const c = ch.charCodeAt(0);
    return (
      c < 0x20 ||
      (c >= 0x7f && c <= 0x9f) ||
      c === 0x61c ||
      (c >= 0x200b && c <= 0x200f) ||
      (c >= 0x2028 && c <= 0x202e) ||
      (c >= 0x2060 && c <= 0x206f) ||
      c === 0xfeff
    );
  });
  assert.equal(raw, [], "nothing raw");
  assert.match(text, /Buy\\u009b31mnow/);
  assert.match(text, /a\\u202eevil\\u202c/);
  assert.match(text, /\\u2066iso\\u2069/);
  assert.match(text, /alm\\u061c/);
  assert.equal(JSON.parse(text), catalog, "round-trips");
  assert.is(safeJson({ a: "plain é 日本 😀" }), JSON.stringify({ a: "plain é 日本 😀" }), "other text as JSON.stringify writes it");
});

test("catalogText: a workspace's over-cap row is labelled with its day", () => {
  const text = catalogText({ events: [{ ...row, event: "", name: "2026-11-28", over_cap: 1, count: "14997" }], properties: [] });
  assert.match(text, /ws1 +track +\(over the daily cap\) 2026-11-28 +14997/);
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
