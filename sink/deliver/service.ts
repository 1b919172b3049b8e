/**
 * The delivery process: follows the destinations topic and runs one DestinationLoop per active
 * destination (sink/deliver/loop.ts), keeps what destinations refuse in ClickHouse
 * (`delivery_failures`), follows the suppressions topic so a deleted user's events are not sent,
 * reports each destination's health to the admin topic every 30 s (sink/deliver/health.ts),
 * and answers /healthz, /readyz and /metrics. A change of a destination (added, paused, resumed,
 * changed, removed) is applied as the follower reads it, one change at a time per destination
 * (sink/deliver/destinations.ts: a loop registered once started, a failed start retried).
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
import { createKafka, withAdmin } from "../../schemas/kafka/client";
import { followCompacted, type Following } from "../../schemas/kafka/follow";
import { createProducer } from "../../schemas/kafka/producer";
import { followSuppressions } from "../../schemas/privacy/follower";
import { PrivacyList } from "../../schemas/privacy/list";
import { retry } from "../../schemas/runtime/retry";
import type { DeliverConfig } from "./config";
import { Destinations } from "./destinations";
import { startHealth } from "./health";
import { DestinationLoop, groupIdOf, type LoopDeps } from "./loop";
import { deliverMetrics, type DeliverMetrics } from "./metrics";
import { closeConnections } from "./post";
import { ReportWriter } from "./reports";

/** A running delivery process. */
export interface RunningDeliver {
  address: AddressInfo;
  stop(): Promise<void>;
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
  const keep = (rows: DeliveryFailureRow[], signal: AbortSignal) =>
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
        signal: AbortSignal.any([stopping.signal, signal]), // the process's stop, or the loop's (pause, remove)
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
  const destinations = new Destinations({
    newLoop: (d) => new DestinationLoop(d, deps),
    deleteGroup: async (id) => {
      await withAdmin(kafka, (admin) => admin.deleteGroups([groupIdOf(config.groupPrefix, id)]));
    },
    backoff: { minMs: 1_000, maxMs: 30_000 },
    log,
  });
  const groupPrefix = `${config.kafka.clientId}-deliver-destinations`;
  const label = { topic: config.kafka.destinationsTopic, groupPrefix, label: "destinations", log };
  const following: Following = await followCompacted(kafka, label, (key, value) => destinations.applyRecord(key, value));
  const health = startHealth(producer, config.kafka.adminTopic, metrics.recent, log, config.healthEveryMs);
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
      await reports.stop();
      await health.stop(); // after the loops: no report of a destination follows its tombstone
      await producer.disconnect();
      closeConnections();
      http.close();
      await client.close();
    },
  };
}
