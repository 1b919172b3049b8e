/**
 * Per-partition batches of decoded records, flushed by size or by age. Pure bookkeeping: no I/O,
 * time comes in as an argument. A batch remembers the last offset it holds so the commit after
 * its insert covers exactly what was written.
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

/** Flush triggers. */
export interface BatchLimits {
  /** Records (rows and dead letters) that make a batch full. */
  maxRows: number;
  /** Age of a batch's first record that makes it due, ms. */
  maxWaitMs: number;
}

/** Open batches, one per partition. */
export class PartitionBatches {
  private readonly open = new Map<number, PartitionBatch>();

  constructor(private readonly limits: BatchLimits) {}

  /** Adds a row. Returns true when the partition's batch is now full. */
  addRow(item: BatchItem, now: number): boolean {
    const batch = this.batchOf(item.partition, item.offset, now);
    batch.items.push(item);
    return this.isFull(batch);
  }

  /** Adds a record that goes to the DLQ; it still counts toward the commit. */
  addDeadLetter(letter: DeadLetter, now: number): boolean {
    const batch = this.batchOf(letter.partition, letter.offset, now);
    batch.deadLetters.push(letter);
    return this.isFull(batch);
  }

  /** Partitions whose batch has waited `maxWaitMs` or more. */
  due(now: number): number[] {
    const due: number[] = [];
    for (const [partition, batch] of this.open) {
      if (now - batch.openedAt >= this.limits.maxWaitMs) due.push(partition);
    }
    return due;
  }

  /** Removes and returns a partition's batch. */
  take(partition: number): PartitionBatch | undefined {
    const batch = this.open.get(partition);
    this.open.delete(partition);
    return batch;
  }

  /** Partitions with an open batch. */
  partitions(): number[] {
    return [...this.open.keys()];
  }

  /** Drops every open batch (after a rebalance the records are fetched again from the commit). */
  clear(): void {
    this.open.clear();
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

  private isFull(batch: PartitionBatch): boolean {
    return batch.items.length + batch.deadLetters.length >= this.limits.maxRows;
  }
}
