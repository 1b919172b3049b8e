/**
 * What the live tail does with each record it reads (in its worker thread, ingest/live/worker.ts):
 * keeps it in the recent buffer and, only when someone watches its workspace, decodes it once
 * (liveEntry) and names every watcher whose filter it passes, so N viewers cost one parse, not N.
 * A record is decoded at most once however often it is sent (the entry stays on the record, in
 * place of its value).
 * Pure, no I/O; nothing throws.
 */
import { RecentBuffer, type RecentBounds } from "./buffer";
import { entryMatches, liveEntry, type LiveEntry, type LiveFilter, type LiveRecord } from "./items";

/**
 * The server-sent event of one item, as a viewer's stream carries it (`event: item`, the record's
 * id, the item's JSON on one line: JSON.stringify never writes a raw newline).
 */
export function sseFrame(id: string, json: string): string {
  return `event: item\nid: ${id}\ndata: ${json}\n\n`;
}

/** What a decoded record's value becomes. */
const RELEASED = Buffer.alloc(0);

/** One record for the watchers `watchers` (their ids), as its id and item JSON. */
export interface Delivery {
  watchers: number[];
  id: string;
  json: string;
}

/** The recent records and the watchers' filters. */
export class LiveFeed {
  /** What the tail has read, newest last, bounded. */
  readonly recent: RecentBuffer;
  /** Records decoded so far (each at most once). */
  decoded = 0;
  private readonly watchers = new Map<number, LiveFilter>();

  constructor(bounds: RecentBounds) {
    this.recent = new RecentBuffer(bounds);
  }

  /** Watchers registered now. */
  get watching(): number {
    return this.watchers.size;
  }

  /** Registers watcher `id` with its filter; returns its backlog: up to `backlog` entries passing it, oldest first. */
  watch(id: number, filter: LiveFilter, backlog: number): LiveEntry[] {
    this.watchers.set(id, filter);
    return this.matching(filter, backlog).reverse();
  }

  /** Forgets watcher `id`. */
  unwatch(id: number): void {
    this.watchers.delete(id);
  }

  /** Keeps `record`; returns it decoded with the watchers it is for, or undefined when none is. */
  take(record: LiveRecord): Delivery | undefined {
    this.recent.add(record);
    let entry: LiveEntry | undefined;
    let to: number[] | undefined;
    for (const [id, filter] of this.watchers) {
      if (filter.workspaceId !== record.workspaceId) continue;
      entry ??= this.entryOf(record);
      if (entry === undefined) return undefined;
      if (entryMatches(entry, filter)) (to ??= []).push(id);
    }
    return to === undefined || entry === undefined ? undefined : { watchers: to, id: entry.id, json: entry.json };
  }

  /**
   * `/live/recent`'s answer, `{"items":[...]}` as JSON text: up to `limit` items passing `filter`,
   * newest first by receivedAt (partitions are read in no common order).
   */
  newest(filter: LiveFilter, limit: number): string {
    const items = this.matching(filter, limit)
      .sort((a, b) => (a.receivedAt < b.receivedAt ? 1 : a.receivedAt > b.receivedAt ? -1 : 0))
      .map((entry) => entry.json);
    return `{"items":[${items.join(",")}]}`;
  }

  /** Forgets every record and watcher. */
  clear(): void {
    this.recent.clear();
    this.watchers.clear();
  }

  /** Up to `limit` entries passing `filter`, newest first by arrival. */
  private matching(filter: LiveFilter, limit: number): LiveEntry[] {
    const entries: LiveEntry[] = [];
    const accept = (record: LiveRecord) => {
      if (record.workspaceId !== filter.workspaceId) return false;
      const entry = this.entryOf(record);
      if (entry === undefined || !entryMatches(entry, filter)) return false;
      entries.push(entry);
      return true;
    };
    this.recent.newest(accept, limit);
    return entries;
  }

  private entryOf(record: LiveRecord): LiveEntry | undefined {
    if (record.entry === undefined) {
      this.decoded++;
      record.entry = liveEntry(record) ?? null;
      record.value = RELEASED; // the entry is all that is read from now on: the bytes are not held twice
    }
    return record.entry ?? undefined;
  }
}
