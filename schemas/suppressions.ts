/**
 * Follows the suppressions topic (schemas/privacy.ts) into a PrivacyList, in the ingest and in
 * the sink. `followSuppressions` resolves once the topic has been read to the end offsets it had
 * at start, so a process never stores what a request had already dropped; later records are
 * applied as they arrive (a fetch waits at most a second). Each process reads the whole topic
 * under a consumer group of its own and commits nothing.
 */
import { randomUUID } from "node:crypto";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { parseEntry, type PrivacyList } from "./privacy";

/** A running follower. */
export interface Following {
  stop(): Promise<void>;
}

/**
 * Reads `topic` whole into `list`, then keeps following it. Throws when the topic cannot be read
 * to its end within `timeoutMs` (an infrastructure failure: the process does not start).
 */
export async function followSuppressions(
  kafka: Kafka,
  topic: string,
  clientId: string,
  list: PrivacyList,
  log: Logger,
  timeoutMs = 60_000,
): Promise<Following> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map<number, bigint>();
  try {
    for (const p of await admin.fetchTopicOffsets(topic)) ends.set(p.partition, BigInt(p.high));
  } finally {
    await admin.disconnect();
  }
  const pending = new Set([...ends].filter(([, high]) => high > 0n).map(([partition]) => partition));
  let caughtUp: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    caughtUp = resolve;
    if (pending.size === 0) resolve();
  });
  const consumer = kafka.consumer({ groupId: `${clientId}-suppressions-${randomUUID()}`, maxWaitTimeInMs: 1_000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      const key = message.key?.toString() ?? "";
      const entry = parseEntry(message.value);
      if (message.value !== null && entry === undefined)
        log.warn({ topic, partition, offset: message.offset }, "suppressions: record ignored");
      list.apply(key, entry);
      if (pending.has(partition) && BigInt(message.offset) + 1n >= ends.get(partition)!) {
        pending.delete(partition);
        if (pending.size === 0) caughtUp();
      }
    },
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${topic} not read to its end within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([ready, timeout]);
  } catch (error) {
    await consumer.disconnect();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  log.info({ topic, users: list.size }, "suppressions read");
  return { stop: () => consumer.disconnect() };
}
