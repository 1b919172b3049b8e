/**
 * The events table's partitions (months of `event_date`): which ones retention drops, which closed
 * one the sink merges next, and how many one insert may touch.
 */
import { Dialect, onCluster, quoteIdent, quoteString, storageName } from "./sql";

/** A month partition's id: YYYYMM, the value of toYYYYMM(event_date). */
const MONTH_ID = /^\d{6}$/;

/** The system.parts to read: the server's, or on a cluster one replica's of every shard. */
function partsSource(cluster?: string): string {
  return cluster === undefined ? "system.parts" : `cluster(${quoteString(cluster)}, system, parts)`;
}

/**
 * How recent a part counts as still arriving, for the merging of closed months, s: a closed month
 * (a partition before the current UTC month) is quiet once its parts of the last day hold under
 * QUIET_SHARE of its bytes (closedMonthToMerge).
 */
export const CLOSED_PARTITION_AGE_SECONDS = 86_400;

/**
 * The share of a closed month's bytes its parts of the last CLOSED_PARTITION_AGE_SECONDS may hold
 * for it to count as quiet (0.01): its late events have about stopped. A share, not "no new part":
 * one event a day dated in a month would otherwise keep it from ever being merged.
 */
export const QUIET_SHARE = 0.01;

/**
 * The share of a closed month's bytes its largest part holds once the month counts as merged
 * (0.9). The sink merges a month below it, so a month is merged once after it closes, and late
 * events (small parts) bring it below again only by adding about a ninth of its bytes: what a
 * writeKey can make ClickHouse rewrite stays about ten times what it sends (on a cluster, a month
 * is merged only when no shard holding it is between merged and due, so aiming rows at one shard
 * does not rewrite the others). ClickHouse's own forced merge, setup's choice before, rewrote a
 * month for one late event: one event a day in each closed month rewrote nearly the whole table
 * daily. Small late
 * parts cost current ClickHouse's FINAL little: it merges only the key ranges parts share (a month
 * of 3M rows, FINAL count: 0.066 s in one part, 0.105 s with 10 one-row late parts beside it,
 * 0.390 s in six parts; chdb 26.9, CHANGELOG.md).
 */
export const MERGED_SHARE = 0.9;

/**
 * Per active partition of the events table (per shard on a cluster: one replica of each answers):
 * `id`, `host`, `parts`, `bytes` (on disk), `largest` (bytes of its largest part) and `recent`
 * (bytes of its parts younger than `recentSeconds`, CLOSED_PARTITION_AGE_SECONDS unless a test
 * says), for closedMonthToMerge.
 */
export function monthPartsQuery(database: string, table: string, cluster?: string, recentSeconds = CLOSED_PARTITION_AGE_SECONDS): string {
  return `SELECT partition_id AS id, hostName() AS host, count() AS parts, sum(bytes_on_disk) AS bytes,
  max(bytes_on_disk) AS largest, sumIf(bytes_on_disk, modification_time > now() - ${Math.trunc(recentSeconds)}) AS recent
FROM ${partsSource(cluster)}
WHERE database = ${quoteString(database)} AND table = ${quoteString(storageName(table, cluster))} AND active
GROUP BY host, id ORDER BY id`;
}

/** One row of monthPartsQuery (UInt64 figures come as strings in JSONEachRow). */
export interface MonthParts {
  id: string;
  host: string;
  parts: number | string;
  bytes: number | string;
  largest: number | string;
  recent: number | string;
}

/**
 * The closed month the sink merges next, or undefined: of the months before `thisMonth` (YYYYMM,
 * UTC) and not in `skip`, those due on some shard (more than one part, quiet by QUIET_SHARE,
 * largest part under MERGED_SHARE of the bytes) and due or in one part on every other shard that
 * holds them (a shard whose share is one part does not hold a month back, and is not rewritten:
 * mergeMonthDdl), the newest (the most read). Pure.
 */
export function closedMonthToMerge(
  rows: readonly MonthParts[],
  thisMonth: string,
  skip: ReadonlySet<string> = new Set(),
): string | undefined {
  const due = (r: MonthParts) =>
    Number(r.parts) > 1 && Number(r.recent) < QUIET_SHARE * Number(r.bytes) && Number(r.largest) < MERGED_SHARE * Number(r.bytes);
  const months = new Map<string, { blocked: boolean; due: boolean }>();
  for (const r of rows) {
    if (!MONTH_ID.test(r.id) || r.id >= thisMonth || skip.has(r.id)) continue;
    const month = months.get(r.id) ?? { blocked: false, due: false };
    if (due(r)) month.due = true;
    else if (Number(r.parts) > 1) month.blocked = true;
    months.set(r.id, month);
  }
  return [...months]
    .filter(([, m]) => m.due && !m.blocked)
    .map(([id]) => id)
    .sort()
    .at(-1);
}

/**
 * `OPTIMIZE TABLE ... PARTITION <id> FINAL` for one month (YYYYMM): its parts merged into one; on
 * a cluster of `<table>_local` ON CLUSTER (every shard), skipping a shard whose month is one part
 * already (`optimize_skip_merged_partitions`, current ClickHouse: the sink runs it on a cluster
 * only there, mergeClosedMonth). Throws on another id shape.
 */
