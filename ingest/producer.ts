/**
 * Records of concurrent requests -> kafkajs sendBatch every few ms (kafkajs has no linger), each
 * send under the broker's byte limit (a bigger one is refused whole, again on every retry).
 * A request's promise settles only when the broker acknowledged all its records (acks=all), or
 * rejects: with the send's error when Kafka fails, with ProduceTimeoutError past the deadline.
 * Either way the request is answered 503 and the client retries; a late ack then only makes a
 * duplicate, which ClickHouse collapses by messageId.
 */
import type { Producer } from "kafkajs";
import type { EventRecord } from "../schemas/envelope";
import { chunkByBytes, recordBytes } from "../schemas/kafka/limits";
import { sendWhole } from "../schemas/kafka/producer";
import type { IngestMetrics } from "./metrics";

/** Sends records to the broker; resolves on the ack of all of them. */
export type SendBatch = (records: WireRecord[]) => Promise<void>;

/**
 * An EventRecord as it is sent: its value's UTF-8 bytes made once. kafkajs measures a string
 * value twice (Buffer.byteLength) and converts it once; a Buffer's length is free and it is
 * copied as it is (1.5-2 µs less per 900-byte record, bench:profile's batch phase, 2026-11-29).
 */
export type WireRecord = Omit<EventRecord, "value"> & { value: Buffer };

/** The record with its value encoded (UTF-8). */
function wire(record: EventRecord): WireRecord {
  const sent: WireRecord = { key: record.key, value: Buffer.from(record.value, "utf8") };
  if (record.rejected === true) sent.rejected = true;
  return sent;
}

/**
 * The one Kafka send of the ingest: events to `topics.topic`, refused items to
 * `topics.rejectedTopic`, in one kafkajs sendBatch with acks=-1 (every in-sync replica has the
 * records before it resolves) and `timeoutMs` as the broker's request timeout, sent again whole
 * on failure until `timeoutMs` (schemas/kafka/producer.ts). Throws kafkajs's errors (retriable by the
 * client: the app answers 503).
 */
export function kafkaSend(
  producer: Producer,
  topics: { topic: string; rejectedTopic: string },
  timeoutMs: number,
  metrics: Pick<IngestMetrics, "produceSeconds" | "recordsProduced">,
): SendBatch {
  return async (records) => {
    const timer = metrics.produceSeconds.startTimer();
    const events = records.filter((r) => r.rejected !== true);
    const rejected = records.filter((r) => r.rejected === true).map(({ key, value }) => ({ key, value }));
    try {
      await sendWhole(
        producer,
        {
          topicMessages: [
            ...(events.length > 0 ? [{ topic: topics.topic, messages: events }] : []),
            ...(rejected.length > 0 ? [{ topic: topics.rejectedTopic, messages: rejected }] : []),
          ],
          acks: -1,
          timeout: timeoutMs,
        },
        timeoutMs,
      );
      timer({ status: "ok" });
      metrics.recordsProduced.inc({ topic: topics.topic }, events.length);
      if (rejected.length > 0) metrics.recordsProduced.inc({ topic: topics.rejectedTopic }, rejected.length);
    } catch (error) {
      timer({ status: "failed" });
      throw error;
    }
  };
}

/** The broker did not acknowledge within the deadline. Retriable by the client. */
export class ProduceTimeoutError extends Error {
  readonly retriable = true;
  constructor(ms: number) {
    super(`broker did not acknowledge within ${ms} ms`);
    this.name = "ProduceTimeoutError";
  }
}

/** Accumulation limits. */
export interface AccumulatorOptions {
  /** How long the first pending record waits for others, ms. */
  lingerMs: number;
  /** Send at once when this many records are pending. */
  maxBatch: number;
  /**
   * Most bytes of one send (schemas/kafka/limits.ts recordBytes): pending records over it are
   * sent in several sends, and a request is acknowledged once every send holding its records
   * is. Default: no limit.
   */
  maxBytes?: number;
  /** Deadline of one `produce` call, ms. */
  timeoutMs: number;
}

interface Pending {
  records: WireRecord[];
  /** recordBytes of each record, computed once. */
  sizes: number[];
  settle: (error?: unknown) => void;
}

