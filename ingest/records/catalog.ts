/**
 * Which catalog shapes (schemas/catalog.ts catalogShape) this process delivered the key list
 * of lately. A message's row always carries its shape's hash; its list of keys only when the shape
 * (per workspace, type and event or name) is not known delivered within `ttlMs`: the catalog's
 * view keeps the longest list a shape arrived with (schemas/clickhouse/catalog.ts), so once is
 * enough, and the rows of a busy event are about 100 bytes shorter on the topic and in ClickHouse.
 * A shape counts as delivered only once the broker acknowledged the request that listed it
 * (markDelivered after the produce); should ClickHouse refuse that one row (DLQ), the next message
 * of its shape after `ttlMs` lists it again.
 *
 * CatalogCaps bounds what one workspace can add to the catalog in a day (issue 46, row 4): past
 * its caps a message's row carries OVER_CAP_SHAPE instead of its shape and no key list, so it is
 * stored in events as sent but counted in the catalog's over-cap row of its workspace, type and
 * day. The caps are per process (each node:cluster worker and each pod admits its own).
 */
import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { OVER_CAP_SHAPE, catalogShape } from "../../schemas/catalog";
import type { JsonObject, Message } from "../../schemas/messages";

/**
 * Longest event or page/screen name kept as it is in a cache key, characters; a longer one (a
 * page name has no bound but the message's 32 KB) is keyed by its SHA-256, so the cache's
 * `max` keys hold a few MB: 10,000 keys with 31 KB names would have held 310 MB.
 */
const KEYED_NAME_CHARS = 256;

export class SentShapes {
  private readonly delivered: LRUCache<string, true>;

  /**
   * `max` shapes remembered (least recently delivered forgotten first), each for `ttlMs`; `caps`
   * the daily catalog caps this process applies (absent: none).
   */
  constructor(
    max = 10_000,
    ttlMs = 60_000,
    private readonly caps?: CatalogCaps,
  ) {
    this.delivered = new LRUCache({ max, ttl: ttlMs });
  }

