/**
 * The one deadline: a promise that must settle within a time, else rejects with the caller's
 * error. Used for the ingest's wait for the broker's acknowledgement, its Kafka probe, and the
 * suppressions follower's first read. The work itself is not cancelled.
 */

/**
 * Resolves or rejects as `work` does if it settles within `ms`; otherwise rejects with
 * `timeoutError()`. The timer is cleared either way.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError()), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
