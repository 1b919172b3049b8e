/**
 * The tables beside events and the analyst model: `rejected_messages` (what the ingest refused),
 * `privacy_requests` (the audit of deletions and suppressions), `schema_migrations` (setup's
 * ledger), and the names setup reserves. An object is only replaced when
 * deploy/setup/ownership.ts found it to be ours.
 */
import { Dialect, SHARDING_KEYS, TYPES, distributedDdl, engine, onCluster, quoteIdent, quoteString, storageName, ttlDdl } from "./sql";
import { IDENTITIES_MV, IDENTITIES_TABLE, USERS_MV, USERS_TABLE, aggregateRetentionTtl, viewNames } from "./analyst";
import { CATALOG_MV, CATALOG_TABLE, EVENT_CATALOG_VIEW, PROPERTY_CATALOG_VIEW } from "./catalog";
import { DELIVERY_FAILURES_TABLE } from "./deliveries";
import { AUDIT_TABLE } from "./audit";

/** Steps of setup that ran to the end (backfills), so a crashed one is run again. */
export const MIGRATIONS_TABLE = "schema_migrations";

/** The table of items the ingest refused, kept for operators and analysts. */
export const REJECTED_TABLE = "rejected_messages";

/**
 * `CREATE TABLE IF NOT EXISTS` for `rejected_messages`; idempotent. `rejection_id` is the hex
 * SHA-256 of workspaceId + raw, so a retried refusal shares the ORDER BY key and collapses under
 * FINAL; no PARTITION BY from receive time: ReplacingMergeTree only merges within a partition.
 * `message_id` is '' when the item had no usable messageId, `type` '' when it was not a string;
 * `reasons` holds "path: expected" entries, `raw` the item's JSON text as received. With
 * `retentionDays` on current ClickHouse, rejectedRetentionTtl (on 18.16 the sink deletes instead:
 * sink/upkeep/retention.ts). On a cluster, `rejected_messages_local` and the Distributed
 * `rejected_messages` over it.
 */
export function rejectedTableDdl(dialect: Dialect, database: string, cluster?: string, retentionDays?: number): string[] {
  const t = TYPES[dialect];
  const local = storageName(REJECTED_TABLE, cluster);
  const storage = `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  workspace_id ${t.lowString},
  received_at ${t.time},
  rejection_id String,
  message_id String,
  type ${t.lowString},
  reasons Array(String),
  raw String
)
ENGINE = ${engine("ReplacingMergeTree", "received_at", database, local, cluster)}
ORDER BY (workspace_id, rejection_id)${dialect === "current" && retentionDays !== undefined ? `\n${rejectedRetentionTtl(retentionDays)}` : ""}`;
  return cluster === undefined ? [storage] : [storage, distributedDdl(database, REJECTED_TABLE, cluster, SHARDING_KEYS.rejected)];
}

/** The table holding refused items, quoted: `rejected_messages`, or on a cluster `rejected_messages_local` ON CLUSTER. */
function rejectedStorage(database: string, cluster?: string): string {
  return storage(database, REJECTED_TABLE, cluster);
}

/** The table holding `table`'s rows, quoted: `table`, or on a cluster `<table>_local` ON CLUSTER (the target of an ALTER). */
function storage(database: string, table: string, cluster?: string): string {
  return `${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)}`;
}

/**
 * RETENTION_DAYS on refused items (current ClickHouse): a row is kept while its UTC receive day is
 * one of the last N days, as an event by its event_date (events.ts retentionTtl); ClickHouse
 * removes the others in its merges (no partitions here: rows, not parts, expire).
 */
export function rejectedRetentionTtl(days: number): string {
  return `TTL toDate(received_at) + toIntervalDay(${Math.trunc(days)})`;
}

/**
 * Statements that bring an existing `rejected_messages` table's TTL to RETENTION_DAYS on current
 * ClickHouse, given its stored CREATE query (of `_local` on a cluster, altered ON CLUSTER); none on
 * 18.16. A MODIFY TTL removes the expired rows at once (ClickHouse rewrites the table).
 */
export function rejectedRetentionDdl(
  dialect: Dialect,
  database: string,
  createQuery: string,
  retentionDays?: number,
  cluster?: string,
): string[] {
  return currentTtlDdl(dialect, rejectedStorage(database, cluster), createQuery, retentionDays, rejectedRetentionTtl);
}

