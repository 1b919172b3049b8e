/**
 * Waiting for a mutation (ALTER ... DELETE, MATERIALIZE COLUMN) to be applied: on one server,
 * by its system.mutations; on a cluster, on every replica of every shard. A server's
 * system.mutations shows only its own replica, and 18.16 has no clusterAllReplicas, so on a
 * cluster the replicas are read from ZooKeeper through any one server: each shard's mutations are
 * znodes `<zookeeper_path>/mutations/<n>`, and a replica has applied every mutation up to the
 * znode named in its `<zookeeper_path>/replicas/<replica>/mutation_pointer` (ReplicatedMergeTree
 * moves it when a mutation finishes on that replica; same layout on 18.16 and current).
 */
import { countOf, type Sql } from "./client";
import { quoteString } from "./sql";

/** A shard's ZooKeeper path and the newest mutation znode there when the wait began. */
interface ShardMutation {
  path: string;
  newest: string;
}

/** The children of a ZooKeeper node, with their values (system.zookeeper needs one exact path). */
const children = (sql: Sql, path: string) =>
  sql.rows<{ name: string; value: string }>(`SELECT name, value FROM system.zookeeper WHERE path = ${quoteString(path)}`);

/**
 * What is still to do of the mutations `table` has now: on one server, the count of its
 * system.mutations not done; on `cluster`, the replicas (`<shard path>/replicas/<name>`) whose
 * mutation_pointer is below their shard's newest mutation. Call it after the ALTER returned (ON
 * CLUSTER returns once every shard has the mutation). Throws on ClickHouse failures.
 */
export async function mutationWaiter(sql: Sql, database: string, table: string, cluster?: string): Promise<() => Promise<string[]>> {
  if (cluster === undefined) {
    const pending = `SELECT count() AS n FROM system.mutations
WHERE database = ${quoteString(database)} AND table = ${quoteString(table)} AND NOT is_done`;
    return async () => {
      const n = await countOf(sql, pending);
      return n === 0 ? [] : [`${n} mutation(s) of ${table}`];
    };
  }
  // One replica per shard answers through cluster(): each shard's path, the same on its replicas.
  const paths = await sql.rows<{ path: string }>(`SELECT DISTINCT zookeeper_path AS path
FROM cluster(${quoteString(cluster)}, system, replicas) WHERE database = ${quoteString(database)} AND table = ${quoteString(table)}`);
  const shards: ShardMutation[] = [];
  for (const { path } of paths) {
    const names = (await children(sql, `${path}/mutations`)).map((m) => m.name).sort();
    if (names.length > 0) shards.push({ path, newest: names[names.length - 1]! });
  }
  return async () => {
    const behind: string[] = [];
    for (const { path, newest } of shards)
      for (const { name } of await children(sql, `${path}/replicas`)) {
        const pointer = (await children(sql, `${path}/replicas/${name}`)).find((c) => c.name === "mutation_pointer")?.value ?? "";
        if (pointer < newest) behind.push(`${path}/replicas/${name}`);
      }
    return behind;
  };
}
