/**
 * The one poll-until: asks a question at an interval until it has an answer or time runs out.
 * Used where a process waits for a server to reach a state (topic leaders, a sink passing
 * offsets, a ClickHouse mutation applied).
 */
import { sleep } from "./retry";

/** How often to ask and for how long, ms. */
export interface PollOptions {
  intervalMs: number;
  timeoutMs: number;
}

/**
 * Calls `probe` until it resolves with something other than undefined and resolves with that, or
 * resolves with undefined once `timeoutMs` has passed (probe is always called at least once, and
 * once more after the last wait). What `probe` throws is thrown at once.
 */
export async function pollUntil<T>(probe: () => Promise<T | undefined>, options: PollOptions): Promise<T | undefined> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const answer = await probe();
    if (answer !== undefined) return answer;
    if (Date.now() >= deadline) return undefined;
    await sleep(Math.min(options.intervalMs, Math.max(0, deadline - Date.now())));
  }
}
