/**
 * Bounded load for the fault scenarios, as an SDK would send it: workers post batches of new
 * messages to 127.0.0.1; a refused or failed request is queued and retried later with the same
 * messageIds. Everything answered 2xx is "acked"; the scenario then checks that exactly those
 * messageIds are in ClickHouse, once.
 */
import { randomUUID } from "node:crypto";

/** Figures of one run. */
export interface TrafficFigures {
  /** messageIds sent at least once. */
  sent: number;
  /** messageIds answered 2xx. */
  acked: number;
  /** Non-2xx answers by code ("conn" for a connection error). */
  rejected: Record<string, number>;
  /** Slowest non-2xx answer, ms. */
  slowestRefusalMs: number;
  /** 503 answers without a Retry-After header. */
  refusalsWithoutRetryAfter: number;
}

interface Pending {
  ids: string[];
  body: string;
}

/** Posts batches from `workers` loops until stopped; at most `maxRequests` requests in all. */
export class Traffic {
  readonly ackedIds = new Set<string>();
  private readonly sentIds = new Set<string>();
  private readonly retryQueue: Pending[] = [];
  private readonly rejected: Record<string, number> = {};
  private slowestRefusalMs = 0;
  private refusalsWithoutRetryAfter = 0;
  private requests = 0;
  private running = false;
  private loops: Promise<void>[] = [];
  /** ms timestamps of acks, to see traffic resume after an outage. */
  readonly ackTimes: number[] = [];

  constructor(
    private readonly url: string,
    private readonly authorization: string,
    private readonly options: {
      userId: string;
      batchSize: number;
      workers: number;
      pauseMs: number;
      maxRequests: number;
      /** Characters of padding per message (default 200). */
      padBytes?: number;
    },
  ) {}

  /** Starts the workers. */
  start(): void {
    this.running = true;
    this.loops = Array.from({ length: this.options.workers }, () => this.loop());
  }

  /** Stops the workers after their current request. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Sends one batch of new messages once, now (no retry); resolves with the status or "conn". */
  async once(): Promise<number | "conn"> {
    return this.post(this.newBatch());
  }

  /** Retries every refused batch until all are acked or `deadlineMs` passes. */
  async drain(deadlineMs: number): Promise<void> {
    const end = Date.now() + deadlineMs;
    while (this.retryQueue.length > 0 && Date.now() < end) {
      const pending = this.retryQueue.shift()!;
      const status = await this.post(pending);
      if (status !== 200) await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** The figures so far. */
  figures(): TrafficFigures {
    return {
      sent: this.sentIds.size,
      acked: this.ackedIds.size,
      rejected: { ...this.rejected },
      slowestRefusalMs: Math.round(this.slowestRefusalMs),
      refusalsWithoutRetryAfter: this.refusalsWithoutRetryAfter,
    };
  }

  private async loop(): Promise<void> {
    while (this.running && this.requests < this.options.maxRequests) {
      const pending = this.retryQueue.shift() ?? this.newBatch();
      const status = await this.post(pending);
      await new Promise((r) => setTimeout(r, status === 200 ? this.options.pauseMs : Math.max(this.options.pauseMs, 250)));
    }
  }

  private newBatch(): Pending {
    const ids = Array.from({ length: this.options.batchSize }, () => randomUUID());
    // Stamped once and kept across retries, as SDKs do: retries share event_date even across midnight.
    const timestamp = new Date().toISOString();
    const batch = ids.map((messageId, i) => ({
      type: "track",
      event: "Fault Test",
      userId: this.options.userId,
      messageId,
      timestamp,
      properties: { i, note: "x".repeat(this.options.padBytes ?? 200) },
    }));
    return { ids, body: JSON.stringify({ batch }) };
  }

  private async post(pending: Pending): Promise<number | "conn"> {
    this.requests++;
    for (const id of pending.ids) this.sentIds.add(id);
    const started = performance.now();
    let status: number | "conn";
    let retryAfter: string | null = null;
    try {
      const response = await fetch(this.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: this.authorization },
        body: pending.body,
        signal: AbortSignal.timeout(30_000),
      });
      status = response.status;
      retryAfter = response.headers.get("retry-after");
      await response.arrayBuffer();
    } catch {
      status = "conn";
    }
    if (status === 200) {
      for (const id of pending.ids) this.ackedIds.add(id);
      this.ackTimes.push(Date.now());
    } else {
      this.rejected[String(status)] = (this.rejected[String(status)] ?? 0) + 1;
      this.slowestRefusalMs = Math.max(this.slowestRefusalMs, performance.now() - started);
      if (status === 503 && retryAfter === null) this.refusalsWithoutRetryAfter++;
      this.retryQueue.push(pending);
    }
    return status;
  }
}
