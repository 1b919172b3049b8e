/** The ingest's memory of catalog shapes delivered lately, and the daily catalog caps (ingest/records/catalog.ts). */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { CatalogCaps, SentShapes, type CapVerdict } from "../../../../ingest/records/catalog";
import { buildRecords } from "../../../../ingest/records/build";
import { OVER_CAP_SHAPE } from "../../../../schemas/catalog";
import type { Message } from "../../../../schemas/messages";

test("a shape's cache key stays short whatever the page name's length, and tells names apart", () => {
  // A page name has no bound but the message's 32 KB: 10,000 such keys would have held 310 MB.
  const long = (i: number) => `${"A".repeat(31_000)}${i}`;
  const keys = [0, 1, 2].map((i) => SentShapes.key("ws1", "page", long(i), 7));
  for (const key of keys) assert.ok(key.length < 400, `${key.length} characters`);
  assert.is(new Set(keys).size, 3, "three names, three keys");
  assert.is.not(SentShapes.key("ws1", "page", long(0), 8), keys[0], "and shapes apart");
  assert.is(
    SentShapes.key("ws1", "track", "Order Completed", 7),
    "ws1\u0000track\u0000sOrder Completed\u00007",
    "a short name is kept as it is, after its mark",
  );
});

test("no short name spells a long name's key (a forged page name cannot mark a long one's shape delivered)", () => {
  const long = `${"/docs/".repeat(60)}pricing`;
  const key = SentShapes.key("ws1", "page", long, 7);
  const written = key.split("\u0000")[2]!;
  // What an attacker who knows the long name could send: its written form, with or without the mark.
  for (const forged of [written, written.slice(1), `\u0001${written.slice(1)}`]) {
    assert.ok(forged.length <= 256, "a short name");
    assert.is.not(SentShapes.key("ws1", "page", forged, 7), key, JSON.stringify(forged.slice(0, 12)));
  }
});

test("a shape marked delivered is known until its TTL; the cache holds at most max shapes", async () => {
  const shapes = new SentShapes(2, 50);
  const [a, b, c] = ["a", "b", "c"].map((name) => SentShapes.key("ws1", "track", name, 1));
  shapes.markDelivered([a!, b!]);
  assert.ok(shapes.wasDelivered(a!) && shapes.wasDelivered(b!));
  shapes.markDelivered([c!]);
  assert.is(shapes.wasDelivered(a!), false, "the least recently delivered is forgotten past max");
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.is(shapes.wasDelivered(c!), false, "forgotten after the TTL");
});

const CAPS = { eventNamesPerDay: 3, pageNamesPerDay: 2, shapesPerDay: 5 };
const DAY = "2026-11-28";

test("caps: past a workspace's daily event names, new names are over; admitted names still pass", () => {
  const over: CapVerdict[] = [];
  const caps = new CatalogCaps(CAPS, (cap) => over.push(cap));
  const verdicts = ["a", "b", "c", "d", "e"].map((name) => caps.admit("ws1", "track", name, 1, DAY));
  assert.equal(verdicts, ["within", "within", "within", "event_names", "event_names"]);
  assert.is(caps.admit("ws1", "track", "a", 1, DAY), "within", "an admitted name and shape, again");
  assert.is(caps.admit("ws1", "track", "a", 2, DAY), "within", "a new shape of an admitted name: within the shapes cap");
  assert.equal(over, ["event_names", "event_names"], "each message over a cap counted once");
});

test("caps: page and screen names share their cap; shapes of every type share theirs", () => {
  const caps = new CatalogCaps(CAPS);
  assert.is(caps.admit("ws1", "page", "Home", 1, DAY), "within");
  assert.is(caps.admit("ws1", "screen", "Cart", 1, DAY), "within");
  assert.is(caps.admit("ws1", "page", "Pricing", 1, DAY), "page_names");
  assert.is(caps.admit("ws1", "track", "a", 1, DAY), "within", "event names have their own cap");
  assert.is(caps.admit("ws1", "identify", "", 9, DAY), "within", "a fourth shape");
  assert.is(caps.admit("ws1", "identify", "", 10, DAY), "within", "the fifth");
  assert.is(caps.admit("ws1", "identify", "", 11, DAY), "shapes", "the sixth is over, whatever the type");
  assert.is(caps.admit("ws1", "track", "b", 1, DAY), "shapes", "a new name needs room for its shape too");
  assert.is(caps.admit("ws1", "identify", "", 9, DAY), "within", "an admitted shape");
});

