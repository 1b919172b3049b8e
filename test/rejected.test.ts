import { test } from "uvu";
import * as assert from "uvu/assert";
import { buildRejected } from "../ingest/envelope";
import type { RejectedEnvelope } from "../schemas/envelope";
import { coalescedRefresh, pendingRanges, recordTime } from "../sink/dlq-progress";
import { replayTopic } from "../deploy/commands/replay";

const receipt = { workspaceId: "ws1", receivedAt: "2026-11-23T10:00:00.000Z" };
const envelopeOf = (value: string) => JSON.parse(value) as RejectedEnvelope;

test("a refused item never carries the writeKey onto the topic", () => {
  const [record] = buildRejected(
    [{ item: { writeKey: "secret-key", messageId: "m1", type: "track" }, reasons: ["event: string"] }],
    receipt,
    32_768,
  );
  assert.not.ok(record!.value.includes("secret-key"));
  const envelope = envelopeOf(record!.value);
  assert.equal(JSON.parse(envelope.raw), { messageId: "m1", type: "track" });
  assert.is(envelope.messageId, "m1");
  assert.is(record!.key, envelope.rejectionId);
});

test("the record stays bounded: raw cut so its escaped form fits, reasons capped, and both say so", () => {
  const quotes = '"'.repeat(50_000); // each quote doubles when escaped again
  const reasons = Array.from({ length: 30 }, (_, i) => `batch[${i}].x: ${"y".repeat(500)}`);
  const [record] = buildRejected([{ item: { note: quotes }, reasons }], receipt, 32_768);
  const envelope = envelopeOf(record!.value);
  assert.ok(Buffer.byteLength(JSON.stringify(envelope.raw)) <= 32_768);
  assert.ok(Buffer.byteLength(record!.value) <= 32_768 + 8_192, `record ${Buffer.byteLength(record!.value)} bytes`);
  assert.is(envelope.reasons.filter((r) => r.startsWith("batch[")).length, 20);
  assert.ok(envelope.reasons.every((r) => r.length <= 200));
  assert.ok(envelope.reasons.some((r) => r === "and 10 more reason(s)"));
  assert.ok(envelope.reasons.some((r) => r.startsWith("raw: cut to ")));
});

test("the same item refused twice has the same rejectionId (one row); another workspace's does not", () => {
  const item = { messageId: "m", event: 5 };
  const [a] = buildRejected([{ item, reasons: ["event: string"] }], receipt, 32_768);
  const [b] = buildRejected([{ item, reasons: ["event: string"] }], { ...receipt, receivedAt: "2026-11-23T11:00:00.000Z" }, 32_768);
  const [c] = buildRejected([{ item, reasons: ["event: string"] }], { ...receipt, workspaceId: "ws2" }, 32_768);
  assert.is(a!.key, b!.key);
  assert.is.not(a!.key, c!.key);
});

test("two over-long items alike in their first 26 KB and different after are two rows; each retry is still one", () => {
  const head = "x".repeat(40_000);
  const refuse = (tail: string) =>
    buildRejected([{ item: { messageId: "m", note: head + tail }, reasons: ["event: string"] }], receipt, 32_768)[0]!;
  const [a, b, again] = [refuse("a"), refuse("b"), refuse("a")];
  const raw = (r: typeof a) => (JSON.parse(r.value) as { raw: string }).raw;
  assert.is(raw(a), raw(b), "the kept text is the same cut");
  assert.is.not(a.key, b.key);
  assert.is(a.key, again.key);
});

test("a dead letter is replayed to the topic it came from: events or rejected items", () => {
  const config = { topic: "events", rejectedTopic: "events-rejected" };
  assert.is(replayTopic("events-rejected/2/1234", config), "events-rejected");
  assert.is(replayTopic("events/0/7", config), "events");
  assert.is(replayTopic(undefined, config), "events", "no header: the events topic");
  assert.is(replayTopic("some-other-topic/1/1", config), "events");
});

