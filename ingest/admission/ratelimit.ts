/**
 * Per-workspace rate limits: a token bucket per key, refilled continuously at `ratePerSecond` up
 * to `burst` tokens. Two are kept per workspace (ingest/http/app.ts). Items (RATE_LIMIT_PER_SECOND):
 * a request whose body was parsed costs one token per batch item (at least one) whatever it is
 * answered after, and a request refused 429 costs nothing (a client retrying above the limit
 * still gets the rate). Decoded bytes (RATE_LIMIT_BYTES_PER_SECOND): every body read pays its
 * decoded bytes in full (`pay`), whatever its answer, 429 included, so reading and parsing are
 * never free. Pure (time is passed in), per process: with N ingest replicas a workspace may send
 * N times the rate. A refusal is a value carrying how long to wait, answered 429 with
 * Retry-After (Segment and RudderStack answer 429 the same way).
 */

/** The outcome of asking for tokens. */
export type Take = { ok: true } | { ok: false; retryAfterSeconds: number };

/** The answer of every take that went through: one object, not one per request. */
const TAKEN: Take = Object.freeze({ ok: true });

/**
 * A Map that keeps at most `max` keys, the least recently used forgotten first (Map keeps
 * insertion order; a key read is moved to the end). Its memory follows the keys it holds: a
 * preallocating LRU (lru-cache allocates its four arrays of `max` slots at construction) held
 * 2.4 MB per 100,000 slots before a single key came.
 */
export class RecentMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(private readonly max: number) {}

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as K);
  }

  get size(): number {
    return this.map.size;
  }
}

interface Bucket {
  tokens: number;
  /** ms timestamp of the last refill. */
  at: number;
}

/** Token buckets by key. */
export class TokenBuckets {
  private readonly buckets: Map<string, Bucket> | RecentMap<string, Bucket>;

  /**
   * @param ratePerSecond tokens added per second; 0 turns the limit off
   * @param burst bucket size: the most tokens (messages, bytes) taken at once after a quiet spell
   * @param maxKeys most keys kept (the least recently used forgotten, as if full again); unset:
   *   every key is kept (workspaces: as many as the keys file names). Keys a client chooses
   *   (client networks) need the bound.
   */
  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    maxKeys?: number,
  ) {
    this.buckets = maxKeys === undefined ? new Map() : new RecentMap<string, Bucket>(maxKeys);
  }

  /** Whether the limit is on (a rate above 0). */
  get enabled(): boolean {
    return this.ratePerSecond > 0;
  }

  /** Gives `n` tokens back to `key`'s bucket (work charged ahead that turned out to be owed by no one), up to its burst. */
  give(key: string, n: number, nowMs: number): void {
    if (this.ratePerSecond === 0) return;
    const bucket = this.refilled(key, nowMs);
    bucket.tokens = Math.min(this.burst, bucket.tokens + n);
  }

  /** Whether `key`'s bucket is full at `nowMs` (nothing taken since it last refilled): a key in good standing. */
  full(key: string, nowMs: number): boolean {
    if (this.ratePerSecond === 0) return true;
    const bucket = this.buckets.get(key);
    if (bucket === undefined) return true;
    return bucket.tokens + ((nowMs - bucket.at) / 1000) * this.ratePerSecond >= this.burst;
  }

  /** Takes `n` tokens from `key`'s bucket at time `nowMs`, or says how long until it could (taking nothing). */
  take(key: string, n: number, nowMs: number): Take {
    if (this.ratePerSecond === 0) return TAKEN;
    const bucket = this.refilled(key, nowMs);
    if (bucket.tokens >= n) {
      bucket.tokens -= n;
      return TAKEN;
    }
    // A request larger than the bucket could never pass: it is asked to wait for a full bucket.
    const missing = Math.min(n, this.burst) - bucket.tokens;
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(missing / this.ratePerSecond)) };
  }

  /**
   * Whether `key`'s bucket holds less than one token at `nowMs` (taking nothing): a request of
   * that key would be refused whatever it carries, so it is answered before its body is read and
   * parsed (a client past its limit cannot make the ingest parse for nothing).
   */
  empty(key: string, nowMs: number): Take {
    return this.ratePerSecond === 0 || this.refilled(key, nowMs).tokens >= 1 ? TAKEN : this.take(key, 1, nowMs);
  }

  /**
   * Takes `n` tokens from `key`'s bucket at `nowMs` in full, below zero if need be (work already
   * done: the decoded bytes of a body read). Refused when the bucket held less than one token
   * before (a request keyed in its headers would have been answered before its body was read),
   * with the wait until it holds one again; the tokens are taken either way, and a bucket below
   * zero refuses until the rate has paid the debt back.
   */
  pay(key: string, n: number, nowMs: number): Take {
    if (this.ratePerSecond === 0) return TAKEN;
    const bucket = this.refilled(key, nowMs);
    const held = bucket.tokens;
    bucket.tokens -= n;
    if (held >= 1) return TAKEN;
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond)) };
  }

  private refilled(key: string, nowMs: number): Bucket {
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.burst, at: nowMs };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * this.ratePerSecond);
    bucket.at = nowMs;
    return bucket;
  }
}

/** Which of a workspace's buckets is empty, or none: `ok`, else the bucket and how long to wait. */
export type Room = { ok: true } | { ok: false; bucket: "items" | "bytes"; retryAfterSeconds: number };

/**
 * Whether a request of `key` may be read at `nowMs`: refused while its items bucket or its bytes
 * bucket holds less than one token (`empty`; the items bucket named first). Takes nothing. A
 * request keyed in its headers is answered 429 on a refusal before its body is read.
 */
export function emptyBucket(items: TokenBuckets, bytes: TokenBuckets, key: string, nowMs: number): Room {
  const itemsRoom = items.empty(key, nowMs);
  if (!itemsRoom.ok) return { ok: false, bucket: "items", retryAfterSeconds: itemsRoom.retryAfterSeconds };
  const bytesRoom = bytes.empty(key, nowMs);
  return bytesRoom.ok ? bytesRoom : { ok: false, bucket: "bytes", retryAfterSeconds: bytesRoom.retryAfterSeconds };
}
