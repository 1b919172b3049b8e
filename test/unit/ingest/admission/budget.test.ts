import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  IDLE_MS,
  InflightBudget,
  MIN_ARRIVAL_BYTES_PER_SECOND,
  UNKEYED_SHARE,
  SENDER_SHARE,
  senderCap,
} from "../../../../ingest/admission/budget";
import { CONTAINER_BYTES, parsedBytes, parsedLimit, VALUE_BYTES } from "../../../../ingest/http/parsed-size";
import { jsonShape } from "../../../../ingest/records/validate";

test("leases grow as bytes arrive and share one budget with the producer's held bytes; a release frees exactly once", () => {
  let producer = 0;
  const budget = new InflightBudget(1_000, () => producer);
  const first = budget.open(true, "w:a");
  const second = budget.open(true, "w:a");
  assert.is(budget.held, 0, "an opened lease holds nothing until bytes arrive");
  assert.equal(first.grow(600), { ok: true });
  assert.equal(second.grow(500), { ok: false, reason: "busy", capacity: 1_000 }, "600 + 500 is over 1,000");
  assert.is(second.bytes, 0, "a refused charge changes nothing");
  assert.equal(second.grow(400), { ok: true }, "600 + 400 fits exactly");
  first.release();
  first.release();
  assert.is(budget.held, 400, "a second release changes nothing");
  assert.equal(first.grow(1), { ok: false, reason: "never", capacity: 1_000 }, "a released lease takes no more");
  producer = 500;
  assert.equal(second.grow(200), { ok: false, reason: "busy", capacity: 1_000 }, "400 held + 500 held by the producer + 200 is over");
  producer = 0;
  assert.equal(second.grow(200), { ok: true });
  assert.is(second.bytes, 600);
  second.release();
  assert.is(budget.held, 0);
});

test("one request can never pass the whole budget (413), or the unkeyed share while its key is unchecked", () => {
  const budget = new InflightBudget(1_000, () => 0);
  const keyed = budget.open(true, "w:a");
  assert.equal(keyed.grow(1_001), { ok: false, reason: "never", capacity: 1_000 });
  const unkeyed = budget.open(false, "ip:b");
  assert.equal(unkeyed.grow(400), { ok: true });
  assert.equal(unkeyed.grow(101), { ok: false, reason: "never", capacity: 500 }, "half the budget at most");
  unkeyed.markKeyed();
  assert.equal(unkeyed.grow(101), { ok: true }, "once its key is checked, the whole budget is its limit");
});