export function mergeMonthDdl(database: string, table: string, id: string, cluster?: string): string {
  if (!MONTH_ID.test(id)) throw new Error(`not a month partition id: ${id}`);
  const skip = cluster === undefined ? "" : " SETTINGS optimize_skip_merged_partitions = 1";
  return `OPTIMIZE TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} PARTITION ${id} FINAL${skip}`;
}

/**
 * Whether a server of `version` passes a query's settings on to the other servers of an ON
 * CLUSTER statement (ClickHouse 22.4 and later), so the sink's OPTIMIZE ... ON CLUSTER only queues
 * the merge (`replication_alter_partitions_sync = 0`) instead of holding every server's DDL queue
 * for it. Pure.
 */
export function clusterMergeSupported(version: string): boolean {
  const [major, minor] = version.split(".").map((n) => Number.parseInt(n, 10));
  return major !== undefined && minor !== undefined && (major > 22 || (major === 22 && minor >= 4));
}

/**
 * The statements that turn off the forced merge of closed months that setup of earlier releases
 * set on the events table (its value, 86400, in the table's stored CREATE query): the sink merges
 * closed months now (closedMonthToMerge). Another value is an operator's and stays. None on 18.16.
 */
export function forcedMergeResetDdl(dialect: Dialect, database: string, table: string, createQuery: string, cluster?: string): string[] {
  if (dialect !== "current") return [];
  const name = `${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)}`;
  return ["min_partition_age_to_force_merge_seconds", "min_age_to_force_merge_seconds"]
    .filter((setting) => new RegExp(`\\b${setting} = ${CLOSED_PARTITION_AGE_SECONDS}\\b`).test(createQuery))
    .map((setting) => `ALTER TABLE ${name} MODIFY SETTING ${setting} = 0`);
}

/**
 * The start of the first day RETENTION_DAYS keeps, epoch ms: today (a UTC date, YYYY-MM-DD) and
 * the `retentionDays - 1` days before it are kept, as the TTL `event_date + N days` keeps them.
 */
export function firstKeptDay(today: string, retentionDays: number): number {
  return Date.parse(`${today}T00:00:00Z`) - (retentionDays - 1) * 86_400_000;
}

/**
 * The partitions (YYYYMM ids of `toYYYYMM(event_date)`) that retention drops: those whose every
 * day is past the last `retentionDays` days (today and the days before it), as the TTL
 * `event_date + N days` expires them, so no row that should be kept is in one. `today` is a UTC
 * date, YYYY-MM-DD. Pure. A partly expired month stays whole until its last day expires.
 */
export function partitionsToDrop(partitions: readonly string[], today: string, retentionDays: number): string[] {
  const firstKept = firstKeptDay(today, retentionDays);
  return partitions.filter((id) => {
    if (!MONTH_ID.test(id)) return false;
    const year = Number(id.slice(0, 4));
    const month = Number(id.slice(4, 6));
    if (month < 1 || month > 12) return false;
    const firstOfNext = Date.UTC(year, month, 1); // month is 1-based, so this is the next month
    return firstOfNext <= firstKept;
  });
}

/** The active partitions of the events table (on a cluster, of `<table>_local` on every shard), for partitionsToDrop. */
export function partitionsQuery(database: string, table: string, cluster?: string): string {
  return `SELECT DISTINCT partition_id AS id FROM ${partsSource(cluster)}
WHERE database = ${quoteString(database)} AND table = ${quoteString(storageName(table, cluster))} AND active ORDER BY id`;
}

/**
 * `ALTER TABLE ... DROP PARTITION` for one partition id (YYYYMM, the value of toYYYYMM); on a
 * cluster, of `<table>_local` ON CLUSTER (every shard). Throws on another shape.
 */
export function dropPartitionDdl(database: string, table: string, id: string, cluster?: string): string {
  if (!MONTH_ID.test(id)) throw new Error(`not a month partition id: ${id}`);
  return `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} DROP PARTITION ${id}`;
}

/**
 * The most partitions one INSERT block may touch (current ClickHouse: the setting
 * `max_partitions_per_insert_block`, default 100; an insert over it is refused with code 252).
 * 18.16 has no such setting and took 300 in one insert (measured); the same bound keeps the
 * parts one insert makes there bounded too.
 */
export const DEFAULT_PARTITIONS_PER_INSERT = 100;

/** The server's `max_partitions_per_insert_block` (column `value`; no row on 18.16). */
export const PARTITIONS_PER_INSERT_QUERY = "SELECT value FROM system.settings WHERE name = 'max_partitions_per_insert_block'";

/**
 * The most partitions an insert of ours may touch, given the server's answer to
 * PARTITIONS_PER_INSERT_QUERY: its limit, never more than DEFAULT_PARTITIONS_PER_INSERT; the
 * default when it has none (no row on 18.16, 0 on current ClickHouse).
 */
export function partitionsPerInsert(serverValue: string | undefined): number {
  const limit = Number(serverValue);
  if (serverValue === undefined || !Number.isInteger(limit) || limit <= 0) return DEFAULT_PARTITIONS_PER_INSERT;
  return Math.min(limit, DEFAULT_PARTITIONS_PER_INSERT);
}
