/**
 * The sink service: two kafkajs consumer groups, one writing the events topic into the events
 * table and one the rejected topic into `rejected_messages`, and a small HTTP server for
 * /healthz, /readyz and /metrics. If Kafka or ClickHouse is unreachable at start,
 * start() throws; once running, ClickHouse outages are retried (see consumer.ts) and reported
 * by /readyz, and Kafka outages are kafkajs's to reconnect.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Router from "@koa/router";
import type { Consumer } from "kafkajs";
import Koa from "koa";
import type { Logger } from "pino";
import { quoteIdent } from "../schemas/clickhouse/sql";
import { REJECTED_TABLE } from "../schemas/clickhouse/tables";
import type { SinkConfig } from "./config";
import { standInState } from "../schemas/kafka/stand-ins";
import { topicMaxMessageBytes } from "../schemas/kafka/limits";
import { createProducer } from "../schemas/kafka/producer";
import { createKafka, openAdmin } from "../schemas/kafka/client";
import { itemIds, PrivacyList, rowIds, rowReceivedAt } from "../schemas/privacy/list";
import { followSuppressions } from "../schemas/privacy/follower";
import { EVENT_ROW_COLUMNS, REJECTED_ROW_COLUMNS, type RejectedRow } from "../schemas/row";
import type { DeadLetter } from "./loop/batch";
import { runLoop, type LoopHealth, type RunningLoop } from "./loop/consumer";
import { settledWithin } from "../schemas/runtime/deadline";
import { withCrashHook } from "./loop/crash";
import { decode, decodeRejected } from "./loop/decode";
import { sendDeadLetters } from "./loop/dlq";
import { checkSinkRights } from "./upkeep/grants";
import { sinkMetrics, type SinkMetrics } from "./metrics";
import type { ClickHouseClient } from "@clickhouse/client";
import { clientSql, createClickHouse, serverPartitionsPerInsert } from "../schemas/clickhouse/client";
import { startMaintenance } from "./upkeep/maintenance";
import { eventLineMonth, partitionChunks } from "./loop/partitions";
import { coalescedRefresh, oldestDeadLetterTime, replayGroupId } from "./monitors/dlq-progress";
import { clickhouseInsert, clickhouseInsertLines, clickhouseProbe, missingColumns, serverInsertSettings } from "./loop/writer";
import { startMonitors } from "./monitors/start";

/** A running sink. */
export interface RunningSink {
  /** Where /healthz and /readyz answer. */
  address: AddressInfo;
  /**
   * Stops fetching, finishes and commits open batches (giving up after `abortAfterMs`), disconnects
   * (giving up as long again): at most 2 x `abortAfterMs`, ms, when ClickHouse or Kafka does not answer.
   */
  stop: (abortAfterMs: number) => Promise<void>;
}

