/**
 * The sink's hourly steps on stored rows. RETENTION_DAYS on 18.16 (no TTL there): each events
 * partition wholly older than the retention is dropped, and the rows of refused items, users,
 * identities and catalog shapes whose time is before the first day kept are deleted (at most once
 * a day per table); `npm run cli -- retention` runs the same once
 * (current ClickHouse applies the TTLs setup sets instead). On both engines: a closed month is
 * merged into one part (closedMonthToMerge). Throws if ClickHouse is unreachable or refuses.
 */
import { type ClickHouseConfig } from "../../schemas/config";
import {
  closedMonthToMerge,
  firstKeptDay,
  clusterMergeSupported,
  dropPartitionDdl,
  mergeMonthDdl,
  monthPartsQuery,
  partitionsQuery,
  partitionsToDrop,
  type MonthParts,
} from "../../schemas/clickhouse/partitions";
import { countOf, serverVersion, type Sql } from "../../schemas/clickhouse/client";
import { dialectFor } from "../../schemas/clickhouse/sql";
import {
  EXPIRING_TABLES,
  REJECTED_EXPIRY,
  expiredCountQuery,
  expiryDeletionDdl,
  recentExpiryDeletionsQuery,
  type ExpiringTable,
} from "../../schemas/clickhouse/tables";

/**
 * Drops the events table's partitions (months) that lie wholly before today - retentionDays;
 * returns their ids. The scheduled retention step on 18.16, which has no TTL (current
 * ClickHouse also has the TTL). `today` is a UTC date, YYYY-MM-DD. Throws on ClickHouse errors.
 */
export async function dropExpiredPartitions(sql: Sql, config: ClickHouseConfig, today: string): Promise<string[]> {
  if (config.retentionDays === undefined) return [];
  // On a cluster, the partitions of every shard (one replica of each answers): a month with a
  // few rows may be on one shard only.
  const { database, table, cluster } = config;
  const ids = (await sql.rows<{ id: string }>(partitionsQuery(database, table, cluster))).map((r) => r.id);
  const expired = partitionsToDrop(ids, today, config.retentionDays);
  for (const id of expired) await sql.command(dropPartitionDdl(database, table, id, cluster));
  return expired;
}

/**
 * RETENTION_DAYS on one table of EXPIRING_TABLES on 18.16, which has no TTL: queues one ALTER ...
 * DELETE of its rows whose time is before the first day kept (firstKeptDay), when there are any
 * and no such deletion of that table on this server is under way or began in the last day. A
 * deletion is a mutation that rewrites every part holding an expired row (with no partitions,
 * most of the table), so once a day bounds that work to the table's size a day; every sink replica
 * may call it. Returns how many rows the queued deletion covers, 0 when none was queued. Nothing on
 * current ClickHouse (setup's TTLs: tables.ts rejectedRetentionTtl, analyst.ts
 * aggregateRetentionTtl). `today` is a UTC date, YYYY-MM-DD. Throws on ClickHouse errors.
 */
export async function deleteExpired(
  sql: Sql,
  config: ClickHouseConfig,
  today: string,
  expiring: ExpiringTable = REJECTED_EXPIRY,
): Promise<number> {
  if (config.retentionDays === undefined || dialectFor(await serverVersion(sql)) !== "legacy") return 0;
  const { database, cluster } = config;
  const firstKept = firstKeptDay(today, config.retentionDays) / 1000;
  // Nothing is older than 1970 (18.16 would read a negative time as one past 2100, and delete all).
  if (firstKept <= 0) return 0;
  const expired = await countOf(sql, expiredCountQuery(database, expiring, firstKept));
  if (expired === 0 || (await countOf(sql, recentExpiryDeletionsQuery(database, cluster, expiring))) > 0) return 0;
  await sql.command(expiryDeletionDdl(database, firstKept, cluster, expiring));
  return expired;
}

/** deleteExpired of refused items (`rejected_messages`). */
export function deleteExpiredRejected(sql: Sql, config: ClickHouseConfig, today: string): Promise<number> {
  return deleteExpired(sql, config, today, REJECTED_EXPIRY);
}

/**
 * deleteExpired of every table of EXPIRING_TABLES (refused items, users, identities,
 * catalog_shapes), one after another; returns the rows each queued deletion covers, by table (0:
 * none queued). Throws on the first ClickHouse error.
 */
export async function deleteAllExpired(sql: Sql, config: ClickHouseConfig, today: string): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const expiring of EXPIRING_TABLES) deleted[expiring.table] = await deleteExpired(sql, config, today, expiring);
  return deleted;
}

/**
 * What one retention step did: events partitions dropped (YYYYMM ids), and the rows each 18.16
 * deletion covers, by table (`rejectedDeleted` the refused items' of them, as earlier releases
 * reported it).
 */
export interface RetentionResult {
  dropped: string[];
  rejectedDeleted: number;
  rowsDeleted: Record<string, number>;
}

/**
 * One retention step: dropExpiredPartitions, then deleteAllExpired. `today` is a UTC date,
 * YYYY-MM-DD. Throws on ClickHouse errors (the first refused step ends it).
 */
export async function applyRetention(sql: Sql, config: ClickHouseConfig, today: string): Promise<RetentionResult> {
  const dropped = await dropExpiredPartitions(sql, config, today);
  const rowsDeleted = await deleteAllExpired(sql, config, today);
  return { dropped, rejectedDeleted: rowsDeleted[REJECTED_EXPIRY.table] ?? 0, rowsDeleted };
}

/**
 * Merges the closed month closedMonthToMerge picks, if any, leaving out `skip` (months this sink
 * tried lately: an OPTIMIZE that could not merge, e.g. short of disk, ends without an error, and
 * the month would be picked every time), into one part, so FINAL reads it without merging rows;
 * returns its id (YYYYMM) or undefined. One month a call: the OPTIMIZE waits for the merge on one
 * server (on a replicated cluster the sink's client only queues it). `thisMonth` is the current
 * UTC month, YYYYMM; `recentSeconds` what counts as a recent part (CLOSED_PARTITION_AGE_SECONDS
 * unless a test or benchmark says). On a cluster of ClickHouse before 22.4 (18.16) it does nothing
 * (clusterMergeSupported): there an operator merges by hand. Throws on ClickHouse errors (a user
 * without OPTIMIZE).
 */
export async function mergeClosedMonth(
  sql: Sql,
  config: ClickHouseConfig,
  thisMonth: string,
  skip?: ReadonlySet<string>,
  recentSeconds?: number,
): Promise<string | undefined> {
  const { database, table, cluster } = config;
  if (cluster !== undefined && !clusterMergeSupported(await serverVersion(sql))) return undefined;
  const id = closedMonthToMerge(await sql.rows<MonthParts>(monthPartsQuery(database, table, cluster, recentSeconds)), thisMonth, skip);
  if (id === undefined) return undefined;
  await sql.command(mergeMonthDdl(database, table, id, cluster));
  return id;
}
