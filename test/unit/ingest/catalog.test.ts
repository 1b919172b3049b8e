/** The ingest's memory of catalog shapes delivered lately (ingest/catalog.ts). */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { SentShapes } from "../../../ingest/catalog";

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

test.run();
