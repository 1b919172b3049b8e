/**
 * Applies the ClickHouse model (schemas/clickhouse.ts), idempotently: every statement is
 * `IF NOT EXISTS`, so running it at every start is safe. Throws if ClickHouse is unreachable.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import { dialectFor, eventsTableDdl, quoteIdent, type Dialect } from "../schemas/clickhouse";
import type { ClickHouseConfig } from "../schemas/config";

/** The server's version and the DDL dialect chosen for it. */
export interface MigrationResult {
  version: string;
  dialect: Dialect;
}

/** Creates the database and the events table if missing. */
export async function migrate(client: ClickHouseClient, config: ClickHouseConfig): Promise<MigrationResult> {
  const version = await serverVersion(client);
  const dialect = dialectFor(version);
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${quoteIdent(config.database)}` });
  await client.command({ query: eventsTableDdl(dialect, config.database, config.table) });
  return { version, dialect };
}

/** `SELECT version()`, e.g. `18.16.1` or `24.8.4.13`. */
export async function serverVersion(client: ClickHouseClient): Promise<string> {
  const result = await client.query({ query: "SELECT version() AS version", format: "JSONEachRow" });
  const rows = await result.json<{ version: string }>();
  return rows[0]?.version ?? "";
}
