/**
 * DLQ replay: sends every dead letter not yet replayed back to the topic it came from with its
 * original key and value, once the cause is fixed. Progress is the offset of its own consumer
 * group, committed after the broker acknowledged the re-sent records, so a replay interrupted at
 * any point resumes without skipping; re-sent records that still fail are dead-lettered again
 * (as new records, replayed by a later run). A run reads each partition up to the end it had when
 * the run began and then ends, whatever the partitions hold: one with nothing left to read (empty,
 * already replayed, or emptied by retention) is done from the start. Throws if Kafka is unreachable.
 *
 * Also here: how old the oldest dead letter not yet replayed is (`oldestDeadLetterTime`), for the
 * sink's `sink_dlq_oldest_seconds`.
 */
import type { Admin, Kafka } from "kafkajs";
import type { KafkaConfig } from "../schemas/config";
import { DLQ_HEADERS } from "../schemas/envelope";
import { PRODUCER_RETRY, sendWhole } from "../schemas/kafka/producer";
import { KeyPartitioner } from "../schemas/kafka/partitioner";

/** How long one re-send may retry before the replay fails (it resumes from its commit when run again), ms. */
const REPLAY_SEND_DEADLINE_MS = 30_000;

/** How often a running replay reads the partitions' start offsets again (see replayRanges), ms. */
const REPLAY_RECHECK_MS = 5_000;

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
async function readPendingRanges(admin: Admin, topic: string, groupId: string): Promise<Map<number, PendingRange>> {
  const [offsets, [group]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
  return pendingRanges(offsets, group?.partitions ?? []);
}

/**
 * Replays every letter below the DLQ's end offsets as they were when called, then resolves with
 * the count re-sent (0 at once when no partition has letters not yet replayed). Throws when
 * Kafka fails: the consumer crashes, or a re-send is not acknowledged within its deadline.
 */
export async function replayDeadLetters(kafka: Kafka, config: KafkaConfig, groupId: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ranges = await readPendingRanges(admin, config.dlqTopic, groupId);
    if (ranges.size === 0) return 0;
    return await replayRanges(kafka, admin, config, groupId, ranges);
  } finally {
    await admin.disconnect();
  }
}

/**
 * Consumes the DLQ in `groupId` and re-sends the letters of `ranges`; resolves with the count once
 * every partition of `ranges` is done: its letters up to `end` sent and committed, or its start
 * (pendingRanges, read again every REPLAY_RECHECK_MS) at or past `end`.
 */
async function replayRanges(
  kafka: Kafka,
  admin: Admin,
  config: KafkaConfig,
  groupId: string,
  ranges: Map<number, PendingRange>,
): Promise<number> {
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: KeyPartitioner,
    retry: PRODUCER_RETRY,
  });
  const consumer = kafka.consumer({ groupId });
  await Promise.all([producer.connect(), consumer.connect()]);
  let replayed = 0;
  const done = new Set<number>();
  let recheck: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
      const finishIfDone = (partition: number, next: bigint) => {
        if (next >= (ranges.get(partition)?.end ?? 0n)) done.add(partition);
        if (done.size >= ranges.size) resolve();
      };
      // Nothing is delivered for a partition whose unread letters retention deleted meanwhile, or
      // that another replay of the same group was given: its start is read again now and then.
      recheck = setInterval(() => {
        readPendingRanges(admin, config.dlqTopic, groupId).then(
          (current) => {
            for (const [partition, { end }] of ranges) finishIfDone(partition, current.get(partition)?.start ?? end);
          },
          () => {}, // the consumer's own failure, if Kafka is gone, ends the run
        );
      }, REPLAY_RECHECK_MS);
      void consumer.subscribe({ topic: config.dlqTopic, fromBeginning: true }).then(
        () =>
          consumer.run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            eachBatch: async ({ batch, resolveOffset }) => {
              const range = ranges.get(batch.partition);
              if (range === undefined || done.has(batch.partition)) {
                // Nothing of this run is here (letters written after it began wait for the next run).
                consumer.pause([{ topic: config.dlqTopic, partitions: [batch.partition] }]);
                return;
              }
              const messages = batch.messages.filter((m) => BigInt(m.offset) < range.end);
              if (messages.length === 0) {
                finishIfDone(batch.partition, BigInt(batch.messages[0]?.offset ?? "0"));
                return;
              }
              // Each dead letter goes back to the topic it came from (events or rejected items).
              const byTopic = new Map<string, { key: Buffer | null; value: Buffer | null }[]>();
              for (const m of messages) {
                const topic = replayTopic(m.headers?.[DLQ_HEADERS.source]?.toString(), config);
                byTopic.set(topic, [...(byTopic.get(topic) ?? []), { key: m.key, value: m.value }]);
              }
              await sendWhole(
                producer,
                { acks: -1, topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })) },
                REPLAY_SEND_DEADLINE_MS,
              );
              replayed += messages.length;
              const last = messages[messages.length - 1]!.offset;
              resolveOffset(last);
              // commitOffset = offset + 1: the committed offset is the next record to read.
              const next = BigInt(last) + 1n;
              await consumer.commitOffsets([{ topic: config.dlqTopic, partition: batch.partition, offset: next.toString() }]);
              finishIfDone(batch.partition, next);
            },
          }),
        reject,
      );
    });
  } finally {
    clearInterval(recheck);
    await consumer.disconnect(); // lets a batch being re-sent finish first
    await producer.disconnect();
  }
  return replayed;
}

/**
 * The topic a dead letter is replayed to: the one its `dlq-source` header (`topic/partition/offset`)
 * names when that is the events or the rejected topic, else the events topic (a letter written by
 * a tool, or before the header existed). Pure.
 */
export function replayTopic(source: string | undefined, config: Pick<KafkaConfig, "topic" | "rejectedTopic">): string {
  const topic = source?.slice(0, source.lastIndexOf("/", source.lastIndexOf("/") - 1));
  return topic === config.rejectedTopic ? config.rejectedTopic : config.topic;
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
