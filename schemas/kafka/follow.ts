/**
 * Follows a compacted topic (one record per key, the latest kept): reads it whole, then applies
 * each later record as it arrives (a fetch waits at most a second). The suppressions topic
 * (schemas/privacy/follower.ts) and the destinations topic (schemas/destinations.ts) are read so.
 * `followCompacted` resolves once the topic has been read to the end offsets it had at start, so
 * a process acts on nothing before it knows every entry written until then. Each follower reads
 * under a consumer group of its own and commits nothing.
 *
 * After a Kafka outage kafkajs may crash the consumer and not restart it (`consumer.crash` with
 * `restart: false`, e.g. no group coordinator found within its retries): the follower then
 * connects, subscribes and runs again itself, with backoff, until Kafka answers
 * (schemas/kafka/reconnect.ts). A consumer that starts again reads the topic from its start;
 * records at offsets already applied are skipped (AppliedOffsets), so a re-read never puts back,
 * even for a moment, an entry a later record replaced.
 */
import { randomUUID } from "node:crypto";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { withAdmin } from "./client";
import { withDeadline } from "../runtime/deadline";
import type { Backoff } from "../runtime/retry";
import { AppliedOffsets, reconnectOnCrash } from "./reconnect";

/** A running follower. */
export interface Following {
  stop(): Promise<void>;
}

/**
 * The followers' default backoff: at most 5 s between attempts. Joining the group again then waits
 * for the member of before the outage to time out (kafkajs's 30 s session): in fault scenario 10
 * both suppressions followers were back 30.6 s after Kafka.
 */
export const RECONNECT_BACKOFF: Backoff = { minMs: 500, maxMs: 5_000 };

/** What a follower is told of each record: its key (UTF-8, '' when none) and value (null: a tombstone). */
export type ApplyRecord = (key: string, value: Buffer | null, at: { partition: number; offset: string }) => void;

/** Where and how a follower reads. */
export interface FollowOptions {
  topic: string;
  /** Prefix of its consumer group (a random suffix makes the group its own). */
  groupPrefix: string;
  /** Names the topic in log lines. */
  label: string;
  log: Logger;
  /** Bound on the first read to the end, ms. */
  timeoutMs?: number;
  backoff?: Backoff;
}

/**
 * Reads the topic whole through `apply`, then keeps following it, across Kafka outages (see the
 * module comment). Throws when the topic cannot be read to its end within `timeoutMs` (an
 * infrastructure failure: the process or command does not start).
 */
export async function followCompacted(kafka: Kafka, options: FollowOptions, apply: ApplyRecord): Promise<Following> {
  const { topic, label, log, timeoutMs = 60_000, backoff = RECONNECT_BACKOFF } = options;
  const ends = new Map<number, bigint>();
  for (const p of await withAdmin(kafka, (admin) => admin.fetchTopicOffsets(topic))) ends.set(p.partition, BigInt(p.high));
  const pending = new Set([...ends].filter(([, high]) => high > 0n).map(([partition]) => partition));
  let caughtUp: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    caughtUp = resolve;
    if (pending.size === 0) resolve();
  });
  const applied = new AppliedOffsets();
  const consumer = kafka.consumer({ groupId: `${options.groupPrefix}-${randomUUID()}`, maxWaitTimeInMs: 1_000 });
  const begin = async () => {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (!applied.take(partition, message.offset)) return; // read again after a restart
        apply(message.key?.toString() ?? "", message.value, { partition, offset: message.offset });
        if (pending.has(partition) && BigInt(message.offset) + 1n >= ends.get(partition)!) {
          pending.delete(partition);
          if (pending.size === 0) caughtUp();
        }
      },
    });
  };
  const keeper = reconnectOnCrash(consumer, begin, backoff, log, label);
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
  return { stop };
}
