import { test } from "uvu";
import * as assert from "uvu/assert";
import { TokenBuckets, emptyBucket } from "../../../../ingest/admission/ratelimit";

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

test("pay takes in full, below zero, and refuses only a bucket already empty", () => {
  // Bytes: 1,000 a second, a bucket of 1,000; a 4,000-byte body read with the bucket full.
  const bytes = new TokenBuckets(1_000, 1_000);
  assert.equal(bytes.pay("ws1", 4_000, 0), { ok: true }, "a full bucket: served, and in debt by 3,000");
  assert.equal(bytes.empty("ws1", 0), { ok: false, retryAfterSeconds: 4 }, "empty until the debt is paid back");
  assert.equal(bytes.pay("ws1", 500, 1_000), { ok: false, retryAfterSeconds: 3 }, "refused and still taken");
  assert.not.ok(bytes.empty("ws1", 3_400).ok, "-2,500 at 1 s, -100 at 3.4 s");
  assert.ok(bytes.empty("ws1", 3_501).ok, "one token back at 3.501 s");
  assert.equal(new TokenBuckets(0, 1).pay("ws1", 1e9, 0), { ok: true }, "0: no limit");
});

test("parsing is never free: 429 bodies of the items bucket empty the bytes bucket, then requests are refused unread", () => {
  // The items bucket kept at 1..n-1 tokens (review-edge A): every batch of 2,500 is refused by it after
  // parsing and takes no item; each pays its 496 KB, so reads stop once the bytes bucket is empty.
  const items = new TokenBuckets(0.001, 2_500);
  const bytes = new TokenBuckets(1_000_000, 2_000_000);
  items.take("ws1", 2_495, 0);
  let read = 0;
  for (let i = 0; i < 40; i++) {
    const now = i * 10;
    if (!emptyBucket(items, bytes, "ws1", now).ok) continue;
    read++;
    assert.ok(bytes.pay("ws1", 496_401, now).ok, "the bucket held a token: served");
    assert.not.ok(items.take("ws1", 2_500, now).ok, "429 of the items bucket");
  }
  assert.is(read, 5, "a bucket of 2 MB and 1 MB a second: 5 bodies read in 0.4 s, 35 refused unread");
  assert.equal(emptyBucket(items, bytes, "ws1", 390), { ok: false, bucket: "bytes", retryAfterSeconds: 1 });
  assert.ok(items.take("ws1", 5, 390).ok);
  const both = emptyBucket(items, bytes, "ws1", 390);
  assert.is(both.ok ? "" : both.bucket, "items", "both empty: the items bucket is named first");
});

test("the SDK retry case holds with the bytes bucket: 19 single messages a second against 10 still store 10 a second", () => {
  const items = new TokenBuckets(10, 10);
  const bytes = new TokenBuckets(100_000, 200_000);
  items.take("ws1", 10, 0);
  let accepted = 0;
  for (let i = 1; i <= 8 * 19; i++) {
    const now = (i * 1000) / 19;
    if (!emptyBucket(items, bytes, "ws1", now).ok) continue;
    bytes.pay("ws1", 300, now);
    if (items.take("ws1", 1, now).ok) accepted++;
  }
  assert.ok(accepted >= 79 && accepted <= 80, `${accepted} accepted in 8 s at 10 a second`);
});

test.run();
