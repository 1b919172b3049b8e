/**
 * The kafkajs consumer loop of one topic: fetch -> decode -> per-partition batch -> flush
 * (insert, DLQ, commit: sink/loop/flush.ts). Offsets are committed only after ClickHouse acknowledged
 * the insert (and the DLQ the dead letters), so a crash at any point replays from the last
 * commit; the replayed rows carry the same key and collapse under FINAL. While ClickHouse is down
 * the insert retries with backoff, the batch fills, and fetching waits (backpressure); nothing
 * is committed. Rows ClickHouse refuses are narrowed and dead-lettered, so data never stalls it.
 */
import type { Consumer, ConsumerRunConfig, EachBatchPayload } from "kafkajs";
import type { Logger } from "pino";
import { PartitionBatches, type BatchItem, type DeadLetter, type PartitionBatch } from "./batch";
import type { DecodeResult } from "./decode";
import { Flusher, type CommitOffset } from "./flush";
import type { SinkMetrics } from "../metrics";
import { reconnectOnCrash } from "../../schemas/kafka/reconnect";
import { settledWithin } from "../../schemas/runtime/deadline";
import { retry } from "../../schemas/runtime/retry";
import type { InsertRows, ProbeInsert } from "./writer";

/** What the loop needs. */
export interface LoopDeps<Row> {
  consumer: Consumer;
  topic: string;
  /** Record value -> row or DLQ reason (sink/loop/decode.ts). */
  decode: (value: Buffer | null) => DecodeResult<Row>;
  /**
   * Whether a decoded row belongs to a deleted or suppressed user (schemas/privacy/list.ts): it is
   * then not stored, and its offset is committed.
   */
  drops?: (row: Row) => boolean;
  insert: InsertRows<Row>;
  /** The flush's items in groups, one INSERT each (sink/loop/partitions.ts); absent: one INSERT. */
  chunk?: (items: BatchItem<Row>[]) => BatchItem<Row>[][];
  probe: ProbeInsert;
  sendDeadLetters: (letters: DeadLetter[]) => Promise<void>;
  /** Flush triggers: records held, bytes of record values held, age of the oldest, ms. */
  batchRecords: number;
  batchBytes: number;
  batchWaitMs: number;
  retryMinMs: number;
  retryMaxMs: number;
  /**
   * How often a flush under way heartbeats, ms (the consumer's heartbeatInterval; default 3,000):
   * kafkajs heartbeats only between batches, and a flush (a long bisection) may outlast the session.
   */
  heartbeatMs?: number;
  metrics: SinkMetrics;
  log: Logger;
}

/** What /readyz reports. */
export interface LoopHealth {
  /** The consumer has joined its group and not crashed since. */
  joined: boolean;
  /** The last insert (or DLQ send) failed and is being retried. */
  writeFailing: boolean;
}

/** A running loop. */
export interface RunningLoop {
  health: LoopHealth;
  /**
   * Stops fetching, flushes and commits every open batch, then disconnects. If `abortAfterMs`
   * passes first (ClickHouse or Kafka not answering), the insert under way and pending retries
   * give up and nothing more is committed: those records are read again by the next consumer.
   * The disconnect itself is not bounded here (the sink's stop bounds it).
   */
  stop: (abortAfterMs: number) => Promise<void>;
}

/** Subscribes and runs the loop until stopped. */
export async function runLoop<Row>(deps: LoopDeps<Row>): Promise<RunningLoop> {
  const { consumer, topic, log } = deps;
  const loop = new Loop(deps);
  consumer.on(consumer.events.GROUP_JOIN, () => loop.joined());
  consumer.on(consumer.events.CRASH, ({ payload }) => loop.crashed(payload.restart));
  const begin = async () => {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run(loop.runConfig());
  };
  const keeper = reconnectOnCrash(consumer, begin, { minMs: deps.retryMinMs, maxMs: deps.retryMaxMs }, log, `consumer of ${topic}`);
  const timer = setInterval(() => loop.flushIfDue(), Math.max(10, Math.min(250, Math.floor(deps.batchWaitMs / 4))));
  await begin();
  return {
    health: loop.health,
    stop: async (abortAfterMs) => {
      keeper.stop();
      clearInterval(timer);
      await loop.stop(abortAfterMs);
    },
  };
}

/** Where a record goes (one decision, here): a row to insert, a dead letter and why, or dropped (a deleted or suppressed user's). */
export type RecordFate<Row> = { to: "row"; row: Row } | { to: "dlq"; reason: string } | { to: "drop" };

