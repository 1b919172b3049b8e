/**
 * One-shot setup before the services start: Kafka topics and ClickHouse migrations, both
 * idempotent. Exits 1 if either server is unreachable, or if the database holds a table or view
 * bearing one of our names that setup did not create (deploy/setup/migrate.ts; ClickHouse is left as it was).
 */
import { logLevel } from "kafkajs";
import pino from "pino";
import { setupConfig } from "./config";
import { clientSql, createClickHouse } from "../../schemas/clickhouse/client";
import { createKafka } from "../../schemas/kafka/client";
import { migrate } from "./migrate";
import { ensureTopics, waitForGroupCoordinator } from "./topics";
import { logProcessWarnings } from "../../schemas/runtime/warnings";

const log = pino({ name: "setup" });

/** Creates the topics and migrates ClickHouse; resolves when both are done. */
export async function runSetup(): Promise<void> {
  const config = setupConfig(process.env);
  logProcessWarnings(log);
  const kafka = createKafka(config.kafka, "setup", logLevel.WARN);
  const { created, retentionChanged, replication } = await ensureTopics(kafka, config.kafka, config);
  // Its retries log nothing: "coordinator not available" is the expected answer while it waits.
  const quiet = createKafka(config.kafka, "setup", logLevel.NOTHING);
  await waitForGroupCoordinator(quiet, config.groupId);
  log.info(
    { created, retentionChanged, ...replication, topic: config.kafka.topic, dlqTopic: config.kafka.dlqTopic, groupId: config.groupId },
    "kafka topics and group coordinator ready",
  );
  const ch = config.clickhouse;
  // On a cluster the backfills insert into Distributed tables: clusterSettings makes them wait for
  // every shard. ON CLUSTER statements wait for every server, up to distributed_ddl_task_timeout
  // (180 s by default), hence the request timeout.
  const client = createClickHouse(ch, { requestTimeoutMs: 300_000 });
  try {
    const { version, dialect } = await migrate(clientSql(client), config.clickhouse);
    log.info({ version, dialect, table: `${config.clickhouse.database}.${config.clickhouse.table}` }, "clickhouse migrated");
  } finally {
    await client.close();
  }
}

if (require.main === module) {
  runSetup().catch((error: unknown) => {
    log.fatal({ err: error }, "setup failed");
    process.exit(1);
  });
}
