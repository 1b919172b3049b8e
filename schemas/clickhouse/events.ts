/**
 * The events table: the complete record, laid out for time-window queries: PARTITION BY month of
 * `event_date`, ORDER BY (workspace_id, event_date, type, message_id). ReplacingMergeTree only
 * collapses rows with equal sorting keys in the same partition, so `event_date` must be equal for
 * every retry of a message: it is the UTC day of the client's own `timestamp` (kept by SDKs
 * across retries, whatever sentAt each attempt carries), and of receivedAt only for a message
 * sent without one (EVENT_DATE). Also its retention TTL, the copy between layouts, and the columns
 * added after the first release; partitions.ts has what concerns whole partitions.
 */
import { EVENT_ROW_COLUMNS } from "../row";
import { Dialect, TYPES, alterDistributedDdl, distributedDdl, engine, onCluster, quoteIdent, storageName, ttlDdl } from "./sql";

/** Columns added after the first release, with their types; migrations add them to old tables. */
const ADDED_COLUMNS = (d: Dialect): [name: string, type: string, after: string][] => [
  ["original_timestamp", `Nullable(${TYPES[d].time})`, "timestamp"],
  ["category", "String", "name"],
  ["extra", "String", "context"],
  ...ENRICHMENT_COLUMNS(d),
  ["catalog_keys", "Array(String)", "country"],
  ["catalog_shape", "UInt64", "catalog_keys"],
  ["violations", "Array(String)", "catalog_shape"],
];

/** The enrichment columns (ingest/records/enrich.ts), in order, each after the previous one. */
const ENRICHMENT_COLUMNS = (d: Dialect): [name: string, type: string, after: string][] => [
  ["browser", TYPES[d].lowString, "extra"],
  ["browser_version", "String", "browser"],
  ["os", TYPES[d].lowString, "browser_version"],
  ["device_type", TYPES[d].lowString, "os"],
  ["is_bot", "UInt8", "device_type"],
  ["country", TYPES[d].lowString, "is_bot"],
];

/**
 * The events table's columns, in order, with their types (event_date is the sorting day).
 * event_date is MATERIALIZED on one server; on a cluster it is DEFAULT (the same expression), as
 * a Distributed table computes it and sends it on, which 18.16 refuses for a MATERIALIZED column.
 */
function eventColumns(d: Dialect, withEventDate: boolean, cluster?: string): string {
  const t = TYPES[d];
  return `  workspace_id ${t.lowString},
  message_id String,
  type ${t.lowString},
  event ${t.lowString},
  name String,
  category String,
  user_id String,
  anonymous_id String,
  group_id String,
  previous_id String,
  timestamp ${t.time},
  original_timestamp Nullable(${t.time}),
  sent_at Nullable(${t.time}),
  received_at ${t.time},${withEventDate ? `\n  event_date Date ${cluster === undefined ? "MATERIALIZED" : "DEFAULT"} ${EVENT_DATE},` : ""}
  properties String,
  traits String,
  context String,
  extra String,
${ENRICHMENT_COLUMNS(d)
  .map(([name, type]) => `  ${name} ${type},`)
  .join("\n")}
  catalog_keys Array(String),
  catalog_shape UInt64,
  violations Array(String)`;
}

/**
 * The sorting day: the UTC day of the client's timestamp, else of received_at. Computed by the
 * server at every insert (MATERIALIZED), so sinks of any release, and copies from an older
 * table, give a retry the same day: SDKs keep a message's timestamp across retries whatever
 * sentAt each attempt carries, where the skew-corrected `timestamp` moves with the latency.
 */
export const EVENT_DATE = "toDate(ifNull(original_timestamp, received_at), 'UTC')";

/** The events table's sorting key, as system.tables reports it without spaces or quotes. */
export const EVENTS_SORTING_KEY = "workspace_id,event_date,type,message_id";

/** The sorting key of the events table made by releases before the time-ordered layout. */
export const UNPARTITIONED_SORTING_KEY = "workspace_id,message_id";