/** ttlDdl of `target` toward `ttl(retentionDays)`, or toward none without the setting, on current ClickHouse; nothing on 18.16. */
function currentTtlDdl(
  dialect: Dialect,
  target: string,
  createQuery: string,
  retentionDays: number | undefined,
  ttl: (days: number) => string,
): string[] {
  return dialect === "current" ? ttlDdl(target, createQuery, retentionDays === undefined ? undefined : ttl(retentionDays)) : [];
}

/**
 * A table RETENTION_DAYS thins by rows on 18.16 (no TTL there; on current ClickHouse each has a
 * TTL of the same condition): its name and the time of a row it expires by, a column or an
 * expression of one. Aggregate tables expire a stored row by the latest time it holds, so a key
 * seen within the window keeps a row (analyst.ts aggregateRetentionTtl).
 */
export interface ExpiringTable {
  table: string;
  time: string;
}

/** Refused items, by receive time (rejectedRetentionTtl). */
export const REJECTED_EXPIRY: ExpiringTable = { table: REJECTED_TABLE, time: "received_at" };

/**
 * Every table the sink thins on 18.16, refused items first: the aggregates grow a row per distinct
 * user, anonymousId link and catalog shape a writeKey holder sends (issue 46, row 4).
 */
export const EXPIRING_TABLES: readonly ExpiringTable[] = [
  REJECTED_EXPIRY,
  { table: USERS_TABLE, time: "finalizeAggregation(last_seen)" },
  { table: IDENTITIES_TABLE, time: "finalizeAggregation(last_linked_at)" },
  { table: CATALOG_TABLE, time: "finalizeAggregation(last_seen)" },
];

/** The start of expiredWhere, as system.mutations stores it (18.16 keeps the text as sent). */
const expiredBefore = (t: ExpiringTable) => `${t.time} < toDateTime(`;

/**
 * The condition of rows RETENTION_DAYS no longer keeps on 18.16: a time before `firstKeptSeconds`
 * (epoch seconds of the first UTC day kept). ClickHouse stores an ALTER DELETE of it with this
 * text in system.mutations, where recentExpiryDeletionsQuery finds it.
 */
export function expiredWhere(t: ExpiringTable, firstKeptSeconds: number): string {
  return `${expiredBefore(t)}${Math.trunc(firstKeptSeconds)})`;
}

/** How many rows of `t` expiredWhere covers (column `n`; through the Distributed table on a cluster). */
export function expiredCountQuery(database: string, t: ExpiringTable, firstKeptSeconds: number): string {
  return `SELECT count() AS n FROM ${quoteIdent(database)}.${quoteIdent(t.table)} WHERE ${expiredWhere(t, firstKeptSeconds)}`;
}

/**
 * `ALTER TABLE ... DELETE` of the rows of `t` expiredWhere covers (18.16, which has no TTL); on a
 * cluster, of `<table>_local` ON CLUSTER. A mutation: ClickHouse rewrites each part holding such a
 * row, in the background.
 */
export function expiryDeletionDdl(
  database: string,
  firstKeptSeconds: number,
  cluster?: string,
  t: ExpiringTable = REJECTED_EXPIRY,
): string {
  return `ALTER TABLE ${storage(database, t.table, cluster)} DELETE WHERE ${expiredWhere(t, firstKeptSeconds)}`;
}

/** expiryDeletionDdl of refused items. */
export function rejectedExpiryDeletionDdl(database: string, firstKeptSeconds: number, cluster?: string): string {
  return expiryDeletionDdl(database, firstKeptSeconds, cluster, REJECTED_EXPIRY);
}

/**
 * The expiry deletions of `t` (default refused items) on this server (its own replica on a
 * cluster) that are not done or began in the last day (column `n`): while there is one, the sink
 * queues none.
 */
export function recentExpiryDeletionsQuery(database: string, cluster?: string, t: ExpiringTable = REJECTED_EXPIRY): string {
  return `SELECT count() AS n FROM system.mutations
WHERE database = ${quoteString(database)} AND table = ${quoteString(storageName(t.table, cluster))}
  AND startsWith(command, ${quoteString(`DELETE WHERE ${expiredBefore(t)}`)})
  AND (NOT is_done OR create_time > now() - 86400)`;
}

