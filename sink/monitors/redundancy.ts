/**
 * How many copies the data has now, read by the sink beside its lag: each partition's replicas
 * and in-sync replicas of the topics it uses (Kafka's metadata), and, on a ClickHouse cluster,
 * each shard's replicas of our tables (system.replicas of one server per shard). A copy lost is
 * silent until a second failure refuses writes: these gauges let the alerts
 * (deploy/k8s/monitoring/prometheusrule.yaml) say so first, with no exporter beside the
 * brokers or the servers. Read every few seconds; a failed read leaves the last values.
 */
import type { Admin } from "kafkajs";
import type { Sql } from "../../schemas/clickhouse/client";
import { quoteString } from "../../schemas/clickhouse/sql";
import type { RedundancyGauges } from "../metrics";

/** One partition's copies, from kafkajs's topic metadata. */
export interface PartitionCopies {
  topic: string;
  partition: number;
  replicas: number;
  inSync: number;
}

/** The copies of every partition of kafkajs's `fetchTopicMetadata` answer; a partition without a leader has none in sync. */
export function partitionCopies(metadata: {
  topics: { name: string; partitions: { partitionId: number; leader: number; replicas: number[]; isr: number[] }[] }[];
}): PartitionCopies[] {
  return metadata.topics.flatMap((t) =>
    t.partitions.map((p) => ({
      topic: t.name,
      partition: p.partitionId,
      replicas: p.replicas.length,
      inSync: p.leader < 0 ? 0 : p.isr.length,
    })),
  );
}

/** Reads the partitions of `topics` and sets the Kafka gauges. Throws what kafkajs throws. */
export async function readKafkaCopies(admin: Admin, topics: string[], gauges: RedundancyGauges): Promise<void> {
  for (const c of partitionCopies(await admin.fetchTopicMetadata({ topics }))) {
    const labels = { topic: c.topic, partition: String(c.partition) };
    gauges.kafkaReplicas.set(labels, c.replicas);
    gauges.kafkaInSync.set(labels, c.inSync);
  }
}

/**
 * The query of one server per shard's view of our replicated tables: `cluster()` reads
 * system.replicas on one live replica of each shard (18.16 and current); `total_replicas` and
 * `active_replicas` are that shard's, from ZooKeeper, so a replica that is down shows there. A
 * table is named by its ZooKeeper path (`/clickhouse/tables/<shard>/<db>/<table>`: one per shard
 * and table), the answering replica by its name: host names need not differ between servers.
 */
export function replicasQuery(database: string, cluster: string): string {
  return `SELECT ${REPLICA_COLUMNS} FROM cluster(${quoteString(cluster)}, system, replicas) WHERE database = ${quoteString(database)}`;
}

/** What replicasQuery reads of system.replicas (the same columns on 18.16 and current ClickHouse). */
export const REPLICA_COLUMNS =
  "zookeeper_path AS path, replica_name AS replica, toUInt8(is_readonly) AS readonly, toUInt32(total_replicas) AS total, toUInt32(active_replicas) AS active";

/** A row of replicasQuery. */
interface ReplicaRow {
  path: string;
  replica: string;
  readonly: number | string;
  total: number | string;
  active: number | string;
}

/** Reads replicasQuery and sets the ClickHouse gauges. Nothing on one server. Throws ClickHouse's errors. */
export async function readClickHouseCopies(
  sql: Sql,
  database: string,
  cluster: string | undefined,
  gauges: RedundancyGauges,
): Promise<void> {
  if (cluster === undefined) return;
  for (const row of await sql.rows<ReplicaRow>(replicasQuery(database, cluster))) {
    const labels = { path: row.path, replica: row.replica };
    gauges.clickhouseReplicas.set(labels, Number(row.total));
    gauges.clickhouseActive.set(labels, Number(row.active));
    gauges.clickhouseReadonly.set(labels, Number(row.readonly));
  }
}
