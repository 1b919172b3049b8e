/**
 * The tables beside events and the analyst model: `rejected_messages` (what the ingest refused),
 * `privacy_requests` (the audit of deletions and suppressions), `schema_migrations` (setup's
 * ledger), and the names setup reserves. An object is only replaced when
 * deploy/setup/ownership.ts found it to be ours.
 */
import { Dialect, SHARDING_KEYS, TYPES, distributedDdl, engine, onCluster, quoteIdent, quoteString, storageName, ttlDdl } from "./sql";
import { IDENTITIES_MV, IDENTITIES_TABLE, USERS_MV, USERS_TABLE, viewNames } from "./analyst";
import { CATALOG_MV, CATALOG_TABLE, EVENT_CATALOG_VIEW, PROPERTY_CATALOG_VIEW } from "./catalog";

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
 * sink/retention.ts). On a cluster, `rejected_messages_local` and the Distributed
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
  return `${quoteIdent(database)}.${quoteIdent(storageName(REJECTED_TABLE, cluster))}${onCluster(cluster)}`;
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
  if (dialect !== "current") return [];
  return ttlDdl(
    rejectedStorage(database, cluster),
    createQuery,
    retentionDays === undefined ? undefined : rejectedRetentionTtl(retentionDays),
  );
}

/** The start of rejectedExpiredWhere, as system.mutations stores it. */
const EXPIRED_BEFORE = "received_at < toDateTime(";

/**
 * The receive-time condition of refused items RETENTION_DAYS no longer keeps on 18.16: received
 * before `firstKeptSeconds` (epoch seconds of the first UTC day kept). ClickHouse stores an ALTER
 * DELETE of it with this text in system.mutations, where recentExpiryDeletionsQuery finds it.
 */
export function rejectedExpiredWhere(firstKeptSeconds: number): string {
  return `${EXPIRED_BEFORE}${Math.trunc(firstKeptSeconds)})`;
}

/** How many refused items rejectedExpiredWhere covers (column `n`; through the Distributed table on a cluster). */
export function rejectedExpiredCountQuery(database: string, firstKeptSeconds: number): string {
  return `SELECT count() AS n FROM ${quoteIdent(database)}.${quoteIdent(REJECTED_TABLE)} WHERE ${rejectedExpiredWhere(firstKeptSeconds)}`;
}

/**
 * `ALTER TABLE ... DELETE` of the refused items rejectedExpiredWhere covers (18.16, which has no
 * TTL); on a cluster, of `rejected_messages_local` ON CLUSTER. A mutation: ClickHouse rewrites
 * each part holding such a row, in the background.
 */
export function rejectedExpiryDeletionDdl(database: string, firstKeptSeconds: number, cluster?: string): string {
  return `ALTER TABLE ${rejectedStorage(database, cluster)} DELETE WHERE ${rejectedExpiredWhere(firstKeptSeconds)}`;
}

/**
 * The expiry deletions of `rejected_messages` on this server (its own replica on a cluster) that
 * are not done or began in the last day (column `n`): while there is one, the sink queues none.
 */
export function recentExpiryDeletionsQuery(database: string, cluster?: string): string {
  return `SELECT count() AS n FROM system.mutations
WHERE database = ${quoteString(database)} AND table = ${quoteString(storageName(REJECTED_TABLE, cluster))}
  AND startsWith(command, ${quoteString(`DELETE WHERE ${EXPIRED_BEFORE}`)})
  AND (NOT is_done OR create_time > now() - 86400)`;
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
export const DISTRIBUTED_TABLES = [USERS_TABLE, IDENTITIES_TABLE, REJECTED_TABLE, PRIVACY_TABLE, CATALOG_TABLE] as const;

/**
 * Names migrate creates beside the events table: views, users, identities, the catalogs, their
 * feeds, rejected_messages, schema_migrations, privacy_requests; on a cluster also the `_local` tables
 * under users, identities, rejected_messages and privacy_requests.
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
