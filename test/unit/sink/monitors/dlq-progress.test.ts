/**
 * How far the DLQ is replayed and how old its oldest letter is (sink/monitors/dlq-progress.ts), with
 * fake offset lookups.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { pendingRanges, recordTime, coalescedRefresh } from "../../../../sink/monitors/dlq-progress";

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
