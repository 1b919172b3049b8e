/**
 * What a delivery attempt's answer means and when to try again (sink/deliver/answer.ts): 2xx
 * delivered; 408, 429, 5xx and no answer retried; other answers, redirects included, failed;
 * Retry-After as seconds or an HTTP-date; the jittered, capped backoff; the 4 h horizon.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { DEFAULT_HORIZON_MS, pastHorizon, RETRY, retryAfterOf, retryDelayMs, verdictOf } from "../../../../sink/deliver/answer";

/** 2015-10-21 07:28:00 UTC, two minutes before the HTTP-date below. */
const NOW = Date.UTC(2015, 9, 21, 7, 28, 0);
const IN_TWO_MINUTES = "Wed, 21 Oct 2015 07:30:00 GMT";

test("2xx is delivered", () => {
  for (const status of [200, 201, 202, 204, 299]) assert.equal(verdictOf({ status }, NOW), { outcome: "delivered" }, String(status));
  assert.equal(verdictOf({ status: 200, retryAfter: "60" }, NOW), { outcome: "delivered" }, "a Retry-After on a success means nothing");
});

test("408, 429 and 5xx are tried again, naming the status", () => {
  for (const status of [408, 429, 500, 502, 503, 504, 599]) {
    const verdict = verdictOf({ status }, NOW);
    assert.equal(verdict, { outcome: "retry", reason: `HTTP ${status}` }, String(status));
    assert.not.ok("retryAfterMs" in verdict, `${status}: no Retry-After, no retryAfterMs`);
  }
});

test("a retried answer carries its Retry-After in ms, from seconds or from an HTTP-date relative to now", () => {
  assert.equal(verdictOf({ status: 429, retryAfter: "30" }, NOW), { outcome: "retry", reason: "HTTP 429", retryAfterMs: 30_000 });
  assert.equal(verdictOf({ status: 503, retryAfter: IN_TWO_MINUTES }, NOW), {
    outcome: "retry",
    reason: "HTTP 503",
    retryAfterMs: 120_000,
  });
  assert.equal(verdictOf({ status: 503, retryAfter: IN_TWO_MINUTES }, NOW + 60_000), {
    outcome: "retry",
    reason: "HTTP 503",
    retryAfterMs: 60_000,
  });
  assert.equal(verdictOf({ status: 408, retryAfter: "0" }, NOW), { outcome: "retry", reason: "HTTP 408", retryAfterMs: 0 });
});

test("an unreadable Retry-After gives no retryAfterMs", () => {
  for (const retryAfter of ["soon", "", "   ", "120s", "in 5 minutes"]) {
    const verdict = verdictOf({ status: 503, retryAfter }, NOW);
    assert.equal(verdict, { outcome: "retry", reason: "HTTP 503" }, JSON.stringify(retryAfter));
  }
});

test("other 4xx answers are failed at once", () => {
  for (const status of [400, 401, 403, 404, 409, 410, 413, 422])
    assert.equal(verdictOf({ status }, NOW), { outcome: "failed", reason: `HTTP ${status}` }, String(status));
  assert.equal(
    verdictOf({ status: 400, retryAfter: "5" }, NOW),
    { outcome: "failed", reason: "HTTP 400" },
    "a Retry-After does not make a 400 retried",
  );
});

test("a redirect is never followed: 3xx is failed with a reason saying so", () => {
  for (const status of [301, 302, 303, 307, 308]) {
    const verdict = verdictOf({ status }, NOW);
    assert.is(verdict.outcome, "failed", String(status));
    if (verdict.outcome === "failed") {
      assert.match(verdict.reason, /redirect/, String(status));
      assert.match(verdict.reason, String(status));
    }
  }
});

test("answers outside 2xx to 5xx are failed", () => {
  for (const status of [100, 199, 600, 999]) assert.is(verdictOf({ status }, NOW).outcome, "failed", String(status));
});

test("no answer (a refused connection, a reset, a timeout) is tried again, naming the error", () => {
  assert.equal(verdictOf({ error: "ECONNREFUSED" }, NOW), { outcome: "retry", reason: "ECONNREFUSED" });
  assert.equal(verdictOf({ error: "timeout after 10000 ms" }, NOW), { outcome: "retry", reason: "timeout after 10000 ms" });
});

test("retryAfterOf reads seconds as ms", () => {
  assert.is(retryAfterOf("120", NOW), 120_000);
  assert.is(retryAfterOf(" 120 ", NOW), 120_000, "surrounding spaces");
  assert.is(retryAfterOf("0", NOW), 0);
  assert.is(retryAfterOf("86400", NOW), 86_400_000, "not capped here: retryDelayMs caps it");
});

test("retryAfterOf reads an HTTP-date as the ms from now until it, and a past one as 0", () => {
  assert.is(retryAfterOf(IN_TWO_MINUTES, NOW), 120_000);
  assert.is(retryAfterOf("Wednesday, 21-Oct-15 07:30:00 GMT", NOW), 120_000, "the obsolete RFC 850 form");
  assert.is(retryAfterOf(IN_TWO_MINUTES, NOW + 120_000), 0, "due now");
  assert.is(retryAfterOf("Wed, 21 Oct 2015 07:00:00 GMT", NOW), 0, "in the past");
  assert.is(retryAfterOf("Thu, 01 Jan 1970 00:00:00 GMT", NOW), 0);
});

