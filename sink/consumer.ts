/**
 * The kafkajs consumer loop: fetch -> decode -> per-partition batch -> insert -> DLQ -> commit.
 * Offsets are committed only after ClickHouse acknowledged the insert (and the DLQ the dead
 * letters), so a crash at any point replays from the last commit; the replayed rows carry the
 * same messageId and collapse under FINAL. While ClickHouse is down the insert retries with
 * backoff, the partition's batch fills, and fetching waits (backpressure); nothing is committed.
 */
import type { Consumer, EachBatchPayload } from "kafkajs";
import type { Logger } from "pino";
import { PartitionBatches, type DeadLetter, type PartitionBatch } from "./batch";
import { decode } from "./decode";
import type { SinkMetrics } from "./metrics";
import { insertOrSplit, retry, type InsertRows } from "./writer";

/** What the loop needs. */
export interface LoopDeps {
  consumer: Consumer;
  topic: string;
  insert: InsertRows;
  sendDeadLetters: (letters: DeadLetter[]) => Promise<void>;
  batchRows: number;
  batchWaitMs: number;
  retryMinMs: number;
  retryMaxMs: number;
  /** Fault-test hook: SIGKILL the process just before or just after an insert. */
  crashAt: "" | "before-insert" | "after-insert";
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
   * passes first (ClickHouse down), pending retries give up and nothing more is committed:
   * those records are read again by the next consumer.
   */
  stop: (abortAfterMs: number) => Promise<void>;
}

/** Subscribes and runs the loop until stopped. */
export async function runLoop(deps: LoopDeps): Promise<RunningLoop> {
  const { consumer, topic, log } = deps;
  const batches = new PartitionBatches({ maxRows: deps.batchRows, maxWaitMs: deps.batchWaitMs });
  const abort = new AbortController();
  let heartbeat: () => Promise<void> = async () => {};
  let stopping = false;
  let inBatch: Promise<void> = Promise.resolve();
  const health: LoopHealth = { joined: false, writeFailing: false };

  const retryOptions = (what: string) => ({
    minMs: deps.retryMinMs,
    maxMs: deps.retryMaxMs,
    signal: abort.signal,
    onRetry: async (error: unknown, attempt: number, waitMs: number) => {
      health.writeFailing = true;
      log.warn({ err: error, attempt, waitMs }, `${what} failed; retrying`);
      await heartbeat().catch(() => {}); // a long retry must not get us thrown out of the group
    },
  });

  const { metrics } = deps;
  /** One flush: every partition's rows in one insert, dead letters to the DLQ, then the commits. */
  const write = async (open: PartitionBatch[]) => {
    if (deps.crashAt === "before-insert") process.kill(process.pid, "SIGKILL");
    const items = open.flatMap((b) => b.items);
    const timer = metrics.batchWriteSeconds.startTimer();
    const refused = await retry(() => insertOrSplit(deps.insert, items), retryOptions("insert"));
    timer();
    const inserted = items.length - refused.length;
    metrics.batchRows.observe(inserted);
    metrics.rowsInserted.inc({ topic }, inserted);
    const now = Date.now();
    for (const item of items) metrics.eventDelaySeconds.observe((now - Date.parse(item.row.received_at)) / 1000);
    const letters = [...open.flatMap((b) => b.deadLetters), ...refused];
    if (letters.length > 0) {
      await retry(() => deps.sendDeadLetters(letters), retryOptions("DLQ send"));
      for (const letter of letters) metrics.dlqRecords.inc({ step: letter.step });
      log.warn({ count: letters.length }, "records sent to the DLQ");
    }
    health.writeFailing = false;
    if (deps.crashAt === "after-insert") process.kill(process.pid, "SIGKILL");
    // commitOffset = offset + 1: the committed offset is the next record to read.
    const offsets = open.map((b) => ({ topic, partition: b.partition, offset: (BigInt(b.lastOffset) + 1n).toString() }));
    try {
      await consumer.commitOffsets(offsets);
      metrics.commits.inc({ status: "ok" });
    } catch (error) {
      metrics.commits.inc({ status: "failed" });
      // The rows are stored; a lost commit only means they are read and collapsed again.
      log.warn({ err: error, offsets }, "commit failed; records will be replayed");
    }
    log.debug({ rows: items.length, offsets }, "flushed");
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
    metrics.consumerLag.set({ topic, partition: String(batch.partition) }, Number(batch.offsetLag()));
    for (const message of batch.messages) {
      if (stopping || !isRunning() || isStale()) break;
      const decoded = decode(message.value);
      const now = Date.now();
      const full = decoded.ok
        ? batches.addRow({ row: decoded.row, partition: batch.partition, offset: message.offset, key: message.key, value: message.value }, now)
        : batches.addDeadLetter({ partition: batch.partition, offset: message.offset, key: message.key, value: message.value, reason: decoded.reason, step: "decode" }, now);
      // Resolving lets the fetch move on; the commit still waits for the insert.
      resolveOffset(message.offset);
      if (full) await flush(); // backpressure while ClickHouse is slow or down
    }
    await beat();
  };

  consumer.on(consumer.events.GROUP_JOIN, () => {
    // After a rebalance kafkajs fetches again from the committed offsets: drop what is unwritten.
    batches.clear();
    health.joined = true;
  });
  consumer.on(consumer.events.CRASH, () => (health.joined = false));

  const timer = setInterval(() => {
    if (batches.due(Date.now())) void flush().catch(() => {});
  }, Math.max(10, Math.min(250, Math.floor(deps.batchWaitMs / 4))));

  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: (payload) => {
      const run = eachBatch(payload);
      inBatch = run.catch(() => {});
      return run;
    },
  });

  return {
    health,
    stop: async (abortAfterMs) => {
      stopping = true;
      clearInterval(timer);
      const giveUp = setTimeout(() => abort.abort(), abortAfterMs);
      consumer.pause([{ topic }]);
      await inBatch;
      await flush().catch(() => {});
      clearTimeout(giveUp);
      await consumer.disconnect();
    },
  };
}