test("requests without a checked key hold half the budget together; keyed requests keep the rest", () => {
  const budget = new InflightBudget(1_000, () => 0);
  const unkeyed = Array.from({ length: 10 }, () => budget.open(false, "ip:b"));
  const granted = unkeyed.map((lease) => lease.grow(100).ok);
  assert.equal(
    granted.map((ok) => (ok ? 1 : 0)),
    [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
    "five of ten 100-byte unkeyed bodies fit in 500",
  );
  assert.is(budget.heldUnkeyed, 500);
  assert.equal(unkeyed[5]!.grow(100), { ok: false, reason: "busy", capacity: 500 });
  const keyed = budget.open(true, "w:a");
  assert.equal(keyed.grow(500), { ok: true }, "a keyed request still gets the other half");
  // A request whose key was in its body moves out of the unkeyed share once checked.
  unkeyed[0]!.markKeyed();
  unkeyed[0]!.markKeyed();
  assert.is(budget.heldUnkeyed, 400);
  keyed.release();
  assert.equal(unkeyed[5]!.grow(100), { ok: true }, "the freed unkeyed room is usable again");
  unkeyed[0]!.release();
  assert.is(budget.heldUnkeyed, 500, "a lease marked keyed leaves the unkeyed count alone when released");
  assert.is(budget.held, 500);
  for (const lease of unkeyed) lease.release();
  assert.is(budget.held, 0);
  assert.is(budget.heldUnkeyed, 0);
});

test("one sender's bodies still arriving hold at most its cap together; other senders keep the rest of the budget", () => {
  const budget = new InflightBudget(1_000, () => 0, 300);
  // Stalled bodies of one workspace (its public key in a header): the fourth 100 bytes is refused.
  const stalled = Array.from({ length: 4 }, () => budget.open(true, "w:attacker"));
  assert.equal(
    stalled.map((lease) => lease.grow(100).ok),
    [true, true, true, false],
  );
  assert.equal(stalled[3]!.grow(100), { ok: false, reason: "busy", capacity: 1_000 }, "503: the sender's cap, not 413");
  assert.is(budget.arrivingOf("w:attacker"), 300);
  const other = budget.open(true, "w:victim");
  assert.equal(other.grow(300), { ok: true }, "another workspace still gets its own");
  assert.equal(other.grow(1), { ok: false, reason: "busy", capacity: 1_000 }, "and is held to the same cap");
  // An arrived body leaves its sender's cap (its bytes stay in the budget until the answer).
  stalled[0]!.markArrived();
  stalled[0]!.markArrived();
  assert.is(budget.arrivingOf("w:attacker"), 200);
  assert.is(budget.held, 600);
  assert.equal(stalled[0]!.grow(100), { ok: true }, "the parsed-size charge after arrival is not the sender's");
  assert.is(budget.arrivingOf("w:attacker"), 200);
  assert.equal(stalled[3]!.grow(100), { ok: true }, "the arrived body's room is the sender's again");
  assert.equal(stalled[1]!.grow(1), { ok: false, reason: "busy", capacity: 1_000 });
  assert.is(budget.held, 800);
  other.release();
  for (const lease of stalled) lease.release();
  assert.is(budget.arrivingOf("w:attacker"), 0);
  assert.is(budget.senders, 0, "a sender with nothing arriving is forgotten");
  assert.is(budget.held, 0);
  // Unkeyed senders by address: one address's cap leaves room for another's.
  const a = budget.open(false, "ip:10.0.0.1");
  const b = budget.open(false, "ip:10.0.0.2");
  assert.equal(a.grow(300), { ok: true });
  assert.equal(a.grow(1), { ok: false, reason: "busy", capacity: 500 });
  assert.equal(b.grow(200), { ok: true });
  a.release();
  b.release();
  assert.is(budget.senders, 0);
});

test("a body that stopped arriving is evicted (its signal aborted) when another needs the room; one that arrives is not", () => {
  let now = 0;
  const budget = new InflightBudget(
    1_000,
    () => 0,
    1_000,
    UNKEYED_SHARE,
    () => now,
  );
  // Fifty networks' stalled bodies fill the unkeyed share.
  const stalled = Array.from({ length: 5 }, (_, i) => budget.open(false, `n:${i}`));
  for (const lease of stalled) assert.ok(lease.grow(100).ok);
  const sdk = budget.open(false, "n:sdk");
  assert.equal(sdk.grow(100), { ok: false, reason: "busy", capacity: 500 }, "while every body is young, the share is full");
  now += IDLE_MS;
  stalled[4]!.grow(0); // a zero charge is no progress
  const fresh = budget.open(false, "n:fresh");
  assert.equal(fresh.grow(100).ok, true, "an idle body made room");
  assert.equal(
    stalled.map((lease) => lease.evicted),
    [true, false, false, false, false],
    "one eviction, of the body idle longest, was enough",
  );
  assert.is(budget.evicted, 1);
  assert.ok(sdk.grow(250).ok, "three more idle bodies go for 250 bytes");
  assert.is(stalled.filter((lease) => lease.evicted).length, 4, "the idle bodies, oldest first, until it fits");
  assert.is(stalled[0]!.bytes, 0, "an evicted lease holds nothing");
  assert.equal(stalled[0]!.grow(1), { ok: false, reason: "never", capacity: 500 }, "and takes nothing more");
  assert.is(budget.heldUnkeyed, 100 + 100 + 250);
  // A keyed body, or one that arrived, is never evicted for the unkeyed share.
  const late = budget.open(false, "n:late");
  now += IDLE_MS;
  sdk.markArrived();
  fresh.markKeyed();
  assert.equal(late.grow(300), { ok: false, reason: "busy", capacity: 500 }, "nothing evictable left: 503 as before");
  assert.is(stalled[4]!.evicted, true, "the last idle body went");
  assert.is(sdk.evicted, false, "an arrived body keeps its room until its answer");
  assert.is(fresh.evicted, false, "a keyed body holds no room of the unkeyed share");
});

test("a body that trickles (under MIN_ARRIVAL_BYTES_PER_SECOND after its first second) is evictable though never idle", () => {
  let now = 0;
  const budget = new InflightBudget(
    1_000,
    () => 0,
    1_000,
    1,
    () => now,
  );
  const trickle = budget.open(true, "w:a");
  assert.ok(trickle.grow(900).ok);
  const other = budget.open(true, "w:c");
  for (let i = 0; i < 4; i++) {
    now += IDLE_MS - 1;
    assert.ok(trickle.grow(1).ok, "a byte now and then: never idle");
    if (i === 0) assert.equal(other.grow(300), { ok: false, reason: "busy", capacity: 1_000 }, "in its first second it holds its room");
  }
  assert.ok((trickle.bytes * 1000) / now < MIN_ARRIVAL_BYTES_PER_SECOND);
  assert.ok(other.grow(300).ok, "past its first second, crawling, it is evicted for a body that arrives");
  assert.is(trickle.evicted, true);
});

test("senderCap: an eighth of the budget, room for two whole compressed bodies, never over the budget", () => {
  const MiB = 1024 * 1024;
  assert.is(senderCap(32 * MiB, 512_000), Math.floor(32 * MiB * SENDER_SHARE), "4 MiB of the default 32 MiB");
  assert.is(senderCap(4 * MiB, 512_000), 2_048_000, "four bodies' worth when an eighth is less");
  assert.is(senderCap(1_000_000, 512_000), 1_000_000, "never more than the budget");
});

test("the parsed-size estimate charges objects and arrays: 500 KB of {} costs about 28x, typical events about 4x", () => {
  const counts = (text: string) => {
    const shape = jsonShape(text, 64);
    if (shape.tooDeep) throw new Error("too deep");
    return shape;
  };
  const empties = `{"batch":[${Array(166_000).fill("{}").join(",")}]}`;
  const emptiesShape = counts(empties);
  assert.is(emptiesShape.containers, 166_002);
  assert.is(emptiesShape.separators, 166_000, "165,999 commas and one colon");
  const emptiesCost = parsedBytes(emptiesShape);
  assert.is(emptiesCost, empties.length + CONTAINER_BYTES * 166_002 + VALUE_BYTES * 166_000);
  assert.ok(emptiesCost / empties.length > 20, `${(emptiesCost / empties.length).toFixed(1)}x: above the 21x V8 allocates`);
  const event = {
    type: "track",
    event: "Product Viewed",
    userId: "user-1",
    messageId: "23d04926-78e5-4ebc-853f-f26c84ff629e",
    context: { ip: "66.249.66.1", library: { name: "analytics-node", version: "1.0.0" } },
    properties: { productId: "ab1", price: 12.5, tags: ["a", "b"] },
  };
  const events = JSON.stringify({ batch: Array(500).fill(event) });
  const ratio = parsedBytes(counts(events)) / events.length;
  assert.ok(ratio > 1.8 && ratio < 5, `typical events: ${ratio.toFixed(1)}x`);
  assert.ok(emptiesCost > parsedLimit(512_000), "500 KB of {} is refused before parsing");
  assert.ok(parsedBytes(counts(events)) * (512_000 / events.length) < parsedLimit(512_000) / 2, "500 KB of events is far from it");
  const flat = JSON.stringify({ properties: { text: "x".repeat(100_000) } });
  assert.ok(parsedBytes(counts(flat)) < flat.length * 1.01, "one long string costs its length");
});

test("jsonShape skips strings, escaped quotes included, and stops past the depth", () => {
  assert.equal(jsonShape(`{"a":"{[,:\\"{"}`, 5), { tooDeep: false, chars: 15, containers: 1, separators: 1, mayOverflow: false });
  assert.equal(
    jsonShape(`{"a\\\\":[1,2]}`, 5),
    { tooDeep: false, chars: 13, containers: 2, separators: 2, mayOverflow: false },
    "an escaped backslash ends the key",
  );
  assert.equal(jsonShape("[[[]]]", 2), { tooDeep: true });
  assert.equal(jsonShape('{"a":"never closed', 5), { tooDeep: false, chars: 18, containers: 1, separators: 1, mayOverflow: false });
});

test.run();
