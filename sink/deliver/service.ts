/**
 * The delivery process: follows the destinations topic and runs one DestinationLoop per active
 * destination (sink/deliver/loop.ts), keeps what destinations refuse in ClickHouse
 * (`delivery_failures`), follows the suppressions topic so a deleted user's events are not sent,
 * and answers /healthz, /readyz and /metrics. A change of a destination (added, paused, resumed,
 * changed, removed) is applied as the follower reads it, one change at a time per destination.
 * Throws at start when Kafka or ClickHouse is unreachable (the supervisor restarts it).
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Router from "@koa/router";
import Koa from "koa";
import type { Logger } from "pino";
import { createClickHouse } from "../../schemas/clickhouse/client";
import { DELIVERY_FAILURES_TABLE, type DeliveryFailureRow } from "../../schemas/clickhouse/deliveries";
import { quoteIdent } from "../../schemas/clickhouse/sql";
import { parseDestination, type WebhookDestination } from "../../schemas/destinations";
import { createKafka, withAdmin } from "../../schemas/kafka/client";
import { followCompacted, type Following } from "../../schemas/kafka/follow";
import { createProducer } from "../../schemas/kafka/producer";
import { followSuppressions } from "../../schemas/privacy/follower";
import { PrivacyList } from "../../schemas/privacy/list";
import { retry } from "../../schemas/runtime/retry";
import type { DeliverConfig } from "./config";
import { DestinationLoop, groupIdOf, type LoopDeps } from "./loop";
import { deliverMetrics, type DeliverMetrics } from "./metrics";
import { closeConnections } from "./post";
import { ReportWriter } from "./reports";

/** A running delivery process. */
export interface RunningDeliver {
  address: AddressInfo;
  stop(): Promise<void>;
}

/** Applies destination changes: starts, updates, pauses and removes loops, one change at a time per destination. */
class Destinations {
  private readonly loops = new Map<string, DestinationLoop>();
  private readonly queues = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: LoopDeps,
    private readonly log: Logger,
  ) {}

  /** Queues the change of `destinationId` to `destination` (undefined: removed). */
  apply(destinationId: string, destination: WebhookDestination | undefined): void {
    const previous = this.queues.get(destinationId) ?? Promise.resolve();
    const next = previous
      .then(() => this.change(destinationId, destination))
      .catch((error: unknown) => {
        this.log.error(
          { err: error, destination: destinationId },
          "destination change failed; it applies again at the next change or restart",
        );
      });
    this.queues.set(destinationId, next);
  }

  get running(): number {
    return this.loops.size;
  }

  private async change(destinationId: string, destination: WebhookDestination | undefined): Promise<void> {
    const loop = this.loops.get(destinationId);
    const active = destination !== undefined && !destination.paused;
    if (loop !== undefined && active) return loop.update(destination);
    if (loop !== undefined) {
      this.loops.delete(destinationId);
      await loop.stop();
      this.log.info({ destination: destinationId }, destination === undefined ? "destination removed" : "destination paused");
    }
    if (destination === undefined) {
      const groupId = groupIdOf(this.deps.groupPrefix, destinationId);
      await withAdmin(this.deps.kafka, (admin) => admin.deleteGroups([groupId])).catch(() => undefined); // none, or still closing: harmless
      return;
    }
    if (!active) return;
    const started = new DestinationLoop(destination, this.deps);
    this.loops.set(destinationId, started);
    await started.start();
    this.log.info({ destination: destinationId }, "destination delivering");
  }

  /** Stops every loop (after the changes under way). */
  async stopAll(): Promise<void> {
    await Promise.all(this.queues.values());
    await Promise.all([...this.loops.values()].map((loop) => loop.stop()));
    this.loops.clear();
  }
}

function healthApp(metrics: DeliverMetrics, ready: () => boolean): Koa {
  const app = new Koa();
  const router = new Router();
  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });
  router.get("/readyz", (ctx) => {
    ctx.status = ready() ? 200 : 503;
    ctx.body = { status: ready() ? "ready" : "not ready" };
  });
  router.get("/metrics", async (ctx) => {
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  app.use(router.routes());
  return app;
}

/** Starts the delivery process (see the module comment). */
export async function start(config: DeliverConfig, log: Logger): Promise<RunningDeliver> {
  const kafka = createKafka(config.kafka, "deliver");
  const client = createClickHouse(config.clickhouse, { requestTimeoutMs: 30_000 });
  const metrics = deliverMetrics();
  const privacy = new PrivacyList();
  const suppressions = await followSuppressions(kafka, config.kafka.suppressionsTopic, `${config.kafka.clientId}-deliver`, privacy, log);
  const stopping = new AbortController();
  const keep = (rows: DeliveryFailureRow[]) =>
    retry(
      () =>
        client.insert({
          table: `${quoteIdent(config.clickhouse.database)}.${quoteIdent(DELIVERY_FAILURES_TABLE)}`,
          values: rows,
          format: "JSONEachRow",
          clickhouse_settings: { date_time_input_format: "best_effort" },
        }),
      {
        minMs: 500,
        maxMs: 30_000,
        signal: stopping.signal,
        onRetry: (error) => log.warn({ err: error }, "failures not kept yet; retrying"),
      },
    ).then(() => undefined);
  const producer = createProducer(kafka);
  await producer.connect();
  const topic = config.kafka.deliveriesTopic;
  const reports = new ReportWriter(
    (messages) => producer.send({ topic, acks: 1, messages }),
    (n) => metrics.reportsDropped.inc(n),
    log,
  );
  const post = { timeoutMs: config.timeoutMs, maxAnswerBytes: config.maxAnswerBytes, allowLinkLocal: config.allowLinkLocal };
  const deps: LoopDeps = {
    kafka,
    topic: config.kafka.topic,
    groupPrefix: config.groupPrefix,
    privacy,
    post,
    horizonMs: config.horizonMs,
    ...(config.secretKey === undefined ? {} : { secretKey: config.secretKey }),
    keep,
    metrics,
    report: (r) => reports.write(r),
    log,
  };
  const destinations = new Destinations(deps, log);
  const label = {
    topic: config.kafka.destinationsTopic,
    groupPrefix: `${config.kafka.clientId}-deliver-destinations`,
    label: "destinations",
    log,
  };
  const following: Following = await followCompacted(kafka, label, (key, value) => {
    const destination = parseDestination(value);
    if (value !== null && (destination === undefined || destination.destinationId !== key))
      log.warn({ destination: key }, "destinations: record ignored");
    destinations.apply(key, destination?.destinationId === key ? destination : undefined);
  });
  const http: Server = createServer(healthApp(metrics, () => !stopping.signal.aborted).callback());
  http.listen(config.httpPort, config.httpHost);
  await once(http, "listening");
  const address = http.address() as AddressInfo;
  log.info({ host: address.address, port: address.port, destinations: destinations.running }, "deliver listening");
  return {
    address,
    stop: async () => {
      stopping.abort();
      await following.stop();
      await destinations.stopAll();
      await suppressions.stop();
      await producer.disconnect();
      closeConnections();
      http.close();
      await client.close();
    },
  };
}
