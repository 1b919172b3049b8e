/**
 * RETENTION_DAYS on 18.16 (no TTL there): the sink drops, hourly, each events partition (a month)
 * wholly older than the retention; `npm run cli -- retention` runs the same drop once. Current
 * ClickHouse applies the TTL setup sets instead. Throws if ClickHouse is unreachable.
 */
import { type ClickHouseConfig } from "../schemas/config";
import { partitionsQuery, partitionsToDrop, dropPartitionDdl } from "../schemas/clickhouse/partitions";
import { Sql } from "../schemas/clickhouse/client";

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