/**
 * `CREATE TABLE IF NOT EXISTS` for the events table; idempotent. With `retentionDays` on current
 * ClickHouse, a TTL drops whole parts whose rows are all older than that many days
 * (`ttl_only_drop_parts`); 18.16 has no TTL, so there retention is partitions.ts `partitionsToDrop`. On a
 * cluster this is `<table>_local` on every shard; distributedDdl makes `<table>` over it.
 */
export function eventsTableDdl(dialect: Dialect, database: string, table: string, retentionDays?: number, cluster?: string): string {
  const ttl = dialect === "current" && retentionDays !== undefined ? `\n${retentionTtl(retentionDays)}` : "";
  const settings = dialect === "current" ? "\nSETTINGS ttl_only_drop_parts = 1" : "";
  const local = storageName(table, cluster);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
${eventColumns(dialect, true, cluster)}
)
ENGINE = ${engine("ReplacingMergeTree", "received_at", database, local, cluster)}
PARTITION BY toYYYYMM(event_date)
ORDER BY (workspace_id, event_date, type, message_id)${ttl}${settings}`;
}

/**
 * The events table as releases before the time-ordered layout made it: no partitions, ORDER BY
 * (workspace_id, message_id), no event_date. Kept for migration tests and the query benchmark.
 */
export function unpartitionedEventsTableDdl(dialect: Dialect, database: string, table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(table)} (
${eventColumns(dialect, false)}
)
ENGINE = ReplacingMergeTree(received_at)
ORDER BY (workspace_id, message_id)`;
}

/**
 * Sharding keys of the Distributed tables: a hash of what identifies a row, so every copy of
 * one (a retried message, a repeated refusal) is stored on the same shard, where
 * ReplacingMergeTree collapses it. The events key is the messageId alone (as the Kafka key).
 * Users and identities rows are states of aggregates, merged by -Merge across shards, so any
 * shard is right for them; their owner's id keeps one user together on the backfill.
 */
export const EVENTS_SHARDING_KEY = "halfMD5(message_id)";

/** The TTL clause for RETENTION_DAYS (current ClickHouse). */
export function retentionTtl(days: number): string {
  return `TTL event_date + toIntervalDay(${Math.trunc(days)})`;
}

/**
 * Statements that bring an existing events table's TTL to RETENTION_DAYS on current ClickHouse,
 * given its stored CREATE query: MODIFY TTL when the clause differs, REMOVE TTL when retention
 * is unset and the table has one; none on 18.16 (no TTL there). `createQuery` is the stored
 * query of the table holding rows (`<table>_local` on a cluster, altered ON CLUSTER).
 */
export function retentionDdl(
  dialect: Dialect,
  database: string,
  table: string,
  createQuery: string,
  retentionDays?: number,
  cluster?: string,
): string[] {
  if (dialect !== "current") return [];
  const name = `${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)}`;
  const wanted = retentionDays === undefined ? undefined : retentionTtl(retentionDays);
  return ttlDdl(name, createQuery, wanted, [`ALTER TABLE ${name} MODIFY SETTING ttl_only_drop_parts = 1`]);
}

/**
 * `INSERT ... SELECT` copying rows of an events table (either layout; it must have every column
 * the sink writes) into one of the current layout, which computes event_date (EVENT_DATE).
 * Reads `from` FINAL, so rows the old key collapsed (one messageId, two client timestamps, which
 * the new key keeps apart) arrive as the one row a FINAL query saw. `where` narrows the rows.
 */
export function copyEventsSql(database: string, from: string, to: string, where?: string): string {
  const columns = EVENT_ROW_COLUMNS.join(", ");
  return `INSERT INTO ${quoteIdent(database)}.${quoteIdent(to)} (${columns})
SELECT ${columns}
FROM ${quoteIdent(database)}.${quoteIdent(from)} FINAL${where === undefined ? "" : `\nWHERE ${where}`}`;
}

