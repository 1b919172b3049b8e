/**
 * One destination's delivery: a kafkajs consumer of the events topic in a consumer group of its
 * own (`<DELIVER_GROUP_PREFIX>-<destinationId>`), so its position, and a dead destination's
 * backlog, live in Kafka as that group's offsets and lag, never in memory; and a slow or failing
 * destination holds up nothing but itself. Each partition sends one request at a time, in offset
 * order; a request is tried until it is delivered, refused (kept as a failure), or its oldest
 * message passes the horizon (kept too); only then are its offsets committed. Delivery is at least
 * once: a request under way when the process stops is sent again by the next one.
 *
 * A new destination's group starts at the offsets of the time it was created (less a margin for
 * clocks): it receives what was accepted after it was added, not the topic's history. A paused
 * destination's consumer is stopped (its backlog waits in Kafka); a removed one's group is deleted.
 * Before each attempt the request's messages are checked against the suppressions list again, so
 * a user deleted while their events wait for a retry is never delivered.
 *
 * After a Kafka outage kafkajs may crash the consumer and not restart it (`restart: false`): the
 * loop connects, subscribes and runs it again with backoff (schemas/kafka/reconnect.ts), as the
 * sink and the followers do. `deliver_destination_running` is 1 only while the consumer is in its
 * group: from each join to a crash or the stop. A failed heartbeat while a request waits for its
 * retry gives the request up uncommitted (sink/deliver/wait.ts): the partition may be another
 * member's by then. An attempt lasts at most DELIVER_TIMEOUT_MS, bounded below the session
 * timeout (sink/deliver/config.ts), so a member is never evicted while it sends.
 */
