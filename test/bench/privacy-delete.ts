/**
 * `npm run bench:privacy` (on the local stack): how long `users delete` takes on ClickHouse
 * 18.16 with 1,000,000 events of 10,000 users (the query benchmark's generator), its users and
 * identities fed by their materialized views. Deletes one user and prints the rows removed per
 * table and the seconds; the sink's wait is skipped (no sink runs on this database).
 */
import { createClient } from "@clickhouse/client";
import { Kafka, logLevel } from "kafkajs";
import pino from "pino";
import { quoteIdent } from "../../schemas/clickhouse/sql";
import { setupConfig } from "../../deploy/setup/config";
import { clientSql } from "../../schemas/clickhouse/client";
import { migrate } from "../../deploy/setup/migrate";
import { runPrivacyRequest } from "../../deploy/commands/privacy";
import { ensureTopics } from "../../deploy/setup/topics";
import { insertSql, plan } from "./query-data";

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const DATABASE = "bench_privacy";

async function main(): Promise<void> {
  const config = setupConfig({ ...process.env, CLICKHOUSE_DATABASE: DATABASE, KAFKA_SUPPRESSIONS_TOPIC: "bench-privacy-suppressions" });
  const ch = config.clickhouse;
  const client = createClient({ url: ch.url, username: ch.username, password: ch.password, request_timeout: 600_000 });
  const sql = clientSql(client);
  const kafka = new Kafka({ clientId: "bench-privacy", brokers: config.kafka.brokers, logLevel: logLevel.NOTHING });
  await ensureTopics(kafka, config.kafka, config);
  await sql.command(`DROP DATABASE IF EXISTS ${quoteIdent(DATABASE)}`);
  await migrate(sql, ch);
  const p = plan(ROWS);
  const loadStarted = Date.now();
  for (let from = 0; from < ROWS; from += p.block) await sql.command(insertSql(DATABASE, p, from, Math.min(p.block, ROWS - from)));
  const [stats] = await sql.rows<{ rows: string; users: string; mine: string }>(
    `SELECT count() AS rows, uniqExact(user_id) AS users, countIf(user_id = '42') AS mine FROM ${quoteIdent(DATABASE)}.events`,
  );
  console.log(
    `privacy-delete: ${stats!.rows} events of ${stats!.users} users loaded in ${((Date.now() - loadStarted) / 1000).toFixed(1)} s; ` +
      `user 42 has ${stats!.mine} events as userId (ClickHouse 18.16)`,
  );
  const report = await runPrivacyRequest(
    sql,
    kafka,
    config,
    { action: "delete", workspaceId: "ws1", userId: "42", suppress: false, requestedBy: "bench" },
    pino({ level: "warn" }),
    { sinkWaitMs: 0, mutationWaitMs: 600_000 },
  );
  console.log(`rows removed: ${report.removed.map((r) => `${r.table} ${r.rows}`).join(", ")}; ids covered ${report.ids.length}`);
  console.log(`users delete took ${report.seconds.toFixed(2)} s`);
  await sql.command(`DROP DATABASE IF EXISTS ${quoteIdent(DATABASE)}`);
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
