/**
 * Long operations a long-lived process (the admin API's ingest) carries out in its background,
 * their state kept on the admin topic: regulations (regulations-run.ts) and destination replays
 * (replay-run.ts). BackgroundRunner queues records and runs at most `concurrency` at once;
 * RecordProgress publishes one record's successive states in order; `staleRecords` picks those a
 * dead process left (unchanged for longer than their heartbeat allows).
 */
import type { Logger } from "pino";

/** What a BackgroundRunner runs, and how it names what it runs. */
export interface RunnerOptions<R> {
  /** Carries out one record; a throw is logged (the record stays on the topic as it was, for a later resume). */
  run: (record: R) => Promise<unknown>;
  /** The record's id (one queued or running here is not queued again). */
  idOf: (record: R) => string;
  log: Logger;
  /** Names the records in log lines ("regulation", "replay"). */
  what: string;
  /** Records run at once, at most (default 1). */
  concurrency?: number;
}

/** Runs records in the background, in the order queued, `concurrency` at a time (see the module comment). */
export class BackgroundRunner<R> {
  private readonly queue: R[] = [];
  /** Ids queued or running here. */
  private readonly held = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly options: RunnerOptions<R>) {}

  /** Queues `record` to run after those before it; false (not queued) when stopped or already held here. */
  enqueue(record: R): boolean {
    const id = this.options.idOf(record);
    if (this.stopped || this.held.has(id)) return false;
    this.held.add(id);
    this.queue.push(record);
    if (this.running.size < (this.options.concurrency ?? 1)) {
      const drain: Promise<void> = this.drain().finally(() => this.running.delete(drain));
      this.running.add(drain);
    }
    return true;
  }

  /** Whether `id` is queued or running here. */
  holds(id: string): boolean {
    return this.held.has(id);
  }

  /** Resolves once nothing is queued or running here. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
  }

  /** Takes no more and drops those queued (they stay as the topic has them); waits for those running. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const record of this.queue.splice(0)) this.held.delete(this.options.idOf(record));
    await this.idle();
  }

  private async drain(): Promise<void> {
    const { run, idOf, log, what } = this.options;
    for (let record = this.queue.shift(); record !== undefined; record = this.queue.shift()) {
      const id = idOf(record);
      try {
        await run(record);
      } catch (error) {
        log.error(
          { err: error, id },
          `a ${what} stopped on an infrastructure failure (Kafka, ClickHouse); left as the admin topic has it, for a later resume`,
        );
      } finally {
        this.held.delete(id);
      }
    }
  }
}

/** The fields every background record has: its state and when it last changed. */
export interface ProgressFields {
  updatedAt: string;
}

/**
 * The states of one record as they are published: each write is the latest state with a change
 * and a new `updatedAt`, passed through `shape` (which drops what a state must not carry), sent
 * after the writes before it, so the topic holds them in the order they were made.
 */
export class RecordProgress<R extends ProgressFields> {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private state: R,
    private readonly publish: (records: R[]) => Promise<void>,
    private readonly now: () => Date,
    private readonly shape: (record: R) => R = (record) => record,
  ) {}

  /** The latest state written (or being written). */
  get current(): R {
    return this.state;
  }

  /** Publishes the current state changed by `change`; resolves with it once acknowledged. Throws what `publish` throws. */
  write(change: Partial<R>): Promise<R> {
    const next = this.shape({ ...this.state, ...change, updatedAt: this.now().toISOString() });
    this.state = next;
    const sent = this.chain.then(() => this.publish([next]));
    this.chain = sent.catch(() => {});
    return sent.then(() => next);
  }
}

/**
 * Of `records`, those `active` (not yet done) whose `updatedAt` is more than `staleMs` before
 * `nowMs`: a running one refreshes it on a heartbeat, so one that stopped changing lost its
 * process. Oldest first, by `createdAt`. Pure.
 */
export function staleRecords<R extends ProgressFields & { createdAt: string }>(
  records: Iterable<R>,
  active: (record: R) => boolean,
  nowMs: number,
  staleMs: number,
): R[] {
  return [...records]
    .filter((r) => active(r) && nowMs - Date.parse(r.updatedAt) > staleMs)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}
