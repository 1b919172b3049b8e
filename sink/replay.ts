/**
 * DLQ replay: sends every dead letter not yet replayed back to the topic it came from with its
 * original key and value, once the cause is fixed. Progress is the offset of its own consumer
 * group, committed after the broker acknowledged the re-sent records, so a replay interrupted at
 * any point resumes without skipping; re-sent records that still fail are dead-lettered again
 * (as new records, replayed by a later run). Throws if Kafka is unreachable.
 */
import type { Kafka } from "kafkajs";
import type { KafkaConfig } from "../schemas/config";
import { DLQ_HEADERS } from "../schemas/envelope";
import { PRODUCER_RETRY, sendWhole } from "../schemas/kafka-send";
import { KeyPartitioner } from "../schemas/kafka-partitioner";

/** How long one re-send may retry before the replay fails (it resumes from its commit when run again), ms. */
const REPLAY_SEND_DEADLINE_MS = 30_000;

/** Replays up to the DLQ's end as it was when called; resolves with the count re-sent. */
export async function replayDeadLetters(kafka: Kafka, config: KafkaConfig, groupId: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map<number, bigint>();
  let pending = false;
  try {
    for (const p of await admin.fetchTopicOffsets(config.dlqTopic)) ends.set(p.partition, BigInt(p.high));
    const [group] = await admin.fetchOffsets({ groupId, topics: [config.dlqTopic] });
    for (const p of group?.partitions ?? []) {
      const committed = BigInt(p.offset === "-1" ? "0" : p.offset);
      if (committed < (ends.get(p.partition) ?? 0n)) pending = true;
    }
    if ((group?.partitions ?? []).length === 0) pending = [...ends.values()].some((end) => end > 0n);
  } finally {
    await admin.disconnect();
  }
  if (!pending) return 0;

  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: KeyPartitioner,
    retry: PRODUCER_RETRY,
  });
  const consumer = kafka.consumer({ groupId });
  await Promise.all([producer.connect(), consumer.connect()]);
  let replayed = 0;
  const done = new Set<number>();
  try {
    await new Promise<void>((resolve, reject) => {
      consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
      const finishIfDone = (partition: number, next: bigint) => {
        if (next >= (ends.get(partition) ?? 0n)) done.add(partition);
        if ([...ends.entries()].every(([p, end]) => end === 0n || done.has(p))) resolve();
      };
      void consumer.subscribe({ topic: config.dlqTopic, fromBeginning: true }).then(
        () =>
          consumer.run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            eachBatch: async ({ batch, resolveOffset }) => {
              const end = ends.get(batch.partition) ?? 0n;
              const messages = batch.messages.filter((m) => BigInt(m.offset) < end);
              if (messages.length > 0) {
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
              } else {
                finishIfDone(batch.partition, BigInt(batch.messages[0]?.offset ?? "0"));
              }
            },
          }),
        reject,
      );
    });
  } finally {
    await Promise.all([consumer.disconnect(), producer.disconnect()]);
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
