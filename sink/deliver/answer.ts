/**
 * What a delivery attempt's answer means, and when to try again. Pure: time comes in as an
 * argument, randomness as a function.
 *
 * Rules, with their sources:
 * - 2xx is delivered; 408, 429 and 5xx, a timeout and a connection failure are tried again
 *   (Segment's destinations, RudderStack's router: 5xx/408/429 retried, other 4xx aborted);
 * - any other answer, 3xx included (a redirect is never followed: Standard Webhooks), is a failure
 *   kept at once for the operator (`destinations replay-failures`);
 * - a retry waits min(RETRY.maxMs, RETRY.minMs * 2^(attempt-1)), drawn in its upper half (jitter,
 *   so destinations that failed together do not come back together), or the answer's Retry-After
 *   when that is longer, up to RETRY.retryAfterMaxMs;
 * - a message whose retry would be due past the horizon (4 h after it was received, Segment's
 *   destinations) is kept as a failure instead.
 */

/** What an attempt came back with: an HTTP status, or no answer (timeout, refused connection, reset). */
export type AttemptResult = { status: number; retryAfter?: string } | { error: string };

/** An attempt's verdict. */
export type Verdict =
  { outcome: "delivered" } | { outcome: "retry"; reason: string; retryAfterMs?: number } | { outcome: "failed"; reason: string };

/** The backoff of retries, ms. */
export const RETRY = { minMs: 1_000, maxMs: 300_000, retryAfterMaxMs: 900_000 } as const;

/** The default horizon: how long after receipt a message is still tried, ms (Segment: 4 h). */
export const DEFAULT_HORIZON_MS = 4 * 60 * 60 * 1000;

/** Statuses retried besides 5xx. */
const RETRIED = new Set([408, 429]);

/** The verdict on `result`; `nowMs` reads an HTTP-date Retry-After. */
export function verdictOf(result: AttemptResult, nowMs: number): Verdict {
  if ("error" in result) return { outcome: "retry", reason: result.error };
  const { status } = result;
  if (status >= 200 && status < 300) return { outcome: "delivered" };
  if (RETRIED.has(status) || (status >= 500 && status < 600)) {
    const retryAfterMs = retryAfterOf(result.retryAfter, nowMs);
    return retryAfterMs === undefined
      ? { outcome: "retry", reason: `HTTP ${status}` }
      : { outcome: "retry", reason: `HTTP ${status}`, retryAfterMs };
  }
  if (status >= 300 && status < 400) return { outcome: "failed", reason: `HTTP ${status}: redirects are not followed` };
  return { outcome: "failed", reason: `HTTP ${status}` };
}

/** RFC 9110's three HTTP-date forms: IMF-fixdate, RFC 850 and asctime (no zone: GMT). */
const HTTP_DATES = [
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
  /^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/,
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/,
];

/** Retry-After (whole seconds, or an HTTP-date) in ms from `nowMs`; undefined when absent or neither. */
export function retryAfterOf(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const form = HTTP_DATES.findIndex((pattern) => pattern.test(text));
  if (form < 0) return undefined;
  const at = Date.parse(form === 2 ? `${text} GMT` : text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The wait before attempt `attempt + 1`, ms, after `attempt` (1 = the first) failed; `random` in [0, 1). */
export function retryDelayMs(attempt: number, retryAfterMs: number | undefined, random: () => number = Math.random): number {
  const base = Math.min(RETRY.maxMs, RETRY.minMs * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
  const drawn = Math.round(base / 2 + (base / 2) * random());
  return retryAfterMs === undefined ? drawn : Math.max(drawn, Math.min(retryAfterMs, RETRY.retryAfterMaxMs));
}

/** Whether a retry due at `dueMs` of a message received at `receivedMs` falls past the horizon. */
export function pastHorizon(receivedMs: number, dueMs: number, horizonMs: number): boolean {
  return dueMs - receivedMs > horizonMs;
}
