/**
 * The ClickHouse model: DDL for the `events` table in two dialects, chosen by server version at
 * migration time. ReplacingMergeTree collapses rows sharing the ORDER BY key
 * (workspace_id, message_id) within a partition, so PARTITION BY must be equal for every retry of
 * a message: no partitioning by receive time or by a timestamp that defaults to it.
 * Reads that must be exact use FINAL.
 */

/** Which DDL a server gets. `legacy` is ClickHouse < 20 (no DateTime64; the 18.16 of Debian 12). */
export type Dialect = "current" | "legacy";

/** ClickHouse gained DateTime64 and LowCardinality by default in 20.x. */
export function dialectFor(version: string): Dialect {
  const major = Number.parseInt(version.split(".")[0] ?? "", 10);
  return Number.isFinite(major) && major >= 20 ? "current" : "legacy";
}

/** Column types per dialect. */
const TYPES: Record<Dialect, { time: string; lowString: string }> = {
  current: { time: "DateTime64(3, 'UTC')", lowString: "LowCardinality(String)" },
  legacy: { time: "DateTime", lowString: "String" },
};

/** `CREATE TABLE IF NOT EXISTS` for the events table; idempotent. */
export function eventsTableDdl(dialect: Dialect, database: string, table: string): string {
  const t = TYPES[dialect];
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(table)} (
  workspace_id ${t.lowString},
  message_id String,
  type ${t.lowString},
  event String,
  name String,
  user_id String,
  anonymous_id String,
  group_id String,
  previous_id String,
  timestamp ${t.time},
  sent_at Nullable(${t.time}),
  received_at ${t.time},
  properties String,
  traits String,
  context String
)
ENGINE = ReplacingMergeTree(received_at)
ORDER BY (workspace_id, message_id)`;
}

/** Backquotes an identifier (database, table) for ClickHouse SQL. */
export function quoteIdent(name: string): string {
  return "`" + name.replace(/\\/g, "\\\\").replace(/`/g, "\\`") + "`";
}
