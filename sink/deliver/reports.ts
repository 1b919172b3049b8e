/**
 * The delivery process's reports of each attempt to the deliveries topic (schemas/destinations.ts
 * DeliveryReport), read back by the live view. They are a view, not a record of truth: a write
 * never delays a delivery (it is not awaited), is acknowledged by the partition's leader alone,
 * and is dropped and counted when MAX_PENDING writes are already under way (a slow or absent
 * Kafka costs the view, never the delivery). Nothing throws.
 */
import type { Logger } from "pino";
import type { DeliveryReport } from "../../schemas/destinations";

/** Report writes under way at most; more are dropped (and counted). */
export const MAX_PENDING = 64;

/** Sends one write of records (the deliveries topic's producer); rejects when Kafka does not take it. */
export type SendReports = (messages: { key: string; value: string }[]) => Promise<unknown>;

/** Writes reports without waiting, at most MAX_PENDING writes at a time. */
export class ReportWriter {
  private pending = 0;
  private warned = false;

  constructor(
    private readonly send: SendReports,
    private readonly dropped: (n: number) => void,
    private readonly log: Logger,
  ) {}

  /** Starts a write of `reports`; they are dropped (counted) when too many writes are under way or the write fails. */
  write(reports: readonly DeliveryReport[]): void {
    if (reports.length === 0) return;
    if (this.pending >= MAX_PENDING) {
      this.dropped(reports.length);
      return;
    }
    this.pending++;
    const messages = reports.map((r) => ({ key: r.messageId, value: JSON.stringify(r) }));
    this.send(messages)
      .then(() => (this.warned = false))
      .catch((error: unknown) => {
        this.dropped(reports.length);
        if (!this.warned) this.log.warn({ err: error }, "delivery reports not written: the live view misses them");
        this.warned = true;
      })
      .finally(() => this.pending--);
  }

  /** Writes under way now. */
  get underWay(): number {
    return this.pending;
  }
}