/** Starts the sink; resolves when the consumers run and the HTTP server listens. */
export async function start(config: SinkConfig, log: Logger): Promise<RunningSink> {
  const ch = config.clickhouse;
  const client = createClickHouse(ch, { useDatabase: true });
  const kafka = createKafka(config.kafka, "sink");
  const heartbeatMs = Math.min(3_000, Math.floor(config.sessionTimeoutMs / 10));
  const consumerOf = (groupId: string) =>
    kafka.consumer({
      groupId,
      sessionTimeout: config.sessionTimeoutMs,
      heartbeatInterval: heartbeatMs,
      minBytes: config.fetchMinBytes,
      maxWaitTimeInMs: config.fetchMaxWaitMs,
    });
  // Events and refused items are separate topics with separate groups: one never waits for the other.
  const groups = { [config.kafka.topic]: config.groupId, [config.kafka.rejectedTopic]: `${config.groupId}-rejected` };
  const consumers = { events: consumerOf(groups[config.kafka.topic]!), rejected: consumerOf(groups[config.kafka.rejectedTopic]!) };
  // No kafkajs retries: a failed DLQ send is retried whole by the flusher (schemas/kafka/producer.ts says why).
  const dlqProducer = createProducer(kafka);
  const server = await checkClickHouse(client, ch);
  const [admin] = await Promise.all([openAdmin(kafka), consumers.events.connect(), consumers.rejected.connect(), dlqProducer.connect()]);
  // Users deleted or suppressed: read whole before the first fetch, then followed.
  const privacy = new PrivacyList();
  const suppressions = await followSuppressions(kafka, config.kafka.suppressionsTopic, `${config.kafka.clientId}-sink`, privacy, log);
  const dlq = {
    topic: config.kafka.dlqTopic,
    maxMessageBytes: await topicMaxMessageBytes(kafka, config.kafka.dlqTopic, config.kafka.maxMessageBytes),
  };
  const metrics = sinkMetrics([config.kafka.topic, config.kafka.rejectedTopic], Date.now(), [dlq.topic]);
  const readDlqAge = oldestDeadLetterTime(admin, dlq.topic, replayGroupId(config.groupId));
  const dlqAge = coalescedRefresh(
    () => readDlqAge(),
    (at) => (at === undefined ? metrics.dlqOldestAt.delete(dlq.topic) : metrics.dlqOldestAt.set(dlq.topic, at)),
    (error) => log.debug({ err: error }, "dlq age not read"),
  );
  const deadLettersOf = (topic: string) => async (letters: DeadLetter[]) => {
    await sendDeadLetters(dlqProducer, dlq, topic, letters, new Date());
    if (letters.length > 0) void dlqAge.refresh();
  };
  const common = { ...loopSettings(config, heartbeatMs), metrics, log };
  const loops = await startLoops({ config, client, server, consumers, privacy, common, deadLettersOf });
  const monitors = await startMonitors({ config, client, admin, groups, refreshDlqAge: () => dlqAge.refresh(), metrics, log });
  const maintenance = await startMaintenance(ch, client, config.retentionJitterMs, log);
  const http = createServer(healthApp(allOf(loops), monitors.clickhouseAnswers, metrics).callback());
  http.listen(config.httpPort, config.httpHost);
  await once(http, "listening");
  const address = http.address() as AddressInfo;
  log.info(
    { topic: config.kafka.topic, groupId: config.groupId, table: ch.table, port: address.port, kafkajs: standInState() },
    "sink consuming",
  );
  return {
    address,
    stop: async (abortAfterMs) => {
      monitors.stop();
      maintenance.cancel();
      // Each loop's last flush waits at most abortAfterMs (ClickHouse), and the Kafka clients'
      // disconnects as long again: a consumer's waits for its fetch or commit under way when Kafka
      // does not answer (kafkajs's request timeout, 30 s). What is left is uncommitted, read again.
      const kafkaDone = (async () => {
        await Promise.all(loops.map((l) => l.stop(abortAfterMs)));
        await Promise.all([dlqProducer.disconnect(), admin.disconnect(), suppressions.stop()]);
      })();
      if (await settledWithin(kafkaDone, 2 * abortAfterMs)) await kafkaDone;
      else log.warn({ waitedMs: 2 * abortAfterMs }, "Kafka did not answer at the stop: the clients' disconnects are left");
      await Promise.all([client.close(), maintenance.close()]);
      // Only health and metrics are served here: a scrape cut at the stop costs nothing, and a
      // client polling on a connection busy at the close would otherwise hold the exit.
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeAllConnections();
      await closed;
      log.info("sink stopped");
    },
  };
}

/** What the server the sink writes to allows: partitions per INSERT and the insert settings it knows. */
interface ServerFacts {
  maxPartitions: number;
  insertSettings: Awaited<ReturnType<typeof serverInsertSettings>>;
}

/**
 * Checks ClickHouse before anything is consumed: it answers, the user has every right the sink
 * needs (named, rather than inserts retried for ever), and both tables have every column the rows
 * carry; then reads what the server allows. Throws an Error naming what is missing.
 */
