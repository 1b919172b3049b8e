/**
 * The admin API as the ingest hosts it (ingest/http/admin.ts AdminExtension): its ClickHouse
 * client (the audit trail, the catalog, regulations), its router, its document and the runner of
 * regulations. `deploy/cli.ts ingest`
 * passes it to runIngest; an ingest started any other way has the live view and metrics only.
 */
import type { Logger } from "pino";
import type { AdminExtension } from "../../ingest/http/admin";
import { clickhouseConfig, kafkaConfig, type Env } from "../../schemas/config";
import { clientSql, createClickHouse } from "../../schemas/clickhouse/client";
import { privacyConfig } from "../setup/config";
import { RegulationRunner } from "../commands/regulations-run";
import { ReplayRunner, REPLAY_STALE_MS } from "../commands/replay-run";
import { publishAdmin, type AdminBook } from "../../schemas/admin/book";
import { publishRecords } from "../../schemas/kafka/producer";
import type { Kafka } from "kafkajs";
import type { ReplayRecord } from "../../schemas/admin/records";
import { FollowedDestinations } from "../commands/destination-view";
import { adminRouter } from "./api";
import { adminOpenapi } from "./openapi";
import { pagesRouter } from "./pages";
import { sinkConfig } from "../../sink/config";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- package.json sits outside rootDir, so it cannot be imported
const VERSION: string = (require("../../../package.json") as { version: string }).version;

/** How old a destination health report is before any ingest removes it from the admin topic, ms (readers ignore those past 2 minutes). */
export const HEALTH_SWEEP_MS = 10 * 60_000;

/** Writes tombstones for the health reports older than HEALTH_SWEEP_MS (a killed delivery process's); a failure is logged, the next sweep tries again. */
function sweepHealth(kafka: Kafka, topic: string, book: AdminBook, log: Logger): void {
  const keys = book.staleHealthKeys(Date.now(), HEALTH_SWEEP_MS);
  if (keys.length === 0) return;
  publishRecords(
    kafka,
    topic,
    keys.map((key) => ({ key, value: null })),
  ).then(
    () => log.info({ reports: keys.length }, "stale destination health reports removed"),
    (error: unknown) => log.warn({ err: error }, "stale destination health reports not removed; the next sweep tries again"),
  );
}

/** The admin API of the environment's settings (CLICKHOUSE_*, KAFKA_ADMIN_TOPIC). */
export function adminApi(env: Env): AdminExtension {
  return async ({ kafka, book, guard, configuredKeys, log }) => {
    const config = clickhouseConfig(env);
    const clickhouse = createClickHouse(config);
    const apiLog = log.child({ part: "admin-api" }) as Logger;
    const kafkaSettings = kafkaConfig(env);
    // Followed once here, so a lookup answers from memory rather than reading the topic whole.
    const view = await FollowedDestinations.start(kafka, kafkaSettings.destinationsTopic, kafkaSettings.clientId, apiLog);
    const regulations = { kafka, config: privacyConfig(env), sql: clientSql(clickhouse), log: apiLog, now: () => new Date() };
    const runner = new RegulationRunner(regulations);
    const destinations = {
      view,
      kafka: kafkaSettings,
      allowLinkLocal: env.DESTINATIONS_ALLOW_LINK_LOCAL === "true",
      env,
      ...(env.DESTINATIONS_SECRET_KEY ? { secretKey: env.DESTINATIONS_SECRET_KEY } : {}),
      post: { timeoutMs: 10_000, maxAnswerBytes: 65_536, allowLinkLocal: env.DESTINATIONS_ALLOW_LINK_LOCAL === "true" },
      database: config.database,
      table: config.table,
    };
    const plans = {
      kafka,
      topic: kafkaSettings.plansTopic,
      clientId: kafkaSettings.clientId,
      sql: async () => ({ sql: clientSql(clickhouse), database: config.database, table: config.table }),
      log: apiLog,
      now: () => new Date(),
    };
    const replayContext = {
      kafka,
      settings: destinations,
      client: clickhouse,
      log: apiLog,
      now: () => new Date(),
      publish: (records: ReplayRecord[]) => publishAdmin(kafka, kafkaSettings.adminTopic, records),
    };
    const replays = new ReplayRunner(replayContext);
    const resume = () => {
      runner.resume(book);
      replays.resume(book);
      sweepHealth(kafka, kafkaSettings.adminTopic, book, apiLog);
    };
    const context = {
      replays: { context: replayContext, runner: replays },
      dlq: { kafka: kafkaSettings, sinkGroupId: sinkConfig(env).groupId },
      workspace: { destinations, plans },
      regulations,
      runner,
      kafka,
      adminTopic: kafkaSettings.adminTopic,
      book,
      configuredKeys,
      clickhouse,
      database: config.database,
      log: apiLog,
    };
    resume(); // the regulations and replays a stopped ingest left, and a killed delivery process's health reports: now and every REPLAY_STALE_MS
    const resuming = setInterval(resume, REPLAY_STALE_MS);
    resuming.unref();
    // A regulation under way when the ingest stops is left RUNNING, resumed by the next ingest to
    // look (deletion is idempotent): stopping does not wait for it, nor close ClickHouse under it.
    const stop = async () => {
      clearInterval(resuming);
      void runner.stop();
      await replays.stop();
      await view.stop();
    };
    return { routers: [adminRouter(context, guard, adminOpenapi(VERSION)), pagesRouter(context)], stop };
  };
}
