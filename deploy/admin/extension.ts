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
import { RegulationRunner, REGULATION_STALE_MS } from "../commands/regulations-run";
import { adminRouter } from "./api";
import { adminOpenapi } from "./openapi";
import { pagesRouter } from "./pages";
import { sinkConfig } from "../../sink/config";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- package.json sits outside rootDir, so it cannot be imported
const VERSION: string = (require("../../../package.json") as { version: string }).version;

/** The admin API of the environment's settings (CLICKHOUSE_*, KAFKA_ADMIN_TOPIC). */
export function adminApi(env: Env): AdminExtension {
  return async ({ kafka, book, guard, configuredKeys, log }) => {
    const config = clickhouseConfig(env);
    const clickhouse = createClickHouse(config);
    const apiLog = log.child({ part: "admin-api" }) as Logger;
    const regulations = { kafka, config: privacyConfig(env), sql: clientSql(clickhouse), log: apiLog, now: () => new Date() };
    const runner = new RegulationRunner(regulations);
    runner.resume(book); // those a stopped ingest left, now and every REGULATION_STALE_MS
    const resuming = setInterval(() => runner.resume(book), REGULATION_STALE_MS);
    resuming.unref();
    const kafkaSettings = kafkaConfig(env);
    const destinations = {
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
    const context = {
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
    // A regulation under way when the ingest stops is left RUNNING, resumed by the next ingest to
    // look (deletion is idempotent): stopping does not wait for it, nor close ClickHouse under it.
    const stop = async () => {
      clearInterval(resuming);
      void runner.stop();
    };
    return { routers: [adminRouter(context, guard, adminOpenapi(VERSION)), pagesRouter(context)], stop };
  };
}
