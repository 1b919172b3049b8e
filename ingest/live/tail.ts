/**
 * The live tail: a Kafka consumer of the events and rejected topics that runs only while someone
 * watches (a viewer of /live/events, or a /live/recent request, and IDLE after the last one), so
 * what it shows is what every ingest process had acknowledged, read back from the topics. At
 * start it reads the last BACKFILL records of each partition into the recent buffer, then follows;
 * it commits nothing (a consumer group of its own, new at each start). After a Kafka outage it
 * reconnects as every consumer of ours does (schemas/kafka/reconnect.ts). Records are copied out
 * of kafkajs's fetch buffers, so the recent buffer's bound is what it holds.
 */
import { randomUUID } from "node:crypto";
import type { Consumer, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { withAdmin } from "../../schemas/kafka/client";
import { AppliedOffsets, reconnectOnCrash } from "../../schemas/kafka/reconnect";
import { withDeadline } from "../../schemas/runtime/deadline";
import { RecentBuffer, type RecentBounds } from "./buffer";
import { recordWorkspace, type LiveKind, type LiveRecord } from "./items";

/** What the tail reads and keeps. */
export interface LiveTailOptions {
  kafka: Kafka;
  /** The events topic (accepted) and the rejected topic (refused). */
  topics: Record<LiveKind, string>;
  /** The ingest's KAFKA_CLIENT_ID: the tail's group is `<clientId>-live-<uuid>`. */
  clientId: string;
  recent: RecentBounds;
  /** Records read back per partition at start, ms to wait for them, ms the tail runs unwatched. */
  backfill: number;
  backfillWaitMs: number;
  idleMs: number;
  log: Logger;
}

/** How long the tail's consumer may take to join its group before a request fails, ms. */
const JOIN_WAIT_MS = 30_000;

/** A listener of every record the tail reads, all workspaces (the caller filters). */
export type RecordListener = (record: LiveRecord) => void;

/** Runs while acquired (see the module comment). */
export class LiveTail {
  /** What the tail has read, newest last, bounded. */
  readonly recent: RecentBuffer;
  private readonly listeners = new Set<RecordListener>();
  private users = 0;
  private running: Promise<Consumer> | undefined;
  private idle: NodeJS.Timeout | undefined;
  private stopKeeper: (() => void) | undefined;

  constructor(private readonly options: LiveTailOptions) {
    this.recent = new RecentBuffer(options.recent);
  }

  /** Whether the tail's consumer is running (or starting). */
  get isRunning(): boolean {
    return this.running !== undefined;
  }

  /**
   * Starts the tail unless it runs, and resolves once its backfill is read (or BACKFILL_WAIT has
   * passed); returns the release. Throws if Kafka does not answer (the request fails; the tail
   * is not left half-started).
   */
  async acquire(): Promise<() => void> {
    this.users++;
    clearTimeout(this.idle);
    try {
      this.running ??= this.start();
      await this.running;
    } catch (error) {
      this.running = undefined;
      this.release();
      throw error;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release();
    };
  }

  /** Calls `listener` with every record read from now on; returns the unsubscribe. */
  subscribe(listener: RecordListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops the consumer now, whoever holds it (the ingest is stopping). */
  async stop(): Promise<void> {
    clearTimeout(this.idle);
    const running = this.running;
    this.running = undefined;
    this.stopKeeper?.();
    this.recent.clear();
    if (running) await (await running.catch(() => undefined))?.disconnect();
  }

  private release(): void {
    this.users--;
    if (this.users > 0) return;
    this.idle = setTimeout(
      () => void this.stop().catch((err: unknown) => this.options.log.warn({ err }, "live tail: stop failed")),
      this.options.idleMs,
    );
  }

  private async start(): Promise<Consumer> {
    const { kafka, topics, backfill, log } = this.options;
    const kinds = Object.entries(topics) as [LiveKind, string][];
    const offsets = await withAdmin(kafka, async (admin) =>
      Promise.all(kinds.map(async ([kind, topic]) => ({ kind, topic, partitions: await admin.fetchTopicOffsets(topic) }))),
    );
    // Where each partition starts (BACKFILL records back), and the end the backfill reads to.
    const pending = new Map<string, bigint>();
    const seeks: { topic: string; partition: number; offset: string }[] = [];
    for (const { topic, partitions } of offsets) {
      for (const { partition, low, high } of partitions) {
        const start = BigInt(high) - BigInt(backfill) > BigInt(low) ? BigInt(high) - BigInt(backfill) : BigInt(low);
        seeks.push({ topic, partition, offset: start.toString() });
        if (BigInt(high) > start) pending.set(`${topic}/${partition}`, BigInt(high) - 1n);
      }
    }
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
    const consumer = kafka.consumer({ groupId: `${this.options.clientId}-live-${randomUUID()}`, maxWaitTimeInMs: 250 });
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
            if (workspaceId !== undefined) {
              const record: LiveRecord = { kind, workspaceId, value, id: `${topic}/${partition}/${message.offset}` };
              this.recent.add(record);
              for (const listener of this.listeners) listener(record);
            }
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
    this.stopKeeper = reconnectOnCrash(consumer, begin, { minMs: 500, maxMs: 5_000 }, log, "live tail").stop;
    await consumer.connect();
    try {
      await begin();
    } catch (error) {
      this.stopKeeper();
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }
    await withDeadline(firstJoin, JOIN_WAIT_MS, () => new Error(`the live tail did not join its group within ${JOIN_WAIT_MS} ms`)).catch(
      async (error: unknown) => {
        this.stopKeeper?.();
        await consumer.disconnect().catch(() => undefined);
        throw error;
      },
    );
    await withDeadline(backfilled, this.options.backfillWaitMs, () => new Error("backfill")).catch(() =>
      log.warn({ partitions: pending.size }, "live tail: backfill not read within its wait; serving what was read"),
    );
    log.info({ topics: [...kindOf.keys()], records: this.recent.size }, "live tail running");
    return consumer;
  }
}