async function checkClickHouse(client: ClickHouseClient, ch: SinkConfig["clickhouse"]): Promise<ServerFacts> {
  await client.ping();
  await checkSinkRights(client, ch);
  for (const [table, columns] of [
    [ch.table, EVENT_ROW_COLUMNS],
    [REJECTED_TABLE, REJECTED_ROW_COLUMNS],
  ] as const) {
    const missing = await missingColumns(client, ch.database, table, columns);
    if (missing.length > 0)
      throw new Error(`${ch.database}.${table} lacks column(s) ${missing.join(", ")}: run npm run setup (the migration) first`);
  }
  return {
    maxPartitions: await serverPartitionsPerInsert(clientSql(client)),
    insertSettings: await serverInsertSettings(clientSql(client)),
  };
}

/** The batching and retry settings both loops share (SINK_BATCH_*, SINK_RETRY_*), with the flush's heartbeat, ms. */
function loopSettings(config: SinkConfig, heartbeatMs: number) {
  return {
    batchRecords: config.batchRecords,
    batchBytes: config.batchBytes,
    batchWaitMs: config.batchWaitMs,
    retryMinMs: config.retryMinMs,
    retryMaxMs: config.retryMaxMs,
    heartbeatMs,
  };
}

/**
 * The two loops (sink/loop/consumer.ts): the events topic into the events table (its lines chunked by
 * month, at most the server's partitions per INSERT) and the rejected topic into
 * `rejected_messages`, each dropping the rows of deleted or suppressed users and dead-lettering
 * through `deadLettersOf` its topic. Throws if a consumer cannot subscribe.
 */
async function startLoops(args: {
  config: SinkConfig;
  client: ClickHouseClient;
  server: ServerFacts;
  consumers: { events: Consumer; rejected: Consumer };
  privacy: PrivacyList;
  common: ReturnType<typeof loopSettings> & { metrics: SinkMetrics; log: Logger };
  deadLettersOf: (topic: string) => (letters: DeadLetter[]) => Promise<void>;
}): Promise<RunningLoop[]> {
  const { config, client, server, consumers, privacy, common, deadLettersOf } = args;
  const eventsTable = quoteIdent(config.clickhouse.table);
  const rejectedTable = quoteIdent(REJECTED_TABLE);
  return [
    await runLoop<Buffer>({
      ...common,
      consumer: consumers.events,
      topic: config.kafka.topic,
      decode,
      drops: (line) => {
        if (privacy.size === 0) return false;
        const ids = rowIds(line);
        return ids !== undefined && privacy.drops(ids.workspaceId, ids.userId, ids.anonymousId, () => rowReceivedAt(line));
      },
      insert: withCrashHook(clickhouseInsertLines(client, eventsTable, EVENT_ROW_COLUMNS, server.insertSettings), config.crashAt),
      chunk: (items) => partitionChunks(items, eventLineMonth, server.maxPartitions),
      probe: clickhouseProbe(client, eventsTable),
      sendDeadLetters: deadLettersOf(config.kafka.topic),
    }),
    await runLoop<RejectedRow>({
      ...common,
      consumer: consumers.rejected,
      topic: config.kafka.rejectedTopic,
      decode: decodeRejected,
      drops: (row) => privacy.size > 0 && privacy.drops(row.workspace_id, ...rawIds(row.raw), () => Date.parse(row.received_at)),
      insert: clickhouseInsert<RejectedRow>(client, rejectedTable, server.insertSettings),
      probe: clickhouseProbe(client, rejectedTable),
      sendDeadLetters: deadLettersOf(config.kafka.rejectedTopic),
    }),
  ];
}

/** The health of every loop as one: joined when all are, failing when one is. */
function allOf(loops: RunningLoop[]): LoopHealth {
  return {
    get joined() {
      return loops.every((l) => l.health.joined);
    },
    get writeFailing() {
      return loops.some((l) => l.health.writeFailing);
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

/** The userId and anonymousId of a refused item's raw JSON, where they are strings. */
function rawIds(raw: string): [userId: string | undefined, anonymousId: string | undefined] {
  try {
    return itemIds(JSON.parse(raw));
  } catch {
    return [undefined, undefined]; // a cut raw (over the size limit) is not JSON: kept, and covered by users delete
  }
}