test("retryAfterOf gives undefined for an absent, empty or unreadable header", () => {
  assert.is(retryAfterOf(undefined, NOW), undefined);
  assert.is(retryAfterOf("", NOW), undefined);
  assert.is(retryAfterOf("  ", NOW), undefined);
  assert.is(retryAfterOf("soon", NOW), undefined);
  assert.is(retryAfterOf("120s", NOW), undefined);
});

test("retryAfterOf gives undefined for a value that is neither whole seconds nor an HTTP-date (fractional or negative seconds)", () => {
  // RFC 9110 10.2.3: Retry-After = HTTP-date / delay-seconds, delay-seconds = 1*DIGIT.
  assert.is(retryAfterOf("1.5", NOW), undefined, '"1.5"');
  assert.is(retryAfterOf("-5", NOW), undefined, '"-5"');
});

/** The rule of the module comment, written out: attempt n waits in the upper half of min(max, min * 2^(n-1)). */
const BASES = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000, 300_000];

test("retryDelayMs draws each attempt's wait in the upper half of its doubling, capped base", () => {
  assert.equal(RETRY, { minMs: 1_000, maxMs: 300_000, retryAfterMaxMs: 900_000 });
  BASES.forEach((base, i) => {
    const attempt = i + 1;
    assert.is(
      retryDelayMs(attempt, undefined, () => 0),
      base / 2,
      `attempt ${attempt}, lowest draw`,
    );
    const highest = retryDelayMs(attempt, undefined, () => 0.999999);
    assert.ok(highest <= base && highest >= base - 1, `attempt ${attempt}, highest draw ${highest} ~ ${base}`);
    assert.is(
      retryDelayMs(attempt, undefined, () => 0.5),
      base * 0.75,
      `attempt ${attempt}, middle draw`,
    );
  });
});

test("retryDelayMs grows with the attempt and then stays at RETRY.maxMs", () => {
  let previous = 0;
  for (let attempt = 1; attempt <= 40; attempt++) {
    const delay = retryDelayMs(attempt, undefined, () => 0.999999);
    assert.ok(delay >= previous, `attempt ${attempt}: ${delay} >= ${previous}`);
    assert.ok(delay <= RETRY.maxMs, `attempt ${attempt}: ${delay} <= maxMs`);
    previous = delay;
  }
  assert.is(previous, RETRY.maxMs);
  assert.ok(
    retryDelayMs(2, undefined, () => 0) >= retryDelayMs(1, undefined, () => 0.999999),
    "the second wait's least is the first wait's most",
  );
});

test("retryDelayMs does not overflow on huge attempt numbers", () => {
  for (const attempt of [31, 64, 1_024, 1e6, Number.MAX_SAFE_INTEGER, Infinity]) {
    const delay = retryDelayMs(attempt, undefined, () => 0.999999);
    assert.ok(Number.isFinite(delay), `attempt ${attempt}: finite`);
    assert.ok(delay <= RETRY.maxMs && delay >= RETRY.maxMs / 2, `attempt ${attempt}: ${delay} in [maxMs/2, maxMs]`);
    assert.is(
      retryDelayMs(attempt, undefined, () => 0),
      RETRY.maxMs / 2,
    );
  }
});

test("retryDelayMs with the default Math.random stays in the upper half", () => {
  for (let i = 0; i < 200; i++) {
    const delay = retryDelayMs(3, undefined);
    assert.ok(delay >= 2_000 && delay <= 4_000, String(delay));
  }
});

test("a Retry-After longer than the drawn wait wins, capped at RETRY.retryAfterMaxMs", () => {
  assert.is(
    retryDelayMs(1, 60_000, () => 0),
    60_000,
  );
  assert.is(
    retryDelayMs(10, 600_000, () => 0.999999),
    600_000,
    "longer than RETRY.maxMs is still honoured",
  );
  assert.is(
    retryDelayMs(1, RETRY.retryAfterMaxMs, () => 0),
    RETRY.retryAfterMaxMs,
  );
  assert.is(
    retryDelayMs(1, 86_400_000, () => 0),
    RETRY.retryAfterMaxMs,
    "a day is capped",
  );
  assert.is(
    retryDelayMs(1, Number.MAX_SAFE_INTEGER, () => 0),
    RETRY.retryAfterMaxMs,
  );
});

test("a Retry-After shorter than the drawn wait does not shorten it", () => {
  assert.is(
    retryDelayMs(5, 1_000, () => 0),
    8_000,
  );
  assert.is(
    retryDelayMs(5, 0, () => 0),
    8_000,
    "Retry-After: 0",
  );
  assert.is(
    retryDelayMs(1, 499, () => 0),
    500,
  );
});

test("pastHorizon: a retry due exactly at the horizon is not past it; one ms more is", () => {
  const received = Date.UTC(2026, 0, 1);
  assert.is(DEFAULT_HORIZON_MS, 4 * 3_600_000, "Segment's 4 hours");
  assert.not.ok(pastHorizon(received, received + DEFAULT_HORIZON_MS, DEFAULT_HORIZON_MS));
  assert.ok(pastHorizon(received, received + DEFAULT_HORIZON_MS + 1, DEFAULT_HORIZON_MS));
  assert.not.ok(pastHorizon(received, received, DEFAULT_HORIZON_MS));
  assert.not.ok(pastHorizon(received, received + 1_000, 1_000));
  assert.ok(pastHorizon(received, received + 1_001, 1_000));
  assert.ok(pastHorizon(received, received + 1, 0), "a zero horizon: any later retry is past it");
});

test.run();