/**
 * Statements that bring an existing aggregate table's TTL (users, identities, catalog_shapes) to
 * RETENTION_DAYS on current ClickHouse, given its stored CREATE query (of `_local` on a cluster,
 * altered ON CLUSTER): aggregateRetentionTtl of `expiresBy`, its max-state column; none on 18.16.
 */
export function aggregateRetentionDdl(
  dialect: Dialect,
  database: string,
  table: string,
  expiresBy: string,
  createQuery: string,
  retentionDays?: number,
  cluster?: string,
): string[] {
  return currentTtlDdl(dialect, storage(database, table, cluster), createQuery, retentionDays, (days) =>
    aggregateRetentionTtl(expiresBy, days),
  );
}

/** The audit table of `users delete` / `suppress` / `unsuppress` (deploy/commands/privacy.ts). */
export const PRIVACY_TABLE = "privacy_requests";

/**
 * `CREATE TABLE IF NOT EXISTS` for `privacy_requests`: one row per request, who ran it (as given
 * on the command line), when it started and finished, the action, the ids it covered (the least
 * that proves it was done: no event data) and the rows removed per table (`tables[i]`,
 * `rows_removed[i]`). On a cluster, `_local` replicated and a Distributed table over it.
 */
export function privacyTableDdl(database: string, cluster?: string): string[] {
  const local = storageName(PRIVACY_TABLE, cluster);
  const storage = `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  request_id String,
  workspace_id String,
  user_id String,
  action String,
  requested_by String,
  requested_at DateTime,
  finished_at DateTime,
  ids Array(String),
  tables Array(String),
  rows_removed Array(UInt64)
)
ENGINE = ${engine("MergeTree", "", database, local, cluster)}
ORDER BY (workspace_id, requested_at, request_id)`;
  return cluster === undefined
    ? [storage]
    : [storage, distributedDdl(database, PRIVACY_TABLE, cluster, "cityHash64(workspace_id, user_id)")];
}

/** Tables that, on a cluster, are Distributed over a `_local` Replicated table. */
export const DISTRIBUTED_TABLES = [
  USERS_TABLE,
  IDENTITIES_TABLE,
  REJECTED_TABLE,
  PRIVACY_TABLE,
  CATALOG_TABLE,
  DELIVERY_FAILURES_TABLE,
  AUDIT_TABLE,
] as const;

/**
 * Names migrate creates beside the events table: views, users, identities, the catalogs, their
 * feeds, rejected_messages, schema_migrations, privacy_requests, delivery_failures, admin_audit; on a cluster also
 * the `_local` tables under the Distributed ones (DISTRIBUTED_TABLES).
 */
export function reservedTableNames(cluster?: string): string[] {
  const locals = cluster === undefined ? [] : DISTRIBUTED_TABLES.map((name) => storageName(name, cluster));
  return [
    ...viewNames(),
    USERS_TABLE,
    IDENTITIES_TABLE,
    USERS_MV,
    IDENTITIES_MV,
    CATALOG_TABLE,
    CATALOG_MV,
    EVENT_CATALOG_VIEW,
    PROPERTY_CATALOG_VIEW,
    REJECTED_TABLE,
    MIGRATIONS_TABLE,
    PRIVACY_TABLE,
    DELIVERY_FAILURES_TABLE,
    AUDIT_TABLE,
    ...locals,
  ];
}

/**
 * The table recording finished setup steps (a backfill is recorded once it completed); on a
 * cluster one replicated copy on every server, so a setup reaching any server sees the steps.
 */
export function migrationsTableDdl(database: string, cluster?: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(MIGRATIONS_TABLE)}${onCluster(cluster)} (
  step String,
  done_at DateTime
)
ENGINE = ${engine("MergeTree", "", database, MIGRATIONS_TABLE, cluster, true)}
ORDER BY step`;
}

/**
 * Why CLICKHOUSE_TABLE cannot be `table`, or undefined when it can: an events table named like a
 * view or `rejected_messages` would be taken for a user's object (or, on 18.16, dropped); on a
 * cluster, neither it nor its `_local` table may be one of the `_local` tables either.
 */
export function tableNameConflict(table: string, cluster?: string): string | undefined {
  const reserved = reservedTableNames(cluster);
  if (!reserved.includes(table) && !reserved.includes(storageName(table, cluster))) return undefined;
  return `CLICKHOUSE_TABLE=${table} is a name setup creates itself (${reserved.join(", ")}); choose another`;
}
