/**
 * The records the live tail read last, for `/live/recent` and for what a new viewer sees first:
 * a ring bounded by count and by bytes of record values, all workspaces together, the oldest
 * dropped first (a busy workspace can push a quiet one's history out; the bounds keep memory
 * fixed whatever traffic does). The byte bound counts record values as they were added; a record
 * decoded for a viewer holds its item's JSON instead (about as long, ingest/live/feed.ts). Pure.
 */
import type { LiveRecord } from "./items";

/** Bounds of a RecentBuffer. */
export interface RecentBounds {
  /** Most records kept. */
  records: number;
  /** Most bytes of record values kept. */
  bytes: number;
}

/** The newest records read, in arrival order. */
export class RecentBuffer {
  private readonly ring: (LiveRecord | undefined)[];
  /** Bytes each slot was counted for when added (its value may be released later, feed.ts). */
  private readonly sizes: number[];
  private next = 0;
  private count = 0;
  private held = 0;

  constructor(private readonly bounds: RecentBounds) {
    this.ring = new Array<LiveRecord | undefined>(bounds.records);
    this.sizes = new Array<number>(bounds.records).fill(0);
  }

  /** Bytes of record values held now. */
  get bytes(): number {
    return this.held;
  }

  /** Records held now. */
  get size(): number {
    return this.count;
  }

  /** Keeps `record`, dropping the oldest until both bounds hold (a record over the byte bound alone is not kept). */
  add(record: LiveRecord): void {
    if (record.value.length > this.bounds.bytes) return;
    while (this.count > 0 && (this.count === this.bounds.records || this.held + record.value.length > this.bounds.bytes)) this.dropOldest();
    this.ring[this.next] = record;
    this.sizes[this.next] = record.value.length;
    this.next = (this.next + 1) % this.bounds.records;
    this.count++;
    this.held += record.value.length;
  }

  /** Up to `limit` records for which `accept` is true, newest first (by arrival). */
  newest(accept: (record: LiveRecord) => boolean, limit: number): LiveRecord[] {
    const found: LiveRecord[] = [];
    for (let i = 1; i <= this.count && found.length < limit; i++) {
      const record = this.ring[(this.next - i + this.bounds.records) % this.bounds.records]!;
      if (accept(record)) found.push(record);
    }
    return found;
  }

  /** Forgets every record (the tail stopped: what it held may be stale when it starts again). */
  clear(): void {
    this.ring.fill(undefined);
    this.next = 0;
    this.count = 0;
    this.held = 0;
  }

  private dropOldest(): void {
    const oldest = (this.next - this.count + this.bounds.records) % this.bounds.records;
    this.held -= this.sizes[oldest]!;
    this.ring[oldest] = undefined;
    this.count--;
  }
}