/**
 * Accumulates records and sends them with `send`. A request is acknowledged only when every
 * record of its `produce` call is: when its records span several sends (over `maxBytes`), one
 * failed send fails the request, and the client's retry of the same messageIds collapses to one
 * row per message in ClickHouse.
 */
export class Accumulator {
  private pending: Pending[] = [];
  private pendingRecords = 0;
  private pendingBytes = 0;
  private sendingBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The deadline of the batch pending now (expireAfter). */
  private deadline: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly send: SendBatch,
    private readonly options: AccumulatorOptions,
  ) {}

  /**
   * Resolves when the broker acknowledged every record. Rejects with the send's error or
   * ProduceTimeoutError `timeoutMs` after the first call of its batch (at most `lingerMs` before
   * its own `timeoutMs`: one timer per batch, not one per request).
   */
  produce(given: EventRecord[]): Promise<void> {
    if (given.length === 0) return Promise.resolve();
    const records = given.map(wire);
    const sizes = records.map(recordBytes);
    if (this.pending.length === 0) this.deadline = this.expireAfter(this.pending);
    const acked = new Promise<void>((resolve, reject) => {
      this.pending.push({ records, sizes, settle: (error) => (error === undefined ? resolve() : reject(error)) });
    });
    this.pendingRecords += records.length;
    for (const size of sizes) this.pendingBytes += size;
    if (this.pendingRecords >= this.options.maxBatch || this.pendingBytes >= (this.options.maxBytes ?? Infinity)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.lingerMs);
    return acked;
  }

  /** The timer that rejects every call of `batch` not settled `timeoutMs` from now (a later settle changes nothing). */
  private expireAfter(batch: readonly Pending[]): NodeJS.Timeout {
    const { timeoutMs } = this.options;
    return setTimeout(() => {
      for (const p of batch) p.settle(new ProduceTimeoutError(timeoutMs));
    }, timeoutMs);
  }

  /** Sends everything pending now, without waiting for the ack. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    const deadline = this.deadline;
    this.pending = [];
    this.deadline = undefined;
    this.pendingRecords = 0;
    this.sendingBytes += this.pendingBytes;
    this.pendingBytes = 0;
    const records: WireRecord[] = [];
    const sizes: number[] = [];
    for (const p of batch) {
      for (const r of p.records) records.push(r);
      for (const size of p.sizes) sizes.push(size);
    }
    // Chunks of record indexes, each under maxBytes; a request's records are contiguous, in order.
    const indexes = records.map((_, i) => i);
    const chunks = this.options.maxBytes === undefined ? [indexes] : chunkByBytes(indexes, this.options.maxBytes, (i) => sizes[i]!);
    const chunkOf: number[] = []; // record index -> chunk index
    const sends = chunks.map((chunk, c) => {
      let bytes = 0;
      for (const i of chunk) {
        chunkOf[i] = c;
        bytes += sizes[i]!;
      }
      const sent = this.send(chunk.map((i) => records[i]!));
      const settled = sent.then(
        () => {},
        () => {},
      );
      // A request past its deadline is answered, but kafkajs still holds its records until the
      // send settles: they count until then.
      void settled.then(() => (this.sendingBytes -= bytes));
      this.inFlight.add(settled);
      void settled.finally(() => this.inFlight.delete(settled));
      return sent;
    });
    void Promise.allSettled(sends).then(() => clearTimeout(deadline));
    let start = 0;
    for (const p of batch) {
      const first = chunkOf[start]!;
      const last = chunkOf[start + p.records.length - 1]!;
      start += p.records.length;
      Promise.all(sends.slice(first, last + 1)).then(
        () => p.settle(),
        (error: unknown) => p.settle(error ?? new Error("send failed")),
      );
    }
  }

  /** Bytes of records pending or sent and not yet settled (recordBytes): what this holds in memory. */
  get bytesHeld(): number {
    return this.pendingBytes + this.sendingBytes;
  }

  /** Sends what is pending and waits until every send has settled (shutdown). */
  async drain(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.inFlight]);
  }
}
