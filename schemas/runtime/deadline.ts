/**
 * The deadlines: a promise that must settle within a time, else rejects with the caller's error
 * (the ingest's wait for the broker's acknowledgement, its Kafka probe, the suppressions
 * follower's first read); a stop's wait that gives up; the process's last bound on its stop. The
 * work itself is never cancelled.
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

/**
 * Waits for `work` to settle, at most `ms`. Resolves true when it settled in time (resolved or
 * rejected: the caller reads its outcome from `work` itself), false when the wait gave up. Never
 * rejects; the work goes on. Used for the stops' waits on a Kafka or ClickHouse that may not answer.
 */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = work.then(
    () => true,
    () => true,
  );
  return Promise.race([settled, late]).finally(() => clearTimeout(timer));
}

/**
 * How long past its own bound a stop may still run before exitAfter ends the process, ms: the
 * manifests' grace periods count it, so Kubernetes's SIGKILL never comes before the logged exit.
 */
export const STOP_MARGIN_MS = 2_000;

/**
 * A process's last bound on its stop: `ms` after this call it logs and exits with code 1,
 * whatever is still running. The timer does not keep the process alive. Each service's stop bounds
 * its own waits; this catches any it does not (a Kubernetes pod is killed at its grace period
 * anyway, without a line in its log).
 */
export function exitAfter(ms: number, log: { fatal: (obj: object, msg: string) => void }): void {
  setTimeout(() => {
    log.fatal({ boundMs: ms }, "the stop did not finish within its bound: exiting");
    process.exit(1);
  }, ms).unref();
}
