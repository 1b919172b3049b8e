/**
 * Records of concurrent requests -> one kafkajs sendBatch every few ms (kafkajs has no linger).
 * A request's promise settles only when the broker acknowledged all its records (acks=all), or
 * rejects: with the send's error when Kafka fails, with ProduceTimeoutError past the deadline.
 * Either way the request is answered 503 and the client retries; a late ack then only makes a
 * duplicate, which ClickHouse collapses by messageId.
 */
import type { EventRecord } from "../schemas/envelope";

/** Sends records to the broker; resolves on the ack of all of them. */
export type SendBatch = (records: EventRecord[]) => Promise<void>;

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
  /** Deadline of one `produce` call, ms. */
  timeoutMs: number;
}

interface Pending {
  records: EventRecord[];
  settle: (error?: unknown) => void;
}

/**
 * Accumulates records and sends them with `send`. The records of one `produce` call always go in
 * the same send, so one request is acknowledged or failed as a whole.
 */
export class Accumulator {
  private pending: Pending[] = [];
  private pendingRecords = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly send: SendBatch,
    private readonly options: AccumulatorOptions,
  ) {}

  /**
   * Resolves when the broker acknowledged every record. Rejects with the send's error or
   * ProduceTimeoutError after `timeoutMs`.
   */
  produce(records: EventRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    const acked = new Promise<void>((resolve, reject) => {
      this.pending.push({ records, settle: (error) => (error === undefined ? resolve() : reject(error)) });
    });
    this.pendingRecords += records.length;
    if (this.pendingRecords >= this.options.maxBatch) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.lingerMs);
    return withDeadline(acked, this.options.timeoutMs);
  }

  /** Sends everything pending now, without waiting for the ack. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.pendingRecords = 0;
    const records: EventRecord[] = [];
    for (const p of batch) for (const r of p.records) records.push(r);
    const sending = this.send(records).then(
      () => batch.forEach((p) => p.settle()),
      (error: unknown) => batch.forEach((p) => p.settle(error ?? new Error("send failed"))),
    );
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
  }

  /** Sends what is pending and waits until every send has settled (shutdown). */
  async drain(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.inFlight]);
  }
}

function withDeadline(acked: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProduceTimeoutError(ms)), ms);
  });
  return Promise.race([acked, deadline]).finally(() => clearTimeout(timer));
}