import type { Consumer, EachBatchPayload, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { deliveryReports, openSecret, type DeliveryReport, type WebhookDestination } from "../../schemas/destinations";
import type { DeliveryFailureRow } from "../../schemas/clickhouse/deliveries";
import { failureRows } from "../../schemas/clickhouse/deliveries";
import { withAdmin } from "../../schemas/kafka/client";
import { RECONNECT_BACKOFF } from "../../schemas/kafka/follow";
import { reconnectOnCrash } from "../../schemas/kafka/reconnect";
import type { PrivacyList } from "../../schemas/privacy/list";
import type { Backoff } from "../../schemas/runtime/retry";
import { pastHorizon, retryDelayMs, verdictOf, type Verdict } from "./answer";
import { SESSION_TIMEOUT_MS } from "./config";
import type { DeliveryMessage } from "./message";
import { answerClass, type DeliverMetrics } from "./metrics";
import { postJson, type PostSettings } from "./post";
import { planRequests, requestOf, suppressed, type PlannedRequest } from "./request";
import { beat, HEARTBEAT_MS, Interrupted, retryWait } from "./wait";
import type { Outcome } from "./window";

/** What every destination's loop shares. */
export interface LoopDeps {
  kafka: Kafka;
  /** The events topic. */
  topic: string;
  groupPrefix: string;
  privacy: PrivacyList;
  post: PostSettings;
  /** How long after its receipt a message is still tried, ms (DELIVER_HORIZON_MS). */
  horizonMs: number;
  /** DESTINATIONS_SECRET_KEY; absent: destinations with a secret are not sent to (logged). */
  secretKey?: string;
  /**
   * Keeps failures in ClickHouse; resolves once they are stored (it retries until then), throws
   * when `signal` (the loop's stop) or the process's stop aborts the retries.
   */
  keep: (rows: DeliveryFailureRow[], signal: AbortSignal) => Promise<void>;
  metrics: DeliverMetrics;
  /** Reports each attempt for the live view; never waited for (sink/deliver/reports.ts). */
  report: (reports: DeliveryReport[]) => void;
  log: Logger;
  /** Waits between reconnects after a crash kafkajs does not restart; default RECONNECT_BACKOFF. */
  reconnect?: Backoff;
}

/** How far before a destination's creation its group starts, ms: clocks of the CLI's and the ingest's hosts may differ. */
export const START_MARGIN_MS = 10_000;
/** The group id of a destination. */
export function groupIdOf(prefix: string, destinationId: string): string {
  return `${prefix}-${destinationId}`;
}

/** A destination's running delivery (see the module comment). */
export class DestinationLoop {
  private consumer: Consumer | undefined;
  private keeper: { stop(): void } | undefined;
  private stopping = false;
  /** Whether the secret's failure to open was logged (once per destination, not per attempt). */
  private secretWarned = false;
  private waiting = new Map<number, number>(); // partition -> receivedAt ms of the oldest message under way
  private readonly abort = new AbortController();

  constructor(
    private destination: WebhookDestination,
    private readonly deps: LoopDeps,
  ) {}

  get id(): string {
    return this.destination.destinationId;
  }

  /** The workspace it delivers (a destination whose workspace changes gets a new loop: sink/deliver/destinations.ts). */
  get workspaceId(): string {
    return this.destination.workspaceId;
  }

  /** Takes a new version of the destination (its URL, headers, filters apply from the next attempt). */
  update(destination: WebhookDestination): void {
    this.destination = destination;
  }

  /**
   * Joins the destination's group (its offsets set first when it has none) and starts consuming;
   * from then on a crash kafkajs does not restart is reconnected (see the module comment). Throws
   * when Kafka fails at start (the caller stops this loop and retries with a new one).
   */
  async start(): Promise<void> {
    const groupId = groupIdOf(this.deps.groupPrefix, this.id);
    const running = (value: number) => this.deps.metrics.running.set({ destination: this.id }, this.stopping ? 0 : value);
    running(0);
    await this.startAtCreation(groupId);
    const consumer = this.deps.kafka.consumer({
      groupId,
      sessionTimeout: SESSION_TIMEOUT_MS,
      heartbeatInterval: HEARTBEAT_MS,
      maxWaitTimeInMs: Math.max(100, this.destination.batchWaitMs),
      minBytes: this.destination.batchSize > 1 ? 64 * 1024 : 1,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, () => running(1));
    consumer.on(consumer.events.CRASH, () => running(0)); // not consuming until it joins again
    const begin = async () => {
      await consumer.subscribe({ topic: this.deps.topic, fromBeginning: false });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 16,
        eachBatch: (payload) => this.eachBatch(payload),
      });
    };
    this.keeper = reconnectOnCrash(consumer, begin, this.deps.reconnect ?? RECONNECT_BACKOFF, this.deps.log, `destination ${this.id}`);
    await consumer.connect();
    await begin();
    this.deps.metrics.recent.running(this.id, this.workspaceId);
  }

  /** Stops consuming (and reconnecting); a request under way is given up uncommitted (sent again later). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    this.keeper?.stop();
    this.deps.metrics.running.set({ destination: this.id }, 0);
    await this.consumer?.disconnect();
    this.deps.metrics.running.set({ destination: this.id }, 0);
    this.deps.metrics.oldestWaiting.set({ destination: this.id }, 0);
    this.deps.metrics.recent.stopped(this.id);
  }

  /** Sets the group's offsets to the destination's creation time when the group has none. */
  private async startAtCreation(groupId: string): Promise<void> {
    const { topic } = this.deps;
    await withAdmin(this.deps.kafka, async (admin) => {
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      if (committed !== undefined && committed.partitions.some((p) => p.offset !== "-1")) return;
      const at = Date.parse(this.destination.createdAt) - START_MARGIN_MS;
      const partitions = await admin.fetchTopicOffsetsByTimestamp(topic, at);
      await admin.setOffsets({ groupId, topic, partitions: partitions.map((p) => ({ partition: p.partition, offset: p.offset })) });
    });
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
    const live = () => !this.stopping && isRunning() && !isStale() && !this.destination.paused;
    const plan = planRequests(this.destination, batch.messages, this.deps.privacy);
    for (const [reason, n] of plan.skipped) this.deps.metrics.skipped.inc({ destination: this.id, reason }, n);
    const commit = async (offset: string) => {
      resolveOffset(offset);
      await this.consumer!.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(BigInt(offset) + 1n) }]);
    };
    try {
      for (const request of plan.requests) {
        await beat(heartbeat); // still this member's partition: kafkajs heartbeats only between batches
        await this.settle(batch.partition, request, live, heartbeat);
        await commit(request.lastOffset);
      }
      if (plan.lastOffset !== undefined && live()) await commit(plan.lastOffset);
    } catch (error) {
      if (!(error instanceof Interrupted)) throw error; // kafkajs restarts the consumer: the batch is read again
      this.deps.log.info({ destination: this.id, partition: batch.partition, why: error.message }, "request given up uncommitted");
    } finally {
      this.waiting.delete(batch.partition);
      this.showOldest();
    }
  }

  /** Tries `request` until it settles (delivered, or kept as a failure); throws Interrupted when the loop stops first. */
  private async settle(partition: number, request: PlannedRequest, live: () => boolean, heartbeat: () => Promise<void>): Promise<void> {
    const first = Date.now();
    this.waiting.set(partition, Math.min(...request.messages.map((m) => Date.parse(m.receivedAt))));
    this.showOldest();
    for (let attempt = 1; ; attempt++) {
      if (!live()) throw new Interrupted();
      const messages = request.messages.filter((m) => !suppressed(this.deps.privacy, this.destination.workspaceId, m));
      if (messages.length === 0) return;
      const { verdict, status, answer } = await this.attempt(messages);
      const report = (outcome: DeliveryReport["outcome"]) =>
        this.deps.report(deliveryReports(this.destination, messages, { outcome, status, attempt }, Date.now()));
      if (verdict.outcome === "delivered") {
        report("delivered");
        const now = Date.now();
        for (const m of messages) this.deps.metrics.latency.observe({ destination: this.id }, (now - Date.parse(m.receivedAt)) / 1000);
        this.counted("delivered", messages.length);
        return;
      }
      const delay = verdict.outcome === "retry" ? retryDelayMs(attempt, verdict.retryAfterMs) : 0;
      const oldest = Math.min(...messages.map((m) => Date.parse(m.receivedAt)));
      if (verdict.outcome === "failed" || pastHorizon(oldest, Date.now() + delay, this.deps.horizonMs)) {
        const reason = verdict.outcome === "failed" ? verdict.reason : `horizon passed; last: ${verdict.reason}`;
        report("failed");
        await this.keep(messages, { status, reason, answer, attempts: attempt, first });
        return;
      }
      report("retry");
      this.counted("retried", messages.length);
      this.deps.log.debug({ destination: this.id, attempt, delay, reason: verdict.reason }, "delivery will be tried again");
      await retryWait(delay, { live, heartbeat, signal: this.abort.signal, tick: () => this.showOldest() });
    }
  }

  /** One POST of `messages`; its verdict, status (0: none) and the start of its answer. */
  private async attempt(messages: DeliveryMessage[]): Promise<{ verdict: Verdict; status: number; answer: string }> {
    const d = this.destination;
    const secret =
      d.secret === undefined || this.deps.secretKey === undefined ? undefined : openSecret(d.secret, d.destinationId, this.deps.secretKey);
    if (d.secret !== undefined && secret === undefined) {
      // No request is sent, but it counts as one with no answer, so the failing alert sees it.
      this.deps.metrics.requests.inc({ destination: this.id, answer: answerClass(undefined) });
      const reason = "its secret does not open with DESTINATIONS_SECRET_KEY";
      if (!this.secretWarned) this.deps.log.warn({ destination: this.id }, `destination not sent to: ${reason}`);
      this.secretWarned = true;
      return { verdict: { outcome: "retry", reason }, status: 0, answer: "" };
    }
    const { body, headers } = requestOf(d, messages, secret);
    const posted = await postJson(d.url, headers, body, this.deps.post);
    const status = "status" in posted.result ? posted.result.status : undefined;
    this.deps.metrics.requests.inc({ destination: this.id, answer: answerClass(status) });
    this.deps.metrics.attemptSeconds.observe({ destination: this.id }, posted.ms / 1000);
    return { verdict: verdictOf(posted.result, Date.now()), status: status ?? 0, answer: posted.answer };
  }

  /** Keeps `messages` as failures of this destination. */
  private async keep(
    messages: DeliveryMessage[],
    f: { status: number; reason: string; answer: string; attempts: number; first: number },
  ): Promise<void> {
    const rows = failureRows(this.destination, messages, { ...f, firstMs: f.first }, Date.now());
    try {
      await this.deps.keep(rows, this.abort.signal);
    } catch (error) {
      // The loop stops while ClickHouse does not answer: the request stays uncommitted and is sent again later.
      if (this.abort.signal.aborted) throw new Interrupted("the loop stopped before the failures were kept", { cause: error });
      throw error;
    }
    this.counted("failed", messages.length);
    this.deps.log.warn({ destination: this.id, messages: messages.length, status: f.status, reason: f.reason }, "delivery failed: kept");
  }

  /** Counts `n` messages of `outcome`: the process's totals, and the last minutes its health reports tell (sink/deliver/window.ts). */
  private counted(outcome: Outcome, n: number): void {
    this.deps.metrics.messages.inc({ destination: this.id, outcome }, n);
    this.deps.metrics.recent.count(this.id, outcome, n, Date.now());
  }

  private showOldest(): void {
    const oldest = Math.min(...this.waiting.values());
    this.deps.metrics.oldestWaiting.set({ destination: this.id }, Number.isFinite(oldest) ? (Date.now() - oldest) / 1000 : 0);
    this.deps.metrics.recent.waitingSince(this.id, Number.isFinite(oldest) ? oldest : undefined);
  }
}
