/**
 * Follows the suppressions topic (schemas/privacy/list.ts) into a PrivacyList, in the ingest and in
 * the sink. `followSuppressions` resolves once the topic has been read to the end offsets it had
 * at start, so a process never stores what a request had already dropped; later records are
 * applied as they arrive (a fetch waits at most a second). Each process reads the whole topic
 * under a consumer group of its own and commits nothing.
 *
 * After a Kafka outage kafkajs may crash the consumer and not restart it (`consumer.crash` with
 * `restart: false`, e.g. no group coordinator found within its retries): the follower then
 * connects, subscribes and runs again itself, with backoff, until Kafka answers (reconnectOnCrash).
 * A consumer that starts again (kafkajs's restart or ours) reads the topic from its start, having
 * committed nothing; records at offsets already applied are skipped (AppliedOffsets), so a re-read
 * never puts back, even for a moment, an entry a later record replaced (an unsuppressed user
 * suppressed again while the topic is read).
 */
import { randomUUID } from "node:crypto";
import type { Consumer, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { parseEntry, type PrivacyList } from "./list";

/** A running follower. */
export interface Following {
  stop(): Promise<void>;
}

/** Waits between reconnection attempts, ms: the first is `minMs`, each next one doubles, up to `maxMs`. */
export interface ReconnectBackoff {
  minMs: number;
  maxMs: number;
}

/**
 * The follower's default backoff: at most 5 s between attempts. Joining the group again then waits
 * for the member of before the outage to time out (kafkajs's 30 s session): in fault scenario 10
 * both followers were back 30.6 s after Kafka.
 */
export const RECONNECT_BACKOFF: ReconnectBackoff = { minMs: 500, maxMs: 5_000 };

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
  backoff: ReconnectBackoff = RECONNECT_BACKOFF,
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
  const keeper = reconnectOnCrash(consumer, begin, backoff, log, topic);
  let timer: NodeJS.Timeout | undefined;
  const stop = async () => {
    keeper.stop();
    await consumer.disconnect();
  };
  try {
    await consumer.connect();
    await begin();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${topic} not read to its end within ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([ready, timeout]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  log.info({ topic, users: list.size }, "suppressions read");
  return { stop };
}

/**
 * The offsets applied so far, per partition: `take(partition, offset)` is true for a record past
 * every one taken before on its partition (and records it), false for one already taken. Offsets
 * are kafkajs's decimal strings; they only grow on a topic that is never deleted (the migration
 * creates it once; compaction removes records, never reuses offsets).
 */
export class AppliedOffsets {
  private readonly next = new Map<number, bigint>();

  /** Whether the record at `offset` of `partition` is new; if so, it counts as applied from now on. */
  take(partition: number, offset: string): boolean {
    const at = BigInt(offset);
    if (at < (this.next.get(partition) ?? 0n)) return false;
    this.next.set(partition, at + 1n);
    return true;
  }
}

/** The wait before reconnection attempt `attempt` (1, 2, ...), ms. */
export function reconnectDelayMs(attempt: number, backoff: ReconnectBackoff): number {
  return Math.min(backoff.maxMs, backoff.minMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 30));
}

/** The calls of a kafkajs Consumer that reconnectOnCrash makes. */
export type CrashableConsumer = Pick<Consumer, "on" | "events" | "connect" | "disconnect">;

/**
 * Keeps a consumer running after crashes kafkajs will not restart. On `consumer.crash` with
 * `restart: false` (kafkajs has disconnected it), waits reconnectDelayMs and calls
 * `consumer.connect()` then `begin()` (subscribe and run); a failed attempt, or a crash while it
 * runs, schedules the next one with a longer wait; joining the group again resets the backoff.
 * Crashes kafkajs restarts itself (`restart: true`) are left to it. At most one attempt is
 * waiting or running at a time. `stop()` ends the attempts (the caller disconnects the consumer);
 * an attempt already running disconnects what it connected. Never throws: Kafka coming back is an
 * infrastructure matter, retried until it answers.
 */
export function reconnectOnCrash(
  consumer: CrashableConsumer,
  begin: () => Promise<void>,
  backoff: ReconnectBackoff,
  log: Logger,
  topic: string,
): { stop(): void } {
  let stopping = false;
  let attempt = 0;
  let waiting: NodeJS.Timeout | undefined;
  let running = false;
  // A crash kafkajs will not restart while an attempt runs (its join failed inside run()): the
  // next attempt is scheduled when this one returns.
  let crashedMeanwhile = false;

  const schedule = () => {
    if (stopping || waiting !== undefined || running) return;
    attempt++;
    const waitMs = reconnectDelayMs(attempt, backoff);
    waiting = setTimeout(() => {
      waiting = undefined;
      void reconnect();
    }, waitMs);
  };

  const reconnect = async () => {
    if (stopping) return;
    running = true;
    crashedMeanwhile = false;
    let failed: unknown;
    try {
      await consumer.connect();
      if (!stopping) await begin();
    } catch (error) {
      failed = error;
    } finally {
      running = false;
    }
    if (stopping) {
      await consumer.disconnect().catch(() => {});
      return;
    }
    if (failed !== undefined) log.warn({ err: failed, attempt, topic }, "suppressions: reconnect failed; retrying");
    if (failed !== undefined || crashedMeanwhile) schedule();
  };

  consumer.on(consumer.events.GROUP_JOIN, () => {
    if (attempt > 0) log.info({ topic, attempts: attempt }, "suppressions: following again");
    attempt = 0;
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (stopping) return;
    if (payload.restart) {
      log.warn({ err: payload.error, topic }, "suppressions: consumer crashed; kafkajs restarts it");
      return;
    }
    log.error({ err: payload.error, topic }, "suppressions: consumer crashed and kafkajs will not restart it; reconnecting");
    if (running) crashedMeanwhile = true;
    else schedule();
  });

  return {
    stop: () => {
      stopping = true;
      clearTimeout(waiting);
      waiting = undefined;
    },
  };
}
