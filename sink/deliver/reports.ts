/**
 * The delivery process's reports of each attempt to the deliveries topic (schemas/destinations.ts
 * DeliveryReport), read back by the live view. They are a view, not a record of truth: a report
 * never delays a delivery (write only buffers it), reports are sent together every FLUSH_MS in
 * one write acknowledged by the partitions' leaders alone, one write at a time, and reports past
 * MAX_BUFFERED waiting are dropped and counted (a slow or absent Kafka costs the view, never the
 * delivery). One write per flush, not per request: a send per request cost the process about as
 * much CPU as the delivery itself (npm run bench:deliveries). Nothing throws.
 */
import type { Logger } from "pino";
import type { DeliveryReport } from "../../schemas/destinations";

/** How long a report waits for the others of its flush, ms. */
export const FLUSH_MS = 200;
/** Reports waiting at most; more are dropped (and counted). */
export const MAX_BUFFERED = 10_000;

/** Sends one write of records (the deliveries topic's producer); rejects when Kafka does not take it. */
export type SendReports = (messages: { key: string; value: string }[]) => Promise<unknown>;

/** Buffers reports and writes them every FLUSH_MS, one write at a time. */
export class ReportWriter {
  private buffer: DeliveryReport[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private warned = false;

  constructor(
    private readonly send: SendReports,
    private readonly dropped: (n: number) => void,
    private readonly log: Logger,
    private readonly flushMs = FLUSH_MS,
  ) {}

  /** Buffers `reports` for the next flush; drops (and counts) them when MAX_BUFFERED wait already. */
  write(reports: readonly DeliveryReport[]): void {
    if (reports.length === 0) return;
    if (this.buffer.length + reports.length > MAX_BUFFERED) {
      this.dropped(reports.length);
      return;
    }
    for (const r of reports) this.buffer.push(r);
    this.schedule();
  }

  /** Reports waiting for a flush. */
  get waiting(): number {
    return this.buffer.length;
  }

  /** Writes what waits now (after the write under way, if any); a failed write drops its reports (counted). */
  async flush(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.sending;
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.sending = this.send(batch.map((r) => ({ key: r.messageId, value: JSON.stringify(r) })))
      .then(() => void (this.warned = false))
      .catch((error: unknown) => {
        this.dropped(batch.length);
        if (!this.warned) this.log.warn({ err: error }, "delivery reports not written: the live view misses them");
        this.warned = true;
      })
      .finally(() => {
        this.sending = undefined;
        if (this.buffer.length > 0) this.schedule();
      });
    await this.sending;
  }

  /** Stops the timer and writes what waits. */
  async stop(): Promise<void> {
    await this.flush();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.sending !== undefined) return;
    this.timer = setTimeout(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }
}
