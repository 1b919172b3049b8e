/**
 * The events table's partitions (months of `event_date`): which ones retention drops, how closed
 * ones are merged down on current ClickHouse, and how many one insert may touch.
 */
import { Dialect, onCluster, quoteIdent, quoteString, storageName } from "./sql";

/**
 * How long a partition of events must receive no new part before current ClickHouse merges it
 * down (a closed month once its late events stop), s. Reads with FINAL merge overlapping parts
 * row by row (2.2 s at 20M events when every month held several; 0.11 s once each was one part,
 * docs/PERFORMANCE.md): a closed month in one part costs FINAL nothing. The cost: a month that
 * receives a late event is rewritten once more a day later.
 */
export const CLOSED_PARTITION_AGE_SECONDS = 86_400;

/** Which of the merge-tree settings closedPartitionMergeDdl may use the server has (column `name`; current ClickHouse). */
export const FORCE_MERGE_SETTINGS_QUERY =
  "SELECT name FROM system.merge_tree_settings WHERE name IN ('min_partition_age_to_force_merge_seconds', 'min_age_to_force_merge_on_partition_only')";

/**
 * The statement that makes current ClickHouse merge closed events partitions by itself
 * (CLOSED_PARTITION_AGE_SECONDS), given the server's answer to FORCE_MERGE_SETTINGS_QUERY and
 * the table's stored CREATE query: `min_partition_age_to_force_merge_seconds` where the server
 * has it (a partition too big for one merge is merged in rounds), else
 * `min_age_to_force_merge_seconds` with `min_age_to_force_merge_on_partition_only` (ClickHouse
 * 22.10+); none when the table already names either setting (an operator's value, 0 for off,
 * stays), on 18.16, or on a server with neither.
 */
export function closedPartitionMergeDdl(
  dialect: Dialect,
  database: string,
  table: string,
  createQuery: string,
  serverSettings: ReadonlySet<string>,
  cluster?: string,
): string[] {
  if (dialect !== "current" || /\bmin_(partition_)?age_to_force_merge_seconds\b/.test(createQuery)) return [];
  const name = `${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)}`;
  if (serverSettings.has("min_partition_age_to_force_merge_seconds"))
    return [`ALTER TABLE ${name} MODIFY SETTING min_partition_age_to_force_merge_seconds = ${CLOSED_PARTITION_AGE_SECONDS}`];
  if (serverSettings.has("min_age_to_force_merge_on_partition_only"))
    return [
      `ALTER TABLE ${name} MODIFY SETTING min_age_to_force_merge_seconds = ${CLOSED_PARTITION_AGE_SECONDS}, min_age_to_force_merge_on_partition_only = 1`,
    ];
  return [];
}

/**
 * The partitions (YYYYMM ids of `toYYYYMM(event_date)`) that retention drops: those whose every
 * day is past the last `retentionDays` days (today and the days before it), as the TTL
 * `event_date + N days` expires them, so no row that should be kept is in one. `today` is a UTC
 * date, YYYY-MM-DD. Pure. A partly expired month stays whole until its last day expires.
 */
export function partitionsToDrop(partitions: readonly string[], today: string, retentionDays: number): string[] {
  const firstKept = Date.parse(`${today}T00:00:00Z`) - (retentionDays - 1) * 86_400_000;
  return partitions.filter((id) => {
    if (!/^\d{6}$/.test(id)) return false;
    const year = Number(id.slice(0, 4));
    const month = Number(id.slice(4, 6));
    if (month < 1 || month > 12) return false;
    const firstOfNext = Date.UTC(year, month, 1); // month is 1-based, so this is the next month
    return firstOfNext <= firstKept;
  });
}

/** The active partitions of the events table (on a cluster, of `<table>_local` on every shard), for partitionsToDrop. */
export function partitionsQuery(database: string, table: string, cluster?: string): string {
  const parts = cluster === undefined ? "system.parts" : `cluster(${quoteString(cluster)}, system, parts)`;
  return `SELECT DISTINCT partition_id AS id FROM ${parts}
WHERE database = ${quoteString(database)} AND table = ${quoteString(storageName(table, cluster))} AND active ORDER BY id`;
}

/**
 * `ALTER TABLE ... DROP PARTITION` for one partition id (YYYYMM, the value of toYYYYMM); on a
 * cluster, of `<table>_local` ON CLUSTER (every shard). Throws on another shape.
 */
export function dropPartitionDdl(database: string, table: string, id: string, cluster?: string): string {
  if (!/^\d{6}$/.test(id)) throw new Error(`not a month partition id: ${id}`);
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
