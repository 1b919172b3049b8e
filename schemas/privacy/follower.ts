/**
 * Follows the suppressions topic (schemas/privacy/list.ts) into a PrivacyList, in the ingest and in
 * the sink. `followSuppressions` resolves once the topic has been read to the end offsets it had
 * at start, so a process never stores what a request had already dropped; later records are
 * applied as they arrive (a fetch waits at most a second). Each process reads the whole topic
 * under a consumer group of its own and commits nothing.
 *
 * After a Kafka outage kafkajs may crash the consumer and not restart it (`consumer.crash` with
 * `restart: false`, e.g. no group coordinator found within its retries): the follower then
 * connects, subscribes and runs again itself, with backoff, until Kafka answers
 * (schemas/kafka/reconnect.ts).
 * A consumer that starts again (kafkajs's restart or ours) reads the topic from its start, having
 * committed nothing; records at offsets already applied are skipped (AppliedOffsets), so a re-read
 * never puts back, even for a moment, an entry a later record replaced (an unsuppressed user
 * suppressed again while the topic is read).
 */
import { randomUUID } from "node:crypto";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { parseEntry, type PrivacyList } from "./list";
import { withAdmin } from "../kafka/client";
import { withDeadline } from "../runtime/deadline";
import type { Backoff } from "../runtime/retry";
import { AppliedOffsets, reconnectOnCrash } from "../kafka/reconnect";

/** A running follower. */
export interface Following {
  stop(): Promise<void>;
}

/**
 * The follower's default backoff: at most 5 s between attempts. Joining the group again then waits
 * for the member of before the outage to time out (kafkajs's 30 s session): in fault scenario 10
 * both followers were back 30.6 s after Kafka.
 */
export const RECONNECT_BACKOFF: Backoff = { minMs: 500, maxMs: 5_000 };

/**
 * Reads `topic` whole into `list`, then keeps following it, across Kafka outages (see the
 * module comment). Throws when the topic cannot be read to its end within `timeoutMs` (an
 * infrastructure failure: the process does not start).
 */
export async function followSuppressions(
  kafka: Kafka,
  topic: string,
  clientId: string,
  list: PrivacyList,
  log: Logger,
  timeoutMs = 60_000,
  backoff: Backoff = RECONNECT_BACKOFF,
): Promise<Following> {
  const ends = new Map<number, bigint>();
  for (const p of await withAdmin(kafka, (admin) => admin.fetchTopicOffsets(topic))) ends.set(p.partition, BigInt(p.high));
  const pending = new Set([...ends].filter(([, high]) => high > 0n).map(([partition]) => partition));
  let caughtUp: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    caughtUp = resolve;
    if (pending.size === 0) resolve();
  });
  const applied = new AppliedOffsets();
  const consumer = kafka.consumer({ groupId: `${clientId}-suppressions-${randomUUID()}`, maxWaitTimeInMs: 1_000 });
  const begin = async () => {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (!applied.take(partition, message.offset)) return; // read again after a restart
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
  };
  const keeper = reconnectOnCrash(consumer, begin, backoff, log, "suppressions");
  const stop = async () => {
    keeper.stop();
    await consumer.disconnect();
  };
  try {
    await consumer.connect();
    await begin();
    await withDeadline(ready, timeoutMs, () => new Error(`${topic} not read to its end within ${timeoutMs} ms`));
  } catch (error) {
    await stop();
    throw error;
  }
  log.info({ topic, users: list.size }, "suppressions read");
  return { stop };
}