test("a replay waits only for partitions with letters not yet replayed, each up to its end when it began", () => {
  const offsets = [
    { partition: 0, low: "0", high: "5" }, // 5 letters, 2 replayed before
    { partition: 1, low: "0", high: "0" }, // never written
    { partition: 2, low: "4", high: "4" }, // every letter deleted by retention
    { partition: 3, low: "0", high: "3" }, // replayed to the end before
    { partition: 4, low: "7", high: "9" }, // retention deleted past the commit
    { partition: 5, low: "2", high: "6" }, // nothing committed yet
  ];
  const committed = [
    { partition: 0, offset: "2" },
    { partition: 3, offset: "3" },
    { partition: 4, offset: "5" },
    { partition: 5, offset: "-1" },
  ];
  assert.equal(
    [...pendingRanges(offsets, committed)],
    [
      [0, { start: 2n, end: 5n }],
      [4, { start: 7n, end: 9n }],
      [5, { start: 2n, end: 6n }],
    ],
  );
  assert.is(pendingRanges(offsets.slice(1, 4), committed).size, 0, "nothing to replay: the run ends at once");
});

/** Kafka's offset-for-time answer over records at offsets 0.. with these times (ms): the first at or after t, else the end. */
function lookup(times: number[]): { offsetFor: (ms: number) => Promise<bigint>; calls: () => number } {
  let calls = 0;
  return {
    offsetFor: async (ms) => {
      calls++;
      const i = times.findIndex((t) => t >= ms);
      return BigInt(i < 0 ? times.length : i);
    },
    calls: () => calls,
  };
}

test("a record's time is found to the second by offset-for-time lookups alone", async () => {
  const now = Date.parse("2026-11-24T12:00:00.000Z");
  const times = [now - 3 * 3_600_000, now - 2 * 3_600_000 + 123, now - 3_600_000, now - 5_000];
  for (const at of [0, 1, 2, 3]) {
    const found = await recordTime(BigInt(at), lookup(times).offsetFor, now);
    assert.ok(found <= times[at]! && times[at]! - found < 1_000, `offset ${at}: ${found} for ${times[at]}`);
  }
  const yearOld = lookup([now - 365 * 86_400_000]);
  const found = await recordTime(0n, yearOld.offsetFor, now);
  assert.ok(now - 365 * 86_400_000 - found < 1_000);
  assert.ok(yearOld.calls() <= 50, `${yearOld.calls()} lookups for a year-old record`);
  const minuteOld = lookup([now - 59_000]);
  assert.ok(now - 59_000 - (await recordTime(0n, minuteOld.offsetFor, now)) < 1_000);
  assert.ok(minuteOld.calls() <= 8, `${minuteOld.calls()} lookups for a minute-old record`);
  assert.is(await recordTime(0n, lookup([now + 2_000]).offsetFor, now), now, "a time ahead of ours is now (age 0)");
  assert.is(await recordTime(0n, lookup([-1]).offsetFor, now), 0, "no time at all: the epoch");
});

test("record times out of order: the latest time up to the offset asked for", async () => {
  const now = Date.parse("2026-11-24T12:00:00.000Z");
  const times = [now - 600_000, now - 900_000, now - 300_000];
  const found = await recordTime(1n, lookup(times).offsetFor, now);
  assert.ok(found <= now - 600_000 && now - 600_000 - found < 1_000, String(now - found));
});

test("a refresh asked for while one runs is followed by one more, never run alongside it", async () => {
  const results: (number | undefined)[] = [];
  let running = 0;
  let most = 0;
  let reads = 0;
  const refresher = coalescedRefresh(
    async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      return ++reads;
    },
    (time) => results.push(time),
    () => assert.unreachable("no read fails"),
  );
  await Promise.all([refresher.refresh(), refresher.refresh(), refresher.refresh()]);
  assert.is(most, 1);
  assert.equal(results, [1, 2], "the first read, then one more for the two asked for meanwhile");
  const failing = coalescedRefresh(
    async () => {
      throw new Error("kafka down");
    },
    () => assert.unreachable(),
    (error) => results.push(-1 * Number((error as Error).message === "kafka down")),
  );
  await failing.refresh();
  assert.equal(results, [1, 2, -1], "a failure goes to onError; refresh does not throw");
});

test.run();