test("caps: each workspace counts alone; a new UTC day starts again; an earlier day counts in the later", () => {
  const caps = new CatalogCaps(CAPS);
  for (let i = 0; i < 100; i++) caps.admit("attacker", "track", `junk ${i}`, i, DAY);
  assert.is(caps.admit("attacker", "track", "junk 100", 1, DAY), "event_names");
  assert.is(caps.admit("ws2", "track", "Signed Up", 1, DAY), "within", "another workspace's first name of the day");
  assert.is(caps.admit("attacker", "track", "junk 100", 1, "2026-11-29"), "within", "the next day");
  assert.is(caps.admit("attacker", "track", "junk 101", 1, DAY), "within", "a late request of the day before counts in the new day");
  caps.admit("attacker", "track", "junk 102", 1, "2026-11-29");
  assert.is(caps.admit("attacker", "track", "junk 103", 1, DAY), "event_names", "and is capped with it");
});

test("caps: memory is bounded: per workspace by the caps, across workspaces by maxWorkspaces", () => {
  const caps = new CatalogCaps(CAPS, () => {}, 2);
  const long = (i: number) => `${"P".repeat(30_000)}${i}`;
  for (let i = 0; i < 1_000; i++) caps.admit("ws1", i % 2 === 0 ? "page" : "track", long(i), i, DAY);
  const days = (caps as unknown as { days: Map<string, { names: Map<string, unknown>; shapes: number }> }).days;
  const ws1 = days.get("ws1")!;
  assert.is(ws1.names.size, 5, "3 event names and 2 page names remembered, of 1,000 sent");
  assert.ok(
    [...ws1.names.keys()].every((key) => key.length < 100),
    "a 30,000-character name is remembered by its hash",
  );
  assert.ok(ws1.shapes <= CAPS.shapesPerDay);
  assert.is(caps.admit("ws1", "page", long(0), 0, DAY), "within", "a long name admitted is known again");
  assert.is(caps.admit("ws1", "page", `${long(0)}x`, 0, DAY), "page_names", "and told apart from a longer one");
  caps.admit("ws2", "track", "a", 1, DAY);
  caps.admit("ws3", "track", "a", 1, DAY);
  assert.is(days.size, 2, "at most maxWorkspaces days remembered");
});

test("buildRecords: a flood of names from one key keeps its rows but marks those past the caps; another key is unaffected", () => {
  const shapes = new SentShapes(10_000, 60_000, new CatalogCaps(CAPS));
  const track = (i: number, event: string): Message => ({
    type: "track",
    messageId: `m${i}`,
    userId: "u1",
    event,
    properties: { [`k${i}`]: i },
  });
  const receipt = (workspaceId: string) => ({ workspaceId, receivedAt: `${DAY}T10:00:00.000Z` });
  const flood = Array.from({ length: 50 }, (_, i) => track(i, `junk ${i}`));
  const built = buildRecords(flood, {}, receipt("attacker"), 32_768, { anonymizeIp: false, shapes });
  const rows = built.records.map((r) => JSON.parse(r.value) as { event: string; catalog_shape: number; catalog_keys?: string[] });
  assert.is(rows.length, 50, "every message stored");
  assert.equal(
    rows.map((r) => r.event),
    flood.map((m) => (m as { event: string }).event),
    "with its own name",
  );
  const capped = rows.filter((r) => r.catalog_shape === OVER_CAP_SHAPE);
  assert.is(capped.length, 47, "all but the first 3 names marked over the cap");
  assert.ok(
    capped.every((r) => r.catalog_keys === undefined),
    "no key list",
  );
  assert.match(built.records[49]!.value, /"catalog_shape":9007199254740992/);
  const other = buildRecords([track(0, "Signed Up")], {}, receipt("ws2"), 32_768, { anonymizeIp: false, shapes });
  assert.is.not((JSON.parse(other.records[0]!.value) as { catalog_shape: number }).catalog_shape, OVER_CAP_SHAPE);
});

test.run();
