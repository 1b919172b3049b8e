/**
 * The one reconnect of the project's consumers (the sink's loops, the followers of compacted topics, the delivery's destination loops):
 * kafkajs gives up on errors it deems final, such as no group coordinator found within its retries
 * (Kafka down for longer than they last), crashing the consumer with `restart: false`. Kafka
 * coming back is an infrastructure matter, so the consumer is connected and run again, with
 * backoff, until it answers.
 */
import type { Consumer } from "kafkajs";
import type { Logger } from "pino";
import { backoffMs, type Backoff } from "../runtime/retry";

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
  backoff: Backoff,
  log: Logger,
  label: string,
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
    const waitMs = backoffMs(attempt, backoff);
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
    if (failed !== undefined) log.warn({ err: failed, attempt }, `${label}: reconnect failed; retrying`);
    if (failed !== undefined || crashedMeanwhile) schedule();
  };

  consumer.on(consumer.events.GROUP_JOIN, () => {
    if (attempt > 0) log.info({ attempts: attempt }, `${label}: following again`);
    attempt = 0;
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (stopping) return;
    if (payload.restart) {
      log.warn({ err: payload.error }, `${label}: consumer crashed; kafkajs restarts it`);
      return;
    }
    log.error({ err: payload.error }, `${label}: consumer crashed and kafkajs will not restart it; reconnecting`);
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

/**
 * The offsets applied so far, per partition: `take(partition, offset)` is true for a record past
 * every one taken before on its partition (and records it), false for one already taken. Offsets
 * are kafkajs's decimal strings; they only grow on a topic that is never deleted (setup creates
 * each once; compaction removes records, never reuses offsets). A consumer that commits nothing
 * and runs again reads from its start again: this skips what it already passed on.
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
