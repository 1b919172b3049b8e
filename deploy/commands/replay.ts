/**
 * DLQ replay: sends every dead letter not yet replayed back to the topic it came from with its
 * original key and value, once the cause is fixed. Progress is the offset of its own consumer
 * group, committed after the broker acknowledged the re-sent records, so a replay interrupted at
 * any point resumes without skipping; re-sent records that still fail are dead-lettered again
 * (as new records, replayed by a later run). A run reads each partition up to the end it had when
 * the run began and then ends, whatever the partitions hold: one with nothing left to read (empty,
 * already replayed, or emptied by retention) is done from the start. Re-sends stay under each
 * target topic's max.message.bytes. Throws if Kafka is unreachable.
 */
import { type Kafka, type Admin, type KafkaMessage, type Producer } from "kafkajs";
import { type KafkaConfig } from "../../schemas/config";
import { createProducer, sendWhole } from "../../schemas/kafka/producer";
import { DLQ_HEADERS } from "../../schemas/envelope";
import { chunkByBytes, recordBytes, topicMaxMessageBytes } from "../../schemas/kafka/limits";
import { PendingRange, readPendingRanges } from "../../sink/monitors/dlq-progress";
import { withAdmin } from "../../schemas/kafka/client";

/** How long one re-send may retry before the replay fails (it resumes from its commit when run again), ms. */
const REPLAY_SEND_DEADLINE_MS = 30_000;

/** How often a running replay reads the partitions' start offsets again (see replayRanges), ms. */
const REPLAY_RECHECK_MS = 5_000;

/**
 * Replays every letter below the DLQ's end offsets as they were when called, then resolves with
 * the count re-sent (0 at once when no partition has letters not yet replayed). Throws when
 * Kafka fails: the consumer crashes, or a re-send is not acknowledged within its deadline.
 */
export async function replayDeadLetters(kafka: Kafka, config: KafkaConfig, groupId: string): Promise<number> {
  return withAdmin(kafka, async (admin) => {
    const ranges = await readPendingRanges(admin, config.dlqTopic, groupId);
    if (ranges.size === 0) return 0;
    return await replayRanges(kafka, admin, config, groupId, ranges);
  });
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
  const producer = createProducer(kafka);
  const consumer = kafka.consumer({ groupId });
  await Promise.all([producer.connect(), consumer.connect()]);
  let replayed = 0;
  const done = new Set<number>();
  const limits = new Map<string, number>();
  /** The send limit of a topic (topicMaxMessageBytes), read once a run. */
  const limitOf = async (topic: string): Promise<number> => {
    const known = limits.get(topic) ?? (await topicMaxMessageBytes(kafka, topic, config.maxMessageBytes));
    limits.set(topic, known);
    return known;
  };
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
              await resend(producer, messages, config, limitOf);
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
 * Sends dead letters back to the topic each came from (replayTopic: events or rejected items),
 * acks=all, in sends under each topic's limit (`limitOf`), as the sink's DLQ sends: a whole fetch
 * (up to 1 MiB a partition) is refused MESSAGE_TOO_LARGE by a topic of a smaller
 * max.message.bytes. Throws what sendWhole throws (the run stops, nothing committed).
 */
async function resend(
  producer: Producer,
  letters: KafkaMessage[],
  config: KafkaConfig,
  limitOf: (topic: string) => Promise<number>,
): Promise<void> {
  const byTopic = new Map<string, { key: Buffer | null; value: Buffer | null }[]>();
  for (const m of letters) {
    const topic = replayTopic(m.headers?.[DLQ_HEADERS.source]?.toString(), config);
    const list = byTopic.get(topic) ?? [];
    list.push({ key: m.key, value: m.value });
    byTopic.set(topic, list);
  }
  for (const [topic, list] of byTopic)
    for (const chunk of chunkByBytes(list, await limitOf(topic), recordBytes))
      await sendWhole(producer, { acks: -1, topicMessages: [{ topic, messages: chunk }] }, REPLAY_SEND_DEADLINE_MS);
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
