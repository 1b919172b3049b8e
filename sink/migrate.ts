/**
 * Applies the ClickHouse model (schemas/clickhouse.ts), idempotently: tables and columns are
 * `IF NOT EXISTS`, our views are replaced, so running it at every start is safe. Throws if
 * ClickHouse is unreachable or refuses a statement, and throws before any DDL when an object
 * bearing one of our names is not ours (schemas/ownership.ts): it then changes nothing.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import {
  addColumnsDdl,
  columnsQuery,
  dialectFor,
  rejectedTableDdl,
  tableDdl,
  tableNameConflict,
  viewsDdl,
  type Dialect,
} from "../schemas/clickhouse";
import type { ClickHouseConfig } from "../schemas/config";
import { classifyExisting, conflictMessage, existingObjectsQuery, type TableRow } from "../schemas/ownership";

/** The server's version and the DDL dialect chosen for it. */
export interface MigrationResult {
  version: string;
  dialect: Dialect;
}

/**
 * Creates the database, the events table (adding columns it lacks), `rejected_messages` and the
 * analyst views. Checks every reserved name first and refuses, naming all conflicts, so a user's
 * own `users` table is never dropped (issue: setup never drops or replaces what it did not create).
 */
export async function migrate(client: ClickHouseClient, config: ClickHouseConfig): Promise<MigrationResult> {
  const { database, table } = config;
  const reserved = tableNameConflict(table);
  if (reserved) throw new Error(reserved);
  const version = await serverVersion(client);
  const dialect = dialectFor(version);
  const { ours, conflicts } = classifyExisting(await rows<TableRow>(client, existingObjectsQuery(database)), database, table);
  if (conflicts.length > 0) throw new Error(conflictMessage(conflicts));
  for (const query of tableDdl(dialect, database, table)) await client.command({ query });
  const existing = new Set((await rows<{ name: string }>(client, columnsQuery(database, table))).map((c) => c.name));
  for (const query of addColumnsDdl(dialect, database, table, existing)) await client.command({ query });
  await client.command({ query: rejectedTableDdl(dialect, database) });
  for (const query of viewsDdl(dialect, database, table, ours)) await client.command({ query });
  return { version, dialect };
}

/** `SELECT version()`, e.g. `18.16.1` or `24.8.4.13`. */
export async function serverVersion(client: ClickHouseClient): Promise<string> {
  const [row] = await rows<{ version: string }>(client, "SELECT version() AS version");
  return row?.version ?? "";
}

/** The rows of a query, as objects. */
async function rows<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  const result = await client.query({ query, format: "JSONEachRow" });
  return result.json<T>();
}
