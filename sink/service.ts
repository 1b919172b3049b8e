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
import type { Admin } from "kafkajs";
import Koa from "koa";
import type { Logger } from "pino";
import { quoteIdent } from "../schemas/clickhouse/sql";
import { REJECTED_TABLE } from "../schemas/clickhouse/tables";
import type { SinkConfig } from "./config";
import { standInState } from "../schemas/kafka/stand-ins";
import { topicMaxMessageBytes } from "../schemas/kafka/limits";
import { createProducer } from "../schemas/kafka/producer";
import { createKafka } from "../schemas/kafka/client";
import { itemIds, PrivacyList, rowIds, rowReceivedAt } from "../schemas/privacy/list";
import { followSuppressions } from "../schemas/privacy/follower";
import { EVENT_ROW_COLUMNS, REJECTED_ROW_COLUMNS, type RejectedRow } from "../schemas/row";
import type { DeadLetter } from "./batch";
import { runLoop, type LoopHealth } from "./consumer";
import { settledWithin } from "../schemas/runtime/deadline";
import { withCrashHook } from "./crash";
import { decode, decodeRejected } from "./decode";
import { sendDeadLetters } from "./dlq";
import { checkSinkRights } from "./grants";
import { sinkMetrics, type SinkMetrics } from "./metrics";
import { clientSql, createClickHouse, serverPartitionsPerInsert } from "../schemas/clickhouse/client";
import { startMaintenance } from "./maintenance";
import { eventLineMonth, partitionChunks } from "./partitions";
import { coalescedRefresh, oldestDeadLetterTime, replayGroupId } from "./dlq-progress";
import { clickhouseInsert, clickhouseInsertLines, clickhouseProbe, missingColumns, serverInsertSettings } from "./writer";
import { readClickHouseCopies, readKafkaCopies } from "./redundancy";

/** How often /readyz's view of ClickHouse is refreshed, ms. */
const PROBE_INTERVAL_MS = 2_000;
/** How often the copies of the topics and of ClickHouse's tables are read (sink/redundancy.ts), ms: Prometheus's scrape interval. */
const COPIES_INTERVAL_MS = 15_000;

