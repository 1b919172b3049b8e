/**
 * The live tail: a Kafka consumer of the events and rejected topics, run inside the live view's
 * worker thread (ingest/live/worker.ts) while someone watches, so what it shows is what every
 * ingest process had acknowledged, read back from the topics, and none of its reading costs the
 * public API's event loop. At start it reads the last BACKFILL records of each partition, then
 * follows; it commits nothing (a consumer group of its own, new at each start). After a Kafka
 * outage it reconnects as every consumer of ours does (schemas/kafka/reconnect.ts). Records are
 * copied out of kafkajs's fetch buffers, so the recent buffer's bound is what it holds.
 */
import { randomUUID } from "node:crypto";
import type { Consumer, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { withAdmin } from "../../schemas/kafka/client";
import { AppliedOffsets, reconnectOnCrash } from "../../schemas/kafka/reconnect";
import { withDeadline } from "../../schemas/runtime/deadline";
import { recordWorkspace, type LiveKind, type LiveRecord } from "./items";

/** What the tail reads. */
export interface LiveTailOptions {
  kafka: Kafka;
  /** The events topic (accepted) and the rejected topic (refused). */
  topics: Record<LiveKind, string>;
  /** The ingest's KAFKA_CLIENT_ID: the tail's group is `<clientId>-live-<uuid>`. */
  clientId: string;
  /** Records read back per partition at start, and ms to wait for them. */
  backfill: number;
  backfillWaitMs: number;
  log: Logger;
}

/** How long the tail's consumer may take to join its group before the start fails, ms. */
const JOIN_WAIT_MS = 30_000;

/** A listener of every record the tail reads, all workspaces (the caller filters). */
export type RecordListener = (record: LiveRecord) => void;

/** A running tail. */
export interface RunningTail {
  /** Disconnects the consumer. */
  stop: () => Promise<void>;
}

/**
 * Starts the consumer and resolves once its backfill is read (or `backfillWaitMs` passed), every
 * record read passed to `onRecord` in each partition's order. Throws if Kafka does not answer or
 * the group is not joined within JOIN_WAIT_MS (nothing is left running).
 */
export async function runTail(options: LiveTailOptions, onRecord: RecordListener): Promise<RunningTail> {
  const { kafka, topics, log } = options;
  const kinds = Object.entries(topics) as [LiveKind, string][];
  const { seeks, pending } = await backfillPlan(kafka, kinds, options.backfill);
  let caughtUp: () => void = () => undefined;
  const backfilled = new Promise<void>((resolve) => {
    caughtUp = resolve;
    if (pending.size === 0) resolve();
  });
  const kindOf = new Map(kinds.map(([kind, topic]) => [topic, kind]));
  // Read again after a reconnect or a rejoin (no commits): each record is passed on once, and a
  // rejoin resumes where the tail was, not at the topic's end.
  const applied = new Map(kinds.map(([, topic]) => [topic, new AppliedOffsets()]));
  const next = new Map<string, string>();
  const seekAll = () => {
    for (const seek of seeks) consumer.seek({ ...seek, offset: next.get(`${seek.topic}/${seek.partition}`) ?? seek.offset });
  };
  const consumer = kafka.consumer({ groupId: `${options.clientId}-live-${randomUUID()}`, maxWaitTimeInMs: 250 });
  const begin = async () => {
    for (const topic of kindOf.keys()) await consumer.subscribe({ topic, fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        const kind = kindOf.get(topic)!;
        if (!applied.get(topic)!.take(partition, message.offset)) return;
        next.set(`${topic}/${partition}`, (BigInt(message.offset) + 1n).toString());
        if (message.value !== null) {
          const value = Buffer.from(message.value); // not a view of kafkajs's fetch buffer
          const workspaceId = recordWorkspace(kind, value);
          if (workspaceId !== undefined) onRecord({ kind, workspaceId, value, id: `${topic}/${partition}/${message.offset}` });
        }
        const key = `${topic}/${partition}`;
        const last = pending.get(key);
        if (last !== undefined && BigInt(message.offset) >= last) {
          pending.delete(key);
          if (pending.size === 0) caughtUp();
        }
      },
    });
  };
  // Each join (the first, and after a rebalance or a reconnect) starts every partition where the
  // tail is: a new group has no commits, so without the seek it would start at the topic's end
  // as of the join, missing what arrived between the start and the join (seconds).
  let joined: () => void = () => undefined;
  const firstJoin = new Promise<void>((resolve) => (joined = resolve));
  consumer.on(consumer.events.GROUP_JOIN, () => {
    seekAll();
    joined();
  });
  const stopKeeper = reconnectOnCrash(consumer, begin, { minMs: 500, maxMs: 5_000 }, log, "live tail").stop;
  await joinOrStop(consumer, begin, firstJoin, stopKeeper);
  await withDeadline(backfilled, options.backfillWaitMs, () => new Error("backfill")).catch(() =>
    log.warn({ partitions: pending.size }, "live tail: backfill not read within its wait; serving what was read"),
  );
  log.info({ topics: [...kindOf.keys()] }, "live tail running");
  return {
    stop: async () => {
      stopKeeper();
      await consumer.disconnect();
    },
  };
}

/** A partition's starting offset for the tail's consumer. */
interface Seek {
  topic: string;
  partition: number;
  offset: string;
}

/**
 * Where each partition of the topics starts (`backfill` records before its end, or its low
 * watermark) and, for each partition with records there, the last offset the backfill reads
 * (`topic/partition` -> offset). Throws what kafkajs's admin throws.
 */
async function backfillPlan(
  kafka: Kafka,
  kinds: [LiveKind, string][],
  backfill: number,
): Promise<{ seeks: Seek[]; pending: Map<string, bigint> }> {
  const offsets = await withAdmin(kafka, async (admin) =>
    Promise.all(kinds.map(async ([kind, topic]) => ({ kind, topic, partitions: await admin.fetchTopicOffsets(topic) }))),
  );
  const pending = new Map<string, bigint>();
  const seeks: Seek[] = [];
  for (const { topic, partitions } of offsets) {
    for (const { partition, low, high } of partitions) {
      const start = BigInt(high) - BigInt(backfill) > BigInt(low) ? BigInt(high) - BigInt(backfill) : BigInt(low);
      seeks.push({ topic, partition, offset: start.toString() });
      if (BigInt(high) > start) pending.set(`${topic}/${partition}`, BigInt(high) - 1n);
    }
  }
  return { seeks, pending };
}

/**
 * Connects the consumer, runs it (`begin`) and waits for its first group join, JOIN_WAIT_MS at
 * most. On any failure nothing is left running: the reconnect keeper is stopped, the consumer
 * disconnected, and the error thrown.
 */
async function joinOrStop(consumer: Consumer, begin: () => Promise<void>, firstJoin: Promise<void>, stopKeeper: () => void): Promise<void> {
  const stop = async (error: unknown): Promise<never> => {
    stopKeeper();
    await consumer.disconnect().catch(() => undefined);
    throw error;
  };
  await consumer.connect();
  await begin().catch(stop);
  await withDeadline(firstJoin, JOIN_WAIT_MS, () => new Error(`the live tail did not join its group within ${JOIN_WAIT_MS} ms`)).catch(
    stop,
  );
}
