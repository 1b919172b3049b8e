/**
 * Open batches of decoded records, one per partition, flushed together by size or by age: one
 * flush is one INSERT of every partition's rows (ClickHouse: at least 1,000 rows per insert and
 * about one insert per second per table), then one commit per partition. Pure bookkeeping: no
 * I/O, time comes in as an argument. Each partition's batch remembers the last offset it holds,
 * so the commit after the insert covers exactly what was written.
 */
import type { EventRow } from "../schemas/row";

/** A record the sink will not store, with the original key and value kept for the DLQ. */
export interface DeadLetter {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  reason: string;
  /** The step that refused it. */
  step: "decode" | "insert";
}

/** A decoded row and where it came from (kept to dead-letter it if ClickHouse refuses it). */
export interface BatchItem {
  row: EventRow;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
}

/** What one flush writes and then commits. */
export interface PartitionBatch {
  partition: number;
  items: BatchItem[];
  deadLetters: DeadLetter[];
  /** Highest offset held; the commit after the insert is this + 1. */
  lastOffset: string;
  /** ms timestamp of the first record added. */
  openedAt: number;
}

/** Flush triggers, over every partition's open batch together. */
export interface BatchLimits {
  /** Records held (rows and dead letters, all partitions) that make a flush due at once. */
  maxRows: number;
  /** Age of the oldest record held that makes a flush due, ms. */
  maxWaitMs: number;
}

/** Open batches, one per partition, flushed together. */
export class PartitionBatches {
  private readonly open = new Map<number, PartitionBatch>();
  private held = 0;

  constructor(private readonly limits: BatchLimits) {}

  /** Adds a row. Returns true when the records held reach `maxRows`. */
  addRow(item: BatchItem, now: number): boolean {
    this.batchOf(item.partition, item.offset, now).items.push(item);
    return ++this.held >= this.limits.maxRows;
  }

  /** Adds a record that goes to the DLQ; it still counts toward the commit. */
  addDeadLetter(letter: DeadLetter, now: number): boolean {
    this.batchOf(letter.partition, letter.offset, now).deadLetters.push(letter);
    return ++this.held >= this.limits.maxRows;
  }

  /** Whether the oldest record held has waited `maxWaitMs` or more. */
  due(now: number): boolean {
    for (const batch of this.open.values()) if (now - batch.openedAt >= this.limits.maxWaitMs) return true;
    return false;
  }

  /** Removes and returns every open batch (one flush). */
  takeAll(): PartitionBatch[] {
    const batches = [...this.open.values()];
    this.open.clear();
    this.held = 0;
    return batches;
  }

  /** Records held, all partitions. */
  get size(): number {
    return this.held;
  }

  /** Drops every open batch (after a rebalance the records are fetched again from the commit). */
  clear(): void {
    this.open.clear();
    this.held = 0;
  }

  private batchOf(partition: number, offset: string, now: number): PartitionBatch {
    let batch = this.open.get(partition);
    if (batch === undefined) {
      batch = { partition, items: [], deadLetters: [], lastOffset: offset, openedAt: now };
      this.open.set(partition, batch);
    }
    batch.lastOffset = offset;
    return batch;
  }
}
