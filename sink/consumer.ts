/**
 * The kafkajs consumer loop of one topic: fetch -> decode -> per-partition batch -> flush
 * (insert, DLQ, commit: sink/flush.ts). Offsets are committed only after ClickHouse acknowledged
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
import type { SinkMetrics } from "./metrics";
import { reconnectOnCrash } from "../schemas/kafka/reconnect";
import { settledWithin } from "../schemas/runtime/deadline";
import { retry } from "../schemas/runtime/retry";
import type { InsertRows, ProbeInsert } from "./writer";

/** What the loop needs. */
export interface LoopDeps<Row> {
  consumer: Consumer;
  topic: string;
  /** Record value -> row or DLQ reason (sink/decode.ts). */
  decode: (value: Buffer | null) => DecodeResult<Row>;
  /**
   * Whether a decoded row belongs to a deleted or suppressed user (schemas/privacy/list.ts): it is
   * then not stored, and its offset is committed.
   */
  drops?: (row: Row) => boolean;
  insert: InsertRows<Row>;
  /** The flush's items in groups, one INSERT each (sink/partitions.ts); absent: one INSERT. */
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
  const { consumer, topic, log, metrics } = deps;
  const batches = new PartitionBatches<Row>({ maxRecords: deps.batchRecords, maxBytes: deps.batchBytes, maxWaitMs: deps.batchWaitMs });
  const abort = new AbortController();
  let heartbeat: () => Promise<void> = async () => {};
  let stopping = false;
  let inBatch: Promise<void> = Promise.resolve();
  const health: LoopHealth = { joined: false, writeFailing: false };

  const flusher = new Flusher<Row>({
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
      await consumer.commitOffsets(offsets);
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
          await heartbeat().catch(() => {}); // a long retry must not get us thrown out of the group
        },
      }),
  });

  /**
   * Heartbeats every `heartbeatMs` until `work` settles: without it a flush longer than the
   * session timeout gets the member evicted, its commit refused, and the same records bisected and
   * dead-lettered again after the rejoin, for ever. A failed heartbeat (a rebalance under way, the
   * member already gone) is logged; the flush goes on and its commit tells whether it still owned them.
   */
  const beating = async <T>(work: () => Promise<T>): Promise<T> => {
    const timer = setInterval(() => {
      heartbeat().catch((error: unknown) => log.warn({ err: error, topic }, "heartbeat during a flush failed"));
    }, deps.heartbeatMs ?? 3_000);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  };

  /** One flush, with its metrics and logs. */
  const write = async (open: PartitionBatch<Row>[]) => {
    const timer = metrics.batchWriteSeconds.startTimer({ topic });
    const result = await beating(() => flusher.write(open));
    timer();
    health.writeFailing = false;
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
  };

  /** Flushes what is held, after any flush already under way (one insert at a time, in order). */
  let chain: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    const next = chain.then(async () => {
      const open = batches.takeAll();
      if (open.length > 0) await write(open);
    });
    chain = next.catch((error: unknown) => {
      if (!abort.signal.aborted) log.error({ err: error }, "flush failed");
    });
    return next;
  };

  const eachBatch = async ({ batch, resolveOffset, heartbeat: beat, isRunning, isStale }: EachBatchPayload) => {
    heartbeat = beat;
    const { partition } = batch;
    let now = Date.now();
    let unresolved: string | undefined;
    for (const message of batch.messages) {
      if (stopping || !isRunning() || isStale() || flusher.isAbandoned) break;
      const decoded = deps.decode(message.value);
      const { offset, key, value } = message;
      const timestamp = Number(message.timestamp);
      let full: boolean;
      if (!decoded.ok) full = batches.addDeadLetter({ partition, offset, key, value, reason: decoded.reason, step: "decode" }, now);
      else if (deps.drops?.(decoded.row)) {
        metrics.rowsSuppressed.inc({ topic });
        full = batches.addSkipped(partition, offset, now);
      } else full = batches.addRow({ row: decoded.row, partition, offset, key, value, timestamp }, now);
      unresolved = offset;
      if (full) {
        // Resolving lets the fetch move on (once per step: kafkajs parses each offset it is given);
        // the commit still waits for the insert.
        resolveOffset(offset);
        unresolved = undefined;
        await flush(); // backpressure while ClickHouse is slow or down
        now = Date.now();
      }
    }
    if (unresolved !== undefined) resolveOffset(unresolved);
    await beat();
  };

  consumer.on(consumer.events.GROUP_JOIN, () => {
    // After a rebalance kafkajs fetches again from the committed offsets: drop what is unwritten.
    batches.clear();
    health.joined = true;
  });
  const runConfig: ConsumerRunConfig = {
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: (payload) => {
      const run = eachBatch(payload);
      inBatch = run.catch(() => {});
      return run;
    },
  };
  const begin = async () => {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run(runConfig);
  };

  consumer.on(consumer.events.CRASH, ({ payload }) => {
    health.joined = false;
    // Run again after a crash kafkajs will not restart, the consumer reads from the last commit.
    if (!payload.restart && !stopping) batches.clear();
  });
  const keeper = reconnectOnCrash(consumer, begin, { minMs: deps.retryMinMs, maxMs: deps.retryMaxMs }, log, `consumer of ${topic}`);

  const timer = setInterval(
    () => {
      if (batches.due(Date.now())) void flush().catch(() => {});
    },
    Math.max(10, Math.min(250, Math.floor(deps.batchWaitMs / 4))),
  );

  await begin();

  return {
    health,
    stop: async (abortAfterMs) => {
      stopping = true;
      keeper.stop();
      clearInterval(timer);
      const giveUp = setTimeout(() => abort.abort(), abortAfterMs);
      consumer.pause([{ topic }]);
      const flushed = (async () => {
        await inBatch;
        await flush().catch(() => {}); // after an abandoned flush this commits nothing
      })();
      // The abort ends an insert under way, not a commit or a DLQ send to a Kafka that does not
      // answer: the wait ends with it, and what is not committed is read again.
      await settledWithin(flushed, abortAfterMs);
      clearTimeout(giveUp);
      await consumer.disconnect();
    },
  };
}
