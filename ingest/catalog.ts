/**
 * Which catalog shapes (schemas/catalog-keys.ts catalogShape) this process delivered the key list
 * of lately. A message's row always carries its shape's hash; its list of keys only when the shape
 * (per workspace, type and event or name) is not known delivered within `ttlMs`: the catalog's
 * view keeps the longest list a shape arrived with (schemas/clickhouse/catalog.ts), so once is
 * enough, and the rows of a busy event are about 100 bytes shorter on the topic and in ClickHouse.
 * A shape counts as delivered only once the broker acknowledged the request that listed it
 * (markDelivered after the produce); should ClickHouse refuse that one row (DLQ), the next message
 * of its shape after `ttlMs` lists it again.
 */
import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";

/**
 * Longest event or page/screen name kept as it is in a cache key, characters; a longer one (a
 * page name has no bound but the message's 32 KB) is keyed by its SHA-256, so the cache's
 * `max` keys hold a few MB: 10,000 keys with 31 KB names would have held 310 MB.
 */
const KEYED_NAME_CHARS = 256;

export class SentShapes {
  private readonly delivered: LRUCache<string, true>;

  /** `max` shapes remembered (least recently delivered forgotten first), each for `ttlMs`. */
  constructor(max = 10_000, ttlMs = 60_000) {
    this.delivered = new LRUCache({ max, ttl: ttlMs });
  }

  /**
   * The cache key of a shape: at most a few hundred characters whatever the name's length. A
   * name is written `s` + itself or, past KEYED_NAME_CHARS, `h` + its SHA-256, so no short name
   * can spell a long one's key (a review of 2026-11-27: a forged short name made a long one's
   * rows leave out their keys for the TTL).
   */
  static key(workspaceId: string, type: string, event: string, shape: number): string {
    const name = event.length <= KEYED_NAME_CHARS ? `s${event}` : `h${createHash("sha256").update(event).digest("base64")}`;
    return `${workspaceId}\u0000${type}\u0000${name}\u0000${shape}`;
  }

  /** Whether a request listing this shape (SentShapes.key) was acknowledged within the TTL. */
  wasDelivered(key: string): boolean {
    return this.delivered.has(key);
  }

  /** The shapes an acknowledged request listed: their lists need not go out again for the TTL. */
  markDelivered(keys: Iterable<string>): void {
    for (const key of keys) this.delivered.set(key, true);
  }
}