/** The events partition (YYYYMM) of a row of a table with the events columns, as an expression. */
export const EVENT_MONTH = `toYYYYMM(${EVENT_DATE})`;

/** The distinct events partitions (column `month`, YYYYMM) of the rows of `from` matching `where`. */
export function eventMonthsQuery(database: string, from: string, where?: string): string {
  return `SELECT DISTINCT ${EVENT_MONTH} AS month FROM ${quoteIdent(database)}.${quoteIdent(from)}${where === undefined ? "" : ` WHERE ${where}`} ORDER BY month`;
}

/** A condition on the rows whose events partition is one of `months` (YYYYMM numbers). */
export function inEventMonths(months: readonly number[]): string {
  if (!months.every(Number.isInteger)) throw new Error("event months are YYYYMM integers");
  return `${EVENT_MONTH} IN (${months.join(", ")})`;
}

/**
 * `ALTER TABLE ... ADD COLUMN` for the columns a table made by an older release lacks, given the
 * columns it has (18.16 has no `ADD COLUMN IF NOT EXISTS`); on a cluster, to `<table>_local` ON
 * CLUSTER, then the Distributed `<table>` (alterDistributedDdl: made again on 18.16).
 */
export function addColumnsDdl(
  dialect: Dialect,
  database: string,
  table: string,
  existing: ReadonlySet<string>,
  cluster?: string,
): string[] {
  const added = ADDED_COLUMNS(dialect)
    .filter(([name]) => !existing.has(name))
    .map(([name, type, after]) => `ADD COLUMN ${name} ${type} AFTER ${after}`);
  if (cluster === undefined) return added.map((add) => `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(table)} ${add}`);
  if (added.length === 0) return [];
  return [
    ...added.map((add) => `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} ${add}`),
    ...alterDistributedDdl(dialect, database, table, cluster, EVENTS_SHARDING_KEY, added.join(", ")),
  ];
}

/**
 * Columns whose type a later release changed, with the type wanted: `event` became
 * LowCardinality on current ClickHouse (a 30-day property query from 0.29 to 0.20-0.27 s at 20M
 * events, docs/QUERY-PERFORMANCE.md); 18.16 keeps String.
 */
const RETYPED_COLUMNS = (d: Dialect): [name: string, type: string][] => [["event", TYPES[d].lowString]];

/**
 * `ALTER TABLE ... MODIFY COLUMN` for the RETYPED_COLUMNS whose type in `types` (name -> type,
 * as system.columns reports it) is not the one wanted; on a cluster, to `<table>_local` ON
 * CLUSTER, then the Distributed `<table>`. ClickHouse rewrites the column in the background (a
 * mutation); inserts go on meanwhile.
 */
export function retypeColumnsDdl(
  dialect: Dialect,
  database: string,
  table: string,
  types: ReadonlyMap<string, string>,
  cluster?: string,
): string[] {
  const changes = RETYPED_COLUMNS(dialect)
    .filter(([name, type]) => types.has(name) && types.get(name) !== type)
    .map(([name, type]) => `MODIFY COLUMN ${name} ${type}`);
  if (changes.length === 0) return [];
  if (cluster === undefined) return [`ALTER TABLE ${quoteIdent(database)}.${quoteIdent(table)} ${changes.join(", ")}`];
  return [
    `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} ${changes.join(", ")}`,
    ...alterDistributedDdl(dialect, database, table, cluster, EVENTS_SHARDING_KEY, changes.join(", ")),
  ];
}

/**
 * The statements creating the database and the events table (on a cluster, `<table>_local` and
 * the Distributed `<table>` over it); safe to run again.
 */
export function tableDdl(dialect: Dialect, database: string, table: string, retentionDays?: number, cluster?: string): string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${quoteIdent(database)}${onCluster(cluster)}`,
    eventsTableDdl(dialect, database, table, retentionDays, cluster),
    ...(cluster === undefined ? [] : [distributedDdl(database, table, cluster, EVENTS_SHARDING_KEY)]),
  ];
}
