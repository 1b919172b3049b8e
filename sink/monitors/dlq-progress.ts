/**
 * How far the DLQ has been replayed: the replay group of a sink group, the letters each partition
 * still holds past that group's commits (pendingRanges), and how old the oldest of them is
 * (oldestDeadLetterTime, for the sink's `sink_dlq_oldest_seconds`), found by Kafka's
 * offset-for-time lookups. `dlq replay` (deploy/commands/replay.ts) reads the same ranges.
 */
import { type Admin } from "kafkajs";

/** The consumer group of `dlq replay` for a sink group: its committed offsets are the replay's progress. */
export function replayGroupId(sinkGroupId: string): string {
  return `${sinkGroupId}-dlq-replay`;
}

/** The letters of one partition a replay still has to send: offsets `start` (inclusive) to `end` (exclusive). */
export interface PendingRange {
  start: bigint;
  end: bigint;
}

/**
 * The partitions with letters not yet replayed, and their ranges. `offsets` are the topic's
 * (admin.fetchTopicOffsets: `low` is the first offset retention kept, `high` the next offset to
 * be written), `committed` the replay group's offsets (admin.fetchOffsets; `-1` when none). A
 * partition starts at its committed offset, or at `low` when nothing is committed or retention
 * deleted past the commit (the consumer then starts at the earliest record), and ends at `high`;
 * a partition where start >= end is left out. Offsets are decimal strings, as kafkajs gives them.
 * Pure.
 */
export function pendingRanges(
  offsets: readonly { partition: number; low: string; high: string }[],
  committed: readonly { partition: number; offset: string }[],
): Map<number, PendingRange> {
  const done = new Map(committed.filter((c) => BigInt(c.offset) >= 0n).map((c) => [c.partition, BigInt(c.offset)]));
  const ranges = new Map<number, PendingRange>();
  for (const { partition, low, high } of offsets) {
    const first = BigInt(low);
    const commit = done.get(partition);
    const start = commit === undefined || commit < first ? first : commit;
    const end = BigInt(high);
    if (start < end) ranges.set(partition, { start, end });
  }
  return ranges;
}

/** The pending ranges of `topic` for `groupId`, read from the broker (pendingRanges). Throws if Kafka does not answer. */
export async function readPendingRanges(admin: Admin, topic: string, groupId: string): Promise<Map<number, PendingRange>> {
  const [offsets, [group]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
  return pendingRanges(offsets, group?.partitions ?? []);
}

/**
 * The time (ms since the epoch) of the record at offset `at` of one partition, to the second,
 * found by Kafka's offset-for-time lookup alone: `offsetFor(t)` must resolve with the first offset
 * of the partition whose record time is at least `t` ms (or the partition's end when none is), as
 * ListOffsets answers. Searches back from `now` in doubling steps, then halves the interval: a
 * record a minute old costs about 8 lookups, a year old about 50. Where record times are out of
 * order (producers' clocks differ) the answer is the latest time among the records from the
 * partition's start up to `at`, which differs from the record's own by at most that disorder.
 * Resolves with `now` when that time is not before `now`, and with 0 when the records carry no
 * time (message format before Kafka 0.10). Throws what `offsetFor` throws.
 */
export async function recordTime(at: bigint, offsetFor: (ms: number) => Promise<bigint>, now: number): Promise<number> {
  // Invariant: offsetFor(hi) > at (every record up to `at` is older than hi), offsetFor(lo) <= at.
  if ((await offsetFor(now)) <= at) return now;
  let hi = now;
  let step = 60_000;
  let lo = now - step;
  while ((await offsetFor(Math.max(lo, 0))) > at) {
    if (lo <= 0) return 0;
    hi = lo;
    step *= 2;
    lo = now - step;
  }
  lo = Math.max(lo, 0);
  while (hi - lo > 1_000) {
    const mid = Math.floor((lo + hi) / 2);
    if ((await offsetFor(mid)) <= at) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * A reader of the time (ms since the epoch) of the oldest dead letter in `topic` that the replay
 * group `groupId` has not replayed yet: per partition, the record at the pending range's start
 * (pendingRanges), timed by recordTime; undefined when every partition is replayed or empty. Each
 * call costs two admin requests (offsets, commits), plus the time lookups of a start offset not
 * timed before (the times of the current starts are kept between calls). Throws if Kafka does
 * not answer.
 */
export function oldestDeadLetterTime(admin: Admin, topic: string, groupId: string): (now?: number) => Promise<number | undefined> {
  let known = new Map<string, number>();
  return async (now = Date.now()) => {
    const ranges = await readPendingRanges(admin, topic, groupId);
    const kept = new Map<string, number>();
    let oldest: number | undefined;
    for (const [partition, { start }] of ranges) {
      const key = `${partition}/${start}`;
      let time = known.get(key);
      if (time === undefined) {
        time = await recordTime(start, (ms) => offsetAtTime(admin, topic, partition, ms), now);
        if (time >= now) time = undefined; // a clock ahead of ours: timed again next call
      }
      if (time !== undefined) kept.set(key, time);
      oldest = Math.min(oldest ?? now, time ?? now);
    }
    known = kept;
    return oldest;
  };
}

/** The first offset of `partition` whose record time is at least `ms`, else the partition's end. */
async function offsetAtTime(admin: Admin, topic: string, partition: number, ms: number): Promise<bigint> {
  const offsets = await admin.fetchTopicOffsetsByTimestamp(topic, ms);
  const found = offsets.find((p) => p.partition === partition);
  if (found === undefined) throw new Error(`${topic} has no partition ${partition}`);
  return BigInt(found.offset);
}

/**
 * Keeps a gauge's source up to date with `read` (oldestDeadLetterTime): `refresh()` starts a read
 * unless one runs, in which case one more follows it, so a refresh asked for after a dead letter
 * was sent always sees it. Results go to `onTime`, failures to `onError`; nothing throws.
 */
export function coalescedRefresh(
  read: () => Promise<number | undefined>,
  onTime: (time: number | undefined) => void,
  onError: (error: unknown) => void,
): { refresh: () => Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  const run = async (): Promise<void> => {
    do {
      again = false;
      try {
        onTime(await read());
      } catch (error) {
        onError(error);
      }
    } while (again);
    running = undefined;
  };
  return {
    refresh: () => {
      if (running !== undefined) {
        again = true;
        return running;
      }
      running = run();
      return running;
    },
  };
}