  /**
   * The catalog shape a message's row carries: `shape`, or OVER_CAP_SHAPE when it would add a
   * name or shape past its workspace's caps for `day` (CatalogCaps.admit).
   */
  capped(workspaceId: string, type: string, name: string, shape: number, day: string): number {
    return this.caps === undefined || this.caps.admit(workspaceId, type, name, shape, day) === "within" ? shape : OVER_CAP_SHAPE;
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

/**
 * Most new catalog entries one workspace may add per UTC day and process (env
 * CATALOG_EVENT_NAMES_PER_DAY, CATALOG_PAGE_NAMES_PER_DAY, CATALOG_SHAPES_PER_DAY).
 */
export interface CatalogCapSettings {
  /** Distinct track event names. */
  eventNamesPerDay: number;
  /** Distinct page and screen names (one cap for both). */
  pageNamesPerDay: number;
  /** Distinct shapes, each a catalog row: (type, name, catalogShape) triples, of every type. */
  shapesPerDay: number;
}

/** Which cap a message passed: `within` none; the other values name the cap (a metric's label). */
export type CapVerdict = "within" | "event_names" | "page_names" | "shapes";

/**
 * Workspaces whose day a CatalogCaps remembers at once, least recently seen forgotten first (it
 * then starts that workspace's day again: a forgotten workspace may add a cap's worth more, never
 * less). Workspaces come from the configured keys, not from what a sender chooses.
 */
export const CAP_WORKSPACES = 256;

/**
 * Longest name remembered as it is, UTF-16 units; a longer one is remembered by its SHA-256
 * (44 characters), so one entry is at most about 200 bytes whatever the name (a page name may
 * be 32 KB). Exact strings, not a short hash: a name colliding with one already admitted would
 * pass uncounted, and a fast hash's collisions can be searched for.
 */
const REMEMBERED_NAME_CHARS = 64;

/**
 * One workspace's catalog entries of one UTC day: each (type, name) admitted with its shapes (one
 * shape as a number, more in a Set: a Set per name was most of the memory).
 */
interface WorkspaceDay {
  /** YYYY-MM-DD, UTC. */
  day: string;
  names: Map<string, number | Set<number>>;
  eventNames: number;
  pageNames: number;
  shapes: number;
}

/**
 * Per-workspace caps on what a day may add to the catalog, in this process. A message passes
 * when its (type, name) and shape were admitted earlier that day, or when admitting them keeps
 * the workspace's day within every cap. Each workspace counts alone (one key cannot use another
 * workspace's room). Memory: at most eventNamesPerDay + pageNamesPerDay + a few names (one per
 * other type) and shapesPerDay shapes per workspace, for at most CAP_WORKSPACES workspaces; at
 * the defaults (2,000, 2,000, 10,000) a workspace that fills every cap holds 1.6 MB (measured with
 * 64-character names and 60-character CJK page names), so at most about 420 MB in all.
 * "New" means new to this process today: the ingest does not read the catalog, so names the
 * catalog already holds count again each day.
 */
export class CatalogCaps {
  private readonly days: LRUCache<string, WorkspaceDay>;

  /** `onOver` is called once per message past a cap, with the cap's name (a metric's label). */
  constructor(
    private readonly settings: CatalogCapSettings,
    private readonly onOver: (cap: Exclude<CapVerdict, "within">) => void = () => {},
    maxWorkspaces = CAP_WORKSPACES,
  ) {
    this.days = new LRUCache({ max: maxWorkspaces });
  }

  /**
   * Whether a message of `type` named `name` (a track's event, a page's or screen's name, '' for
   * the other types) with catalogShape `shape`, received on `day` (YYYY-MM-DD, UTC), stays within
   * its workspace's caps; admits its name and shape when it does. A day earlier than the one
   * remembered (requests of either side of midnight finishing out of order) counts in the later.
   */
  admit(workspaceId: string, type: string, name: string, shape: number, day: string): CapVerdict {
    let today = this.days.get(workspaceId);
    if (today === undefined || day > today.day) {
      today = { day, names: new Map(), eventNames: 0, pageNames: 0, shapes: 0 };
      this.days.set(workspaceId, today);
    }
    const key = `${type}\u0000${name.length <= REMEMBERED_NAME_CHARS ? `s${name}` : `h${createHash("sha256").update(name).digest("base64")}`}`;
    const shapes = today.names.get(key);
    if (shapes === shape || (typeof shapes === "object" && shapes.has(shape))) return "within";
    const verdict = this.verdict(today, type, shapes === undefined);
    if (verdict !== "within") {
      this.onOver(verdict);
      return verdict;
    }
    if (shapes === undefined) {
      today.names.set(key, shape);
      if (type === "track") today.eventNames++;
      else if (type === "page" || type === "screen") today.pageNames++;
    } else if (typeof shapes === "number") today.names.set(key, new Set([shapes, shape]));
    else shapes.add(shape);
    today.shapes++;
    return "within";
  }

  /** Which cap a new shape (of a new name when `newName`) would pass. */
  private verdict(today: WorkspaceDay, type: string, newName: boolean): CapVerdict {
    const s = this.settings;
    if (newName && type === "track" && today.eventNames >= s.eventNamesPerDay) return "event_names";
    if (newName && (type === "page" || type === "screen") && today.pageNames >= s.pageNamesPerDay) return "page_names";
    return today.shapes >= s.shapesPerDay ? "shapes" : "within";
  }
}

/**
 * The message's catalog shape, and whether its key list need not be sent: delivered lately by
 * this process, or listed by an earlier message of the same batch (then added to `listedShapes`).
 * Past its workspace's daily catalog caps (`day`: YYYY-MM-DD of receivedAt): OVER_CAP_SHAPE and no list.
 * Called by ingest/records/build.ts for each message it makes a record of.
 */
export function sentShape(
  message: Message,
  context: JsonObject | null | undefined,
  workspaceId: string,
  day: string,
  shapes: SentShapes,
  listedShapes: Set<string>,
): { shape: number; sent: boolean } {
  const m = message as Message & { properties?: unknown; traits?: unknown; event?: string; name?: string | null };
  const event = m.type === "track" ? (m.event ?? "") : m.type === "page" || m.type === "screen" ? (m.name ?? "") : "";
  const shape = shapes.capped(workspaceId, m.type, event, catalogShape(m.properties, m.traits, context), day);
  if (shape === OVER_CAP_SHAPE) return { shape, sent: true };
  const key = SentShapes.key(workspaceId, m.type, event, shape);
  if (shapes.wasDelivered(key) || listedShapes.has(key)) return { shape, sent: true };
  listedShapes.add(key);
  return { shape, sent: false };
}
