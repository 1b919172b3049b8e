/**
 * Open batches of decoded records, one per partition, flushed together by count, bytes or age:
 * one flush is one INSERT of every partition's rows (ClickHouse: at least 1,000 rows per insert
 * and about one insert per second per table), then one commit per partition. Pure bookkeeping:
 * no I/O, time comes in as an argument. Each partition's batch remembers the last offset it
 * holds, so the commit after the insert covers exactly what was written.
 * ClickHouse on bulk inserts: https://clickhouse.com/docs/en/cloud/bestpractices/bulk-inserts
 */
import type { DlqStep } from "../metrics";

/** A record the sink will not store, with the original key and value kept for the DLQ. */
export interface DeadLetter {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  reason: string;
  /** The step that refused it. */
  step: DlqStep;
}

/** A decoded row (for events: its JSONEachRow line) and where it came from (kept to dead-letter it if ClickHouse refuses it). */
export interface BatchItem<Row = Buffer> {
  row: Row;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  /** The record's timestamp, ms since the epoch (when the producer sent it). */
  timestamp: number;
}

/** What one flush writes and then commits. */
export interface PartitionBatch<Row = Buffer> {
  partition: number;
  items: BatchItem<Row>[];
  deadLetters: DeadLetter[];
  /** Highest offset held; the commit after the insert is this + 1. */
  lastOffset: string;
  /** ms timestamp of the first record added. */
  openedAt: number;
}

/** Flush triggers, over every partition's open batch together. */
export interface BatchLimits {
  /** Records held (rows and dead letters, all partitions) that make a flush due at once. */
  maxRecords: number;
  /** Bytes of record values held (all partitions) that make a flush due at once. */
  maxBytes: number;
  /** Age of the oldest record held that makes a flush due, ms. */
  maxWaitMs: number;
}

/** Open batches, one per partition, flushed together. */
export class PartitionBatches<Row = Buffer> {
  private readonly open = new Map<number, PartitionBatch<Row>>();
  private held = 0;
  private heldBytes = 0;

  constructor(private readonly limits: BatchLimits) {}

  /** Adds a row. Returns true when the records or bytes held reach their limit. */
  addRow(item: BatchItem<Row>, now: number): boolean {
    this.batchOf(item.partition, item.offset, now).items.push(item);
    return this.count(item.value);
  }

  /** Adds a record that goes to the DLQ; it still counts toward the commit. */
  addDeadLetter(letter: DeadLetter, now: number): boolean {
    this.batchOf(letter.partition, letter.offset, now).deadLetters.push(letter);
    return this.count(letter.value);
  }

  /** Adds a record that is neither stored nor dead-lettered (a suppressed user's); it still counts toward the commit. */
  addSkipped(partition: number, offset: string, now: number): boolean {
    this.batchOf(partition, offset, now);
    return this.count(null);
  }

  /** Whether the oldest record held has waited `maxWaitMs` or more. */
  due(now: number): boolean {
    for (const batch of this.open.values()) if (now - batch.openedAt >= this.limits.maxWaitMs) return true;
    return false;
  }

  /** Removes and returns every open batch (one flush). */
  takeAll(): PartitionBatch<Row>[] {
    const batches = [...this.open.values()];
    this.clear();
    return batches;
  }

  /** Records held, all partitions. */
  get size(): number {
    return this.held;
  }

  /** Bytes of record values held, all partitions. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Drops every open batch (after a rebalance the records are fetched again from the commit). */
  clear(): void {
    this.open.clear();
    this.held = 0;
    this.heldBytes = 0;
  }

  private count(value: Buffer | null): boolean {
    this.heldBytes += value?.length ?? 0;
    return ++this.held >= this.limits.maxRecords || this.heldBytes >= this.limits.maxBytes;
  }

  private batchOf(partition: number, offset: string, now: number): PartitionBatch<Row> {
    let batch = this.open.get(partition);
    if (batch === undefined) {
      batch = { partition, items: [], deadLetters: [], lastOffset: offset, openedAt: now };
      this.open.set(partition, batch);
    }
    batch.lastOffset = offset;
    return batch;
  }
}
