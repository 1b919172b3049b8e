import { test } from "uvu";
import * as assert from "uvu/assert";
import { TokenBuckets } from "../../../ingest/ratelimit";

test("a full bucket accepts up to burst at once, then refuses with the wait", () => {
  const buckets = new TokenBuckets(100, 300);
  assert.equal(buckets.take("ws1", 300, 0), { ok: true });
  assert.equal(buckets.take("ws1", 50, 0), { ok: false, retryAfterSeconds: 1 });
  const wait = buckets.take("ws1", 250, 0);
  assert.equal(wait, { ok: false, retryAfterSeconds: 3 });
});

test("a client retrying above the limit still gets the rate: a refusal takes no token", () => {
  // Single messages at 19 requests a second against 10 a second, for 8 s, the bucket empty first.
  const buckets = new TokenBuckets(10, 10);
  buckets.take("ws1", 10, 0);
  let accepted = 0;
  for (let i = 1; i <= 8 * 19; i++) if (buckets.take("ws1", 1, (i * 1000) / 19).ok) accepted++;
  assert.ok(accepted >= 79 && accepted <= 80, `${accepted} accepted in 8 s at 10 a second`);
  assert.equal(new TokenBuckets(0, 1).take("ws1", 5, 0), { ok: true }, "0: no limit");
});

test("tokens come back at the rate, never above burst", () => {
  const buckets = new TokenBuckets(100, 300);
  buckets.take("ws1", 300, 0);
  assert.equal(buckets.take("ws1", 100, 1_000), { ok: true }, "100 tokens after 1 s");
  assert.equal(buckets.take("ws1", 1, 1_000).ok, false);
  assert.equal(buckets.take("ws1", 300, 60_000), { ok: true }, "full after a long pause");
  assert.equal(buckets.take("ws1", 1, 60_000).ok, false, "but never more than burst");
});

test("empty: true only below one token, and takes nothing", () => {
  const buckets = new TokenBuckets(10, 10);
  assert.ok(buckets.empty("ws1", 0).ok, "a new bucket is full");
  assert.ok(buckets.take("ws1", 9, 0).ok);
  for (let i = 0; i < 3; i++) assert.ok(buckets.empty("ws1", 0).ok, "one token left, still there after asking");
  assert.ok(buckets.take("ws1", 1, 0).ok);
  assert.equal(buckets.empty("ws1", 0), { ok: false, retryAfterSeconds: 1 });
  assert.ok(buckets.empty("ws1", 100).ok, "a token back after 100 ms");
  assert.ok(new TokenBuckets(0, 1).empty("ws1", 0).ok, "no limit");
});

test("keys are independent", () => {
  const buckets = new TokenBuckets(10, 10);
  assert.ok(buckets.take("noisy", 10, 0).ok);
  assert.not.ok(buckets.take("noisy", 1, 0).ok);
  assert.ok(buckets.take("quiet", 10, 0).ok);
});

test("a rate of 0 turns the limit off", () => {
  const buckets = new TokenBuckets(0, 1);
  assert.ok(buckets.take("ws1", 1_000_000, 0).ok);
});

test("a request larger than the bucket waits for a full bucket", () => {
  const buckets = new TokenBuckets(10, 20);
  assert.equal(buckets.take("ws1", 50, 0), { ok: false, retryAfterSeconds: 1 });
});

test.run();
