/**
 * The write-then-commit step of one flush: insert every partition's rows, in one INSERT or in
 * the groups `chunk` makes (refused rows narrowed to dead letters), send the dead letters to the DLQ, then commit each partition's last offset
 * + 1. A failed insert or DLQ send is retried until the sink stops (then it throws and commits
 * nothing); a failed commit only means the rows are read again and collapse under FINAL.
 *
 * Once a flush has given up, this flusher never commits again: a later flush holds later
 * offsets of the same partitions, and committing them would skip the abandoned records. The
 * next owner of those partitions reads them again from the last commit.
 *
 * | step      | fails with                 | then                                     |
 * |-----------|----------------------------|------------------------------------------|
 * | insert    | infra (down, timeout, ...) | retry with backoff; /readyz 503          |
 * | insert    | anything else              | bisect: refused rows -> dead letters     |
 * | DLQ send  | anything                   | retry with backoff; no commit before it  |
 * | either    | retries aborted (stop)     | throw; this flusher is abandoned         |
 * | commit    | anything                   | log; rows replayed later, deduplicated   |
 */
import type { BatchItem, DeadLetter, PartitionBatch } from "./batch";
import { insertOrBisect, type InsertRows, type ProbeInsert } from "./writer";

/** One partition's commit: the offset of the next record to read. */
export interface CommitOffset {
  topic: string;
  partition: number;
  offset: string;
}

/** What one flush reports. */
export interface FlushResult {
  inserted: number;
  deadLetters: DeadLetter[];
  offsets: CommitOffset[];
  /** Whether the commit was acknowledged (a failed one is logged, not thrown). */
  committed: boolean;
}

/** The I/O a flusher needs; every function throws on failure. */
export interface FlushDeps<Row> {
  topic: string;
  insert: InsertRows<Row>;
  /** The flush's items in groups, one INSERT each (sink/loop/partitions.ts); absent: one INSERT. */
  chunk?: (items: BatchItem<Row>[]) => BatchItem<Row>[][];
  probe: ProbeInsert;
  sendDeadLetters: (letters: DeadLetter[]) => Promise<void>;
  commit: (offsets: CommitOffset[]) => Promise<void>;
  /** Runs `fn` until it resolves; throws only once the sink gives up (stop timeout). */
  retry: <T>(what: string, fn: () => Promise<T>) => Promise<T>;
}

/** A flush was asked of a flusher that gave up an earlier one. */
export class FlusherAbandonedError extends Error {
  readonly retriable = false;
  constructor() {
    super("an earlier flush was abandoned; nothing more is written or committed by this consumer");
    this.name = "FlusherAbandonedError";
  }
}

/** Writes and commits flushes, in order; see the state table above. */
export class Flusher<Row> {
  private abandoned = false;

  constructor(private readonly deps: FlushDeps<Row>) {}

  /** Whether an earlier flush gave up (nothing will be committed any more). */
  get isAbandoned(): boolean {
    return this.abandoned;
  }

  /**
   * Inserts, dead-letters and commits one flush. Throws the last insert or DLQ error when the
   * retries were aborted, and FlusherAbandonedError for every flush after that.
   */
  async write(open: PartitionBatch<Row>[]): Promise<FlushResult> {
    if (this.abandoned) throw new FlusherAbandonedError();
    const { deps } = this;
    const items = open.flatMap((b) => b.items);
    let refused: DeadLetter[];
    let letters: DeadLetter[];
    try {
      refused = [];
      // Each group is retried alone: a group ClickHouse acknowledged is not inserted again.
      for (const group of deps.chunk ? deps.chunk(items) : [items])
        refused.push(...(await deps.retry("insert", () => insertOrBisect(deps.insert, group, deps.probe))));
      letters = [...open.flatMap((b) => b.deadLetters), ...refused];
      if (letters.length > 0) await deps.retry("DLQ send", () => deps.sendDeadLetters(letters));
    } catch (error) {
      this.abandoned = true;
      throw error;
    }
    // commitOffset = offset + 1: the committed offset is the next record to read.
    const offsets = open.map((b) => ({ topic: deps.topic, partition: b.partition, offset: (BigInt(b.lastOffset) + 1n).toString() }));
    let committed = true;
    try {
      await deps.commit(offsets);
    } catch {
      committed = false;
    }
    return { inserted: items.length - refused.length, deadLetters: letters, offsets, committed };
  }
}
