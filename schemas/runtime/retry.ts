/**
 * The one retrier: runs an operation again, with exponential backoff, until it succeeds, its
 * error is final, a deadline passes or a signal aborts. Used for ClickHouse inserts and consumer
 * reconnects (sink), whole Kafka sends (schemas/kafka/producer.ts) and the suppressions follower's
 * reconnects. Throws the last error when it gives up.
 */

/** Waits between attempts, ms: the first is `minMs`, each next one doubles, up to `maxMs`. */
export interface Backoff {
  minMs: number;
  maxMs: number;
}

/** The wait before retry `attempt` (1, 2, ...), ms. */
export function backoffMs(attempt: number, backoff: Backoff): number {
  return Math.min(backoff.maxMs, backoff.minMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 30));
}

/** When `retry` gives up, and what it calls between attempts. */
export interface RetryOptions extends Backoff {
  /** Aborting stops the retries (a wait ends at once); `retry` then throws the last error. */
  signal?: AbortSignal;
  /** Ms from the call after which no attempt starts: a wait that would end past it throws instead. */
  deadlineMs?: number;
  /** Whether an error is worth another attempt; false throws it at once. Default: every error is. */
  retriable?: (error: unknown) => boolean;
  /** Called before each wait (log, heartbeat). */
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void | Promise<void>;
}

/** Runs `fn` until it resolves, waiting backoffMs between attempts; throws as RetryOptions says. */
export async function retry<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const deadline = options.deadlineMs === undefined ? Infinity : Date.now() + options.deadlineMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const waitMs = backoffMs(attempt, options);
      if (options.signal?.aborted || options.retriable?.(error) === false || Date.now() + waitMs >= deadline) throw error;
      await options.onRetry?.(error, attempt, waitMs);
      await sleep(waitMs, options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
