/**
 * Applies the ClickHouse model (schemas/clickhouse.ts), idempotently: tables and columns are
 * `IF NOT EXISTS`, views are replaced, so running it at every start is safe. Throws if
 * ClickHouse is unreachable or refuses a statement.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import { addColumnsDdl, columnsQuery, dialectFor, tableDdl, viewsDdl, type Dialect } from "../schemas/clickhouse";
import type { ClickHouseConfig } from "../schemas/config";

/** The server's version and the DDL dialect chosen for it. */
export interface MigrationResult {
  version: string;
  dialect: Dialect;
}

/** Creates the database, the events table (adding columns it lacks) and the analyst views. */
export async function migrate(client: ClickHouseClient, config: ClickHouseConfig): Promise<MigrationResult> {
  const version = await serverVersion(client);
  const dialect = dialectFor(version);
  const { database, table } = config;
  for (const query of tableDdl(dialect, database, table)) await client.command({ query });
  const result = await client.query({ query: columnsQuery(database, table), format: "JSONEachRow" });
  const existing = new Set((await result.json<{ name: string }>()).map((c) => c.name));
  for (const query of addColumnsDdl(dialect, database, table, existing)) await client.command({ query });
  for (const query of viewsDdl(dialect, database, table)) await client.command({ query });
  return { version, dialect };
}

/** `SELECT version()`, e.g. `18.16.1` or `24.8.4.13`. */
export async function serverVersion(client: ClickHouseClient): Promise<string> {
  const result = await client.query({ query: "SELECT version() AS version", format: "JSONEachRow" });
  const rows = await result.json<{ version: string }>();
  return rows[0]?.version ?? "";
}
