/**
 * The sink service: a kafkajs consumer group writing the events topic into ClickHouse, and a
 * small HTTP server for /healthz and /readyz. If Kafka or ClickHouse is unreachable at start,
 * start() throws; once running, ClickHouse outages are retried (see consumer.ts) and reported
 * by /readyz, and Kafka outages are kafkajs's to reconnect.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@clickhouse/client";
import Router from "@koa/router";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import Koa from "koa";
import type { Logger } from "pino";
import { quoteIdent } from "../schemas/clickhouse";
import type { SinkConfig } from "../schemas/config";
import { runLoop, type LoopHealth } from "./consumer";
import { sendDeadLetters } from "./dlq";
import { sinkMetrics, type SinkMetrics } from "./metrics";
import { clickhouseInsert } from "./writer";

/** How often /readyz's view of ClickHouse is refreshed, ms. */
const PROBE_INTERVAL_MS = 2_000;

/** A running sink. */
export interface RunningSink {
  /** Where /healthz and /readyz answer. */
  address: AddressInfo;
  /** Stops fetching, finishes and commits open batches (giving up after `abortAfterMs`), disconnects. */
  stop: (abortAfterMs: number) => Promise<void>;
}

/** Starts the sink; resolves when the consumer runs and the HTTP server listens. */
export async function start(config: SinkConfig, log: Logger): Promise<RunningSink> {
  const ch = config.clickhouse;
  const client = createClient({ url: ch.url, username: ch.username, password: ch.password, database: ch.database });
  const kafka = new Kafka({ clientId: `${config.kafka.clientId}-sink`, brokers: config.kafka.brokers, logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({
    groupId: config.groupId,
    sessionTimeout: config.sessionTimeoutMs,
    heartbeatInterval: Math.min(3_000, Math.floor(config.sessionTimeoutMs / 10)),
  });
  const dlqProducer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });

  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) {
      log.fatal({ err: payload.error }, "consumer crashed and will not restart");
      process.exit(1);
    }
    log.error({ err: payload.error }, "consumer crashed; kafkajs restarts it");
  });

  await client.ping();
  await Promise.all([consumer.connect(), dlqProducer.connect()]);
  const metrics = sinkMetrics();
  const loop = await runLoop({
    consumer,
    topic: config.kafka.topic,
    insert: clickhouseInsert(client, quoteIdent(ch.table)),
    sendDeadLetters: (letters) =>
      sendDeadLetters(dlqProducer, config.kafka.dlqTopic, config.kafka.topic, letters, new Date()),
    batchRows: config.batchRows,
    batchWaitMs: config.batchWaitMs,
    retryMinMs: config.retryMinMs,
    retryMaxMs: config.retryMaxMs,
    crashAt: config.crashAt,
    metrics,
    log,
  });

  let clickhouseAnswers = true;
  const probe = setInterval(() => {
    client.ping().then(
      (result) => (clickhouseAnswers = result.success),
      () => (clickhouseAnswers = false),
    );
  }, PROBE_INTERVAL_MS);
  const server = createServer(healthApp(loop.health, () => clickhouseAnswers, metrics).callback());
  server.listen(config.httpPort, config.httpHost);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  log.info({ topic: config.kafka.topic, groupId: config.groupId, table: ch.table, port: address.port }, "sink consuming");

  return {
    address,
    stop: async (abortAfterMs) => {
      clearInterval(probe);
      await loop.stop(abortAfterMs);
      await dlqProducer.disconnect();
      await client.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      log.info("sink stopped");
    },
  };
}

/**
 * /healthz: the process runs. /readyz: joined, ClickHouse answers, and inserts are not failing.
 * /metrics: Prometheus text.
 */
function healthApp(health: LoopHealth, clickhouseAnswers: () => boolean, metrics: SinkMetrics): Koa {
  const app = new Koa();
  const router = new Router();
  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });
  router.get("/readyz", (ctx) => {
    const checks = { consumer: health.joined, clickhouse: clickhouseAnswers() && !health.writeFailing };
    const ready = checks.consumer && checks.clickhouse;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? "ready" : "not ready", checks };
  });
  router.get("/metrics", async (ctx) => {
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  app.use(router.routes());
  return app;
}