/** How often the age of the oldest dead letter is read (also at start and after each DLQ send), ms. */
const DLQ_AGE_INTERVAL_MS = 60_000;

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
  const eventsConsumer = consumerOf(groups[config.kafka.topic]!);
  const rejectedConsumer = consumerOf(groups[config.kafka.rejectedTopic]!);
  // No kafkajs retries: a failed DLQ send is retried whole by the flusher (schemas/kafka/producer.ts says why).
  const dlqProducer = createProducer(kafka);
  const admin = kafka.admin({ retry: { retries: 0 } });

  await client.ping();
  await checkSinkRights(client, ch); // names every right the user lacks, rather than retrying inserts for ever
  for (const [table, columns] of [
    [ch.table, EVENT_ROW_COLUMNS],
    [REJECTED_TABLE, REJECTED_ROW_COLUMNS],
  ] as const) {
    const missing = await missingColumns(client, ch.database, table, columns);
    if (missing.length > 0)
      throw new Error(`${ch.database}.${table} lacks column(s) ${missing.join(", ")}: run npm run setup (the migration) first`);
  }
  const maxPartitions = await serverPartitionsPerInsert(clientSql(client));
  const insertSettings = await serverInsertSettings(clientSql(client));
  await Promise.all([eventsConsumer.connect(), rejectedConsumer.connect(), dlqProducer.connect(), admin.connect()]);
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
  const common = {
    batchRecords: config.batchRecords,
    batchBytes: config.batchBytes,
    batchWaitMs: config.batchWaitMs,
    retryMinMs: config.retryMinMs,
    retryMaxMs: config.retryMaxMs,
    heartbeatMs,
    metrics,
    log,
  };
  const deadLettersOf = (topic: string) => async (letters: DeadLetter[]) => {
    await sendDeadLetters(dlqProducer, dlq, topic, letters, new Date());
    if (letters.length > 0) void dlqAge.refresh();
  };
  const eventsTable = quoteIdent(ch.table);
  const rejectedTable = quoteIdent(REJECTED_TABLE);
  const loops = [
    await runLoop<Buffer>({
      ...common,
      consumer: eventsConsumer,
      topic: config.kafka.topic,
      decode,
      drops: (line) => {
        if (privacy.size === 0) return false;
        const ids = rowIds(line);
        return ids !== undefined && privacy.drops(ids.workspaceId, ids.userId, ids.anonymousId, () => rowReceivedAt(line));
      },
      insert: withCrashHook(clickhouseInsertLines(client, eventsTable, EVENT_ROW_COLUMNS, insertSettings), config.crashAt),
      chunk: (items) => partitionChunks(items, eventLineMonth, maxPartitions),
      probe: clickhouseProbe(client, eventsTable),
      sendDeadLetters: deadLettersOf(config.kafka.topic),
    }),
    await runLoop<RejectedRow>({
      ...common,
      consumer: rejectedConsumer,
      topic: config.kafka.rejectedTopic,
      decode: decodeRejected,
      drops: (row) => privacy.size > 0 && privacy.drops(row.workspace_id, ...rawIds(row.raw), () => Date.parse(row.received_at)),
      insert: clickhouseInsert<RejectedRow>(client, rejectedTable, insertSettings),
      probe: clickhouseProbe(client, rejectedTable),
      sendDeadLetters: deadLettersOf(config.kafka.rejectedTopic),
    }),
  ];

  let clickhouseAnswers = true;
  await readLag(admin, groups, metrics).catch((error: unknown) => log.debug({ err: error }, "lag not read"));
  const probe = setInterval(() => {
    client.ping().then(
      (result) => (clickhouseAnswers = result.success),
      () => (clickhouseAnswers = false),
    );
    void readLag(admin, groups, metrics).catch((error: unknown) => log.debug({ err: error }, "lag not read"));
  }, PROBE_INTERVAL_MS);
  void dlqAge.refresh();
  const dlqAgeTimer = setInterval(() => void dlqAge.refresh(), DLQ_AGE_INTERVAL_MS);
  const copiesOf = [config.kafka.topic, config.kafka.rejectedTopic, dlq.topic, config.kafka.suppressionsTopic];
  const readCopies = () => {
    readKafkaCopies(admin, copiesOf, metrics.copies).catch((error: unknown) => log.debug({ err: error }, "kafka copies not read"));
    readClickHouseCopies(clientSql(client), ch.database, ch.cluster, metrics.copies).catch((error: unknown) =>
      log.debug({ err: error }, "clickhouse copies not read"),
    );
  };
  readCopies();
  const copiesTimer = setInterval(readCopies, COPIES_INTERVAL_MS);
  const maintenance = await startMaintenance(ch, client, config.retentionJitterMs, log);
  const health: LoopHealth = {
    get joined() {
      return loops.every((l) => l.health.joined);
    },
    get writeFailing() {
      return loops.some((l) => l.health.writeFailing);
    },
  };
  const server = createServer(healthApp(health, () => clickhouseAnswers, metrics).callback());
  server.listen(config.httpPort, config.httpHost);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  log.info(
    { topic: config.kafka.topic, groupId: config.groupId, table: ch.table, port: address.port, kafkajs: standInState() },
    "sink consuming",
  );

  return {
    address,
    stop: async (abortAfterMs) => {
      clearInterval(probe);
      clearInterval(dlqAgeTimer);
      clearInterval(copiesTimer);
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
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      log.info("sink stopped");
    },
  };
}

/**
 * Sets `sink_consumer_lag_records` of every partition of each topic: high watermark minus the
 * group's committed offset (the whole partition when nothing is committed). Read from the broker,
 * not from the fetch, so it keeps rising while a flush is stuck. Throws if Kafka does not answer.
 */
async function readLag(admin: Admin, groups: Record<string, string>, metrics: SinkMetrics): Promise<void> {
  for (const [topic, groupId] of Object.entries(groups)) {
    const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
    // -1: nothing committed yet; the lag is then the whole retained partition (from its low mark).
    const done = new Map((committed?.partitions ?? []).filter((p) => p.offset !== "-1").map((p) => [p.partition, BigInt(p.offset)]));
    for (const end of ends) {
      const lag = BigInt(end.high) - (done.get(end.partition) ?? BigInt(end.low));
      metrics.consumerLag.set({ topic, partition: String(end.partition) }, Number(lag > 0n ? lag : 0n));
    }
  }
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
