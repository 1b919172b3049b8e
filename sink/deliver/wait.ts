/**
 * A destination's wait for a request's next attempt (sink/deliver/loop.ts), heartbeating its
 * consumer group as it waits. A failed heartbeat ends the wait: a rebalance is under way or this
 * member is gone, so the partition may already be another member's, which reads the request again
 * from the last commit and sends it; this member must not send it concurrently. The request is
 * given up uncommitted (at least once).
 */
import { sleep } from "../../schemas/runtime/retry";

/** The longest wait between heartbeats while a request waits for its retry, ms (the consumer's heartbeatInterval). */
export const HEARTBEAT_MS = 3_000;

/** Why a request was given up without settling: the loop stops, the destination changed, or the member lost its group. */
export class Interrupted extends Error {}

/** What a wait watches. */
export interface WaitWatch {
  /** Whether the request is still this loop's to send (false: the loop stops or the destination is paused). */
  live: () => boolean;
  /** kafkajs's heartbeat of the batch; it rejects when a rebalance is under way or the member is gone. */
  heartbeat: () => Promise<void>;
  /** Aborts the wait at once (the loop's stop). */
  signal: AbortSignal;
  /** Called after each heartbeat (the oldest-waiting gauge). */
  tick?: () => void;
}

/**
 * Heartbeats now; throws Interrupted when the heartbeat fails (the group is rebalancing or has
 * dropped this member: see the module comment), with the heartbeat's error as its cause.
 */
export async function beat(heartbeat: () => Promise<void>): Promise<void> {
  try {
    await heartbeat();
  } catch (error) {
    throw new Interrupted("the consumer group is rebalancing or dropped this member: the request is given up uncommitted", {
      cause: error,
    });
  }
}

/** Waits `ms`, heartbeating at least every HEARTBEAT_MS; throws Interrupted when the watch says so (see WaitWatch, beat). */
export async function retryWait(ms: number, watch: WaitWatch): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await sleep(Math.min(HEARTBEAT_MS, until - Date.now()), watch.signal);
    if (!watch.live()) throw new Interrupted("the loop stops or the destination is paused");
    await beat(watch.heartbeat);
    watch.tick?.();
  }
}