/** The fate of a decoded record value (sink/loop/decode.ts), with `drops` the privacy list's question (absent: none dropped). */
export function fateOf<Row>(decoded: DecodeResult<Row>, drops?: (row: Row) => boolean): RecordFate<Row> {
  if (!decoded.ok) return { to: "dlq", reason: decoded.reason };
  if (drops?.(decoded.row)) return { to: "drop" };
  return { to: "row", row: decoded.row };
}

/**
 * The loop's steps over one consumer: each fetched batch's records decoded and sorted by fate into
 * per-partition batches; a full or due batch flushed (sink/loop/flush.ts: insert, DLQ, commit) with
 * its metrics, one flush at a time; and the stop.
 */
class Loop<Row> {
  readonly health: LoopHealth = { joined: false, writeFailing: false };
  private readonly batches: PartitionBatches<Row>;
  private readonly abort = new AbortController();
  private readonly flusher: Flusher<Row>;
  private heartbeat: () => Promise<void> = async () => {};
  private stopping = false;
  private inBatch: Promise<void> = Promise.resolve();
  /** The flushes, one after the other (one insert at a time, in order). */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly deps: LoopDeps<Row>) {
    this.batches = new PartitionBatches<Row>({ maxRecords: deps.batchRecords, maxBytes: deps.batchBytes, maxWaitMs: deps.batchWaitMs });
    this.flusher = this.flusherOf();
  }

  /** The flusher: inserts and probes end with the stop's abort, commits start only before it, retries heartbeat. */
  private flusherOf(): Flusher<Row> {
    const { deps, abort, health } = this;
    const { topic, metrics, log } = deps;
    return new Flusher<Row>({
      topic,
      // Past SINK_STOP_TIMEOUT_MS the stop's abort ends the insert under way, not only the retries.
      insert: (rows) => deps.insert(rows, abort.signal),
      ...(deps.chunk ? { chunk: deps.chunk } : {}),
      probe: () => deps.probe(abort.signal),
      sendDeadLetters: deps.sendDeadLetters,
      // None starts once the stop gave up; one under way then may or may not land (kafkajs resolves
      // it when the consumer disconnects): counted as failed, its records may be read again.
      commit: async (offsets: CommitOffset[]) => {
        if (abort.signal.aborted) throw new Error("the stop gave up: not committed");
        await deps.consumer.commitOffsets(offsets);
        if (abort.signal.aborted) throw new Error("the stop gave up during the commit: it may not have landed");
      },
      retry: (what, fn) =>
        retry(fn, {
          minMs: deps.retryMinMs,
          maxMs: deps.retryMaxMs,
          signal: abort.signal,
          onRetry: async (error, attempt, waitMs) => {
            health.writeFailing = true;
            metrics.writeFailing.set({ topic }, 1);
            log.warn({ err: error, attempt, waitMs, topic }, `${what} failed; retrying`);
            await this.heartbeat().catch(() => {}); // a long retry must not get us thrown out of the group
          },
        }),
    });
  }

  /**
   * Heartbeats every `heartbeatMs` until `work` settles: without it a flush longer than the
   * session timeout gets the member evicted, its commit refused, and the same records bisected and
   * dead-lettered again after the rejoin, for ever. A failed heartbeat (a rebalance under way, the
   * member already gone) is logged; the flush goes on and its commit tells whether it still owned them.
   */
  private async beating<T>(work: () => Promise<T>): Promise<T> {
    const timer = setInterval(() => {
      this.heartbeat().catch((error: unknown) =>
        this.deps.log.warn({ err: error, topic: this.deps.topic }, "heartbeat during a flush failed"),
      );
    }, this.deps.heartbeatMs ?? 3_000);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /** One flush, with its metrics and logs. */
  private async write(open: PartitionBatch<Row>[]): Promise<void> {
    const { topic, metrics, log } = this.deps;
    const timer = metrics.batchWriteSeconds.startTimer({ topic });
    const result = await this.beating(() => this.flusher.write(open));
    timer();
    this.health.writeFailing = false;
    metrics.writeFailing.set({ topic }, 0);
    metrics.lastInsertAt.set(topic, Date.now());
    metrics.batchRows.observe({ topic }, result.inserted);
    metrics.rowsInserted.inc({ topic }, result.inserted);
    const now = Date.now();
    // A record's timestamp is when the ingest sent it: receivedAt plus the linger.
    for (const b of open) for (const item of b.items) metrics.eventDelaySeconds.observe((now - item.timestamp) / 1000);
    for (const letter of result.deadLetters) metrics.dlqRecords.inc({ step: letter.step });
    if (result.deadLetters.length > 0) log.warn({ count: result.deadLetters.length, topic }, "records sent to the DLQ");
    metrics.commits.inc({ status: result.committed ? "ok" : "failed" });
    // A lost commit only means the rows are read again and collapse under FINAL.
    if (!result.committed) log.warn({ offsets: result.offsets }, "commit failed; records will be replayed");
    log.debug({ rows: result.inserted, offsets: result.offsets }, "flushed");
  }

  /** Flushes what is held, after any flush already under way. */
  flush(): Promise<void> {
    const next = this.chain.then(async () => {
      const open = this.batches.takeAll();
      if (open.length > 0) await this.write(open);
    });
    this.chain = next.catch((error: unknown) => {
      if (!this.abort.signal.aborted) this.deps.log.error({ err: error }, "flush failed");
    });
    return next;
  }

  /** The timer's check: a flush when the oldest record held has waited `batchWaitMs`. */
  flushIfDue(): void {
    if (this.batches.due(Date.now())) void this.flush().catch(() => {});
  }

  /** Adds a fetched record to its partition's batch by its fate; whether the batch is now full. */
  private add(
    fate: RecordFate<Row>,
    message: { offset: string; key: Buffer | null; value: Buffer | null; timestamp: string },
    partition: number,
    now: number,
  ): boolean {
    const { offset, key, value } = message;
    if (fate.to === "dlq") return this.batches.addDeadLetter({ partition, offset, key, value, reason: fate.reason, step: "decode" }, now);
    if (fate.to === "drop") {
      this.deps.metrics.rowsSuppressed.inc({ topic: this.deps.topic });
      return this.batches.addSkipped(partition, offset, now);
    }
    return this.batches.addRow({ row: fate.row, partition, offset, key, value, timestamp: Number(message.timestamp) }, now);
  }

  /** kafkajs's eachBatch: every record of the fetch added; a full batch resolved up to it and flushed before the next (backpressure). */
  private async eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    this.heartbeat = heartbeat;
    const { partition } = batch;
    let now = Date.now();
    let unresolved: string | undefined;
    for (const message of batch.messages) {
      if (this.stopping || !isRunning() || isStale() || this.flusher.isAbandoned) break;
      const full = this.add(fateOf(this.deps.decode(message.value), this.deps.drops), message, partition, now);
      unresolved = message.offset;
      if (full) {
        // Resolving lets the fetch move on (once per step: kafkajs parses each offset it is given);
        // the commit still waits for the insert.
        resolveOffset(message.offset);
        unresolved = undefined;
        await this.flush(); // backpressure while ClickHouse is slow or down
        now = Date.now();
      }
    }
    if (unresolved !== undefined) resolveOffset(unresolved);
    await heartbeat();
  }

  /** The consumer's run settings: offsets resolved and committed by the loop alone. */
  runConfig(): ConsumerRunConfig {
    return {
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: (payload) => {
        const run = this.eachBatch(payload);
        this.inBatch = run.catch(() => {});
        return run;
      },
    };
  }

  /** A join: after a rebalance kafkajs fetches again from the committed offsets, so what is unwritten is dropped. */
  joined(): void {
    this.batches.clear();
    this.health.joined = true;
  }

  /** A crash: run again after one kafkajs will not restart, the consumer reads from the last commit. */
  crashed(restart: boolean): void {
    this.health.joined = false;
    if (!restart && !this.stopping) this.batches.clear();
  }

  /** RunningLoop.stop, once the reconnect keeper and the flush timer are stopped. */
  async stop(abortAfterMs: number): Promise<void> {
    this.stopping = true;
    const { consumer, topic } = this.deps;
    const giveUp = setTimeout(() => this.abort.abort(), abortAfterMs);
    consumer.pause([{ topic }]);
    const flushed = (async () => {
      await this.inBatch;
      await this.flush().catch(() => {}); // after an abandoned flush this commits nothing
    })();
    // The abort ends an insert under way, not a commit or a DLQ send to a Kafka that does not
    // answer: the wait ends with it, and what is not committed is read again.
    await settledWithin(flushed, abortAfterMs);
    clearTimeout(giveUp);
    await consumer.disconnect();
  }
}
