/**
 * ClickHouse SQL shared by every table: the two dialects (chosen by server version at migration
 * time), quoting (18.16 has no query parameters), and what a table gains on a cluster (a
 * Replicated engine on `<name>_local` under a Distributed `<name>`, created ON CLUSTER).
 */
/** Which DDL a server gets. `legacy` is ClickHouse < 20 (no DateTime64; the 18.16 of Debian 12). */
export type Dialect = "current" | "legacy";

/** ClickHouse gained DateTime64 in 20.1 and LowCardinality by default in 19.x. */
export function dialectFor(version: string): Dialect {
  const major = Number.parseInt(version.split(".")[0] ?? "", 10);
  return Number.isFinite(major) && major >= 20 ? "current" : "legacy";
}

/** Column types per dialect. */
export const TYPES: Record<Dialect, { time: string; lowString: string }> = {
  current: { time: "DateTime64(3, 'UTC')", lowString: "LowCardinality(String)" },
  legacy: { time: "DateTime", lowString: "String" },
};

/** What a table's name gains on a cluster for the Replicated table under its Distributed table. */
export const LOCAL_SUFFIX = "_local";

/** The table that holds rows on each server: `name` on one server, `name_local` on a cluster. */
export function storageName(name: string, cluster?: string): string {
  return cluster === undefined ? name : `${name}${LOCAL_SUFFIX}`;
}

/** ` ON CLUSTER <cluster>` on a cluster (the statement then runs on every server), else nothing. */
export function onCluster(cluster?: string): string {
  return cluster === undefined ? "" : ` ON CLUSTER ${quoteIdent(cluster)}`;
}

/**
 * A MergeTree-family engine clause: `ReplacingMergeTree(received_at)` on one server;
 * `ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/<db>/<table>', '{replica}', received_at)`
 * on a cluster, where each server's macros name its shard and replica. `shared` keeps one copy
 * on every server of every shard (the setup steps).
 */
export function engine(family: string, args: string, database: string, table: string, cluster?: string, shared = false): string {
  if (cluster === undefined) return args === "" ? family : `${family}(${args})`;
  const path = quoteString(`/clickhouse/tables/${shared ? "all" : "{shard}"}/${database}/${table}`);
  return `Replicated${family}(${path}, '{replica}'${args === "" ? "" : `, ${args}`})`;
}
/**
 * Sharding keys of the Distributed tables beside events (EVENTS_SHARDING_KEY): a hash of what
 * identifies a row, so every copy of one (a repeated refusal) is stored on the same shard, where
 * ReplacingMergeTree collapses it. Users and identities rows are states of aggregates, merged by
 * -Merge across shards, so any shard is right for them; their owner's id keeps one user together.
 */
export const SHARDING_KEYS = {
  rejected: "cityHash64(workspace_id, rejection_id)",
  users: "cityHash64(workspace_id, user_id)",
  identities: "cityHash64(workspace_id, anonymous_id)",
};

/**
 * `CREATE TABLE IF NOT EXISTS <name> ON CLUSTER ... AS <name>_local ENGINE = Distributed(...)`:
 * the table through which the sink inserts and analysts read every shard of `<name>_local`.
 */
export function distributedDdl(database: string, name: string, cluster: string, shardingKey: string): string {
  const local = storageName(name, cluster);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(name)}${onCluster(cluster)} AS ${quoteIdent(database)}.${quoteIdent(local)}
ENGINE = Distributed(${[cluster, database, local].map(quoteString).join(", ")}, ${shardingKey})`;
}

/**
 * What brings the Distributed table `name` to the columns its `_local` tables have now, after an
 * ALTER of them ON CLUSTER. Current ClickHouse: `alter` (ADD or DROP COLUMN ...) of `name` ON
 * CLUSTER. 18.16 refuses any ALTER ON CLUSTER of a Distributed table whose cluster replicates
 * inside its shards (code 371: its DDL worker checks each ALTERed table against the shard's
 * internal_replication), so there the table is dropped and made again over the `_local` tables,
 * ON CLUSTER (it holds no rows: the sink inserts synchronously). An insert in between fails with
 * UNKNOWN_TABLE (60), which the sink retries. (A RENAME swap would be shorter, but 18.16 keeps a
 * renamed Distributed table's directory under its old name, which then blocks DROP DATABASE.)
 */
export function alterDistributedDdl(
  dialect: Dialect,
  database: string,
  name: string,
  cluster: string,
  shardingKey: string,
  alter: string,
): string[] {
  const table = `${quoteIdent(database)}.${quoteIdent(name)}`;
  if (dialect === "current") return [`ALTER TABLE ${table}${onCluster(cluster)} ${alter}`];
  return [`DROP TABLE IF EXISTS ${table}${onCluster(cluster)}`, distributedDdl(database, name, cluster, shardingKey)];
}

/**
 * The statements that bring a table's TTL to `wanted` (a `TTL ...` clause, or undefined for none)
 * on current ClickHouse (18.16 has no TTL), given its stored CREATE query: none when the clause
 * there is the same (spaces aside), `REMOVE TTL` when none is wanted and the table has one, else
 * `before` (e.g. a MODIFY SETTING the TTL relies on) and `MODIFY TTL`. `target` is the quoted
 * table with its ON CLUSTER. Pure.
 */
export function ttlDdl(target: string, createQuery: string, wanted: string | undefined, before: string[] = []): string[] {
  const current = /\bTTL\s+(.*?)(?:\s+SETTINGS\b|$)/s.exec(createQuery)?.[1]?.trim();
  if (wanted === undefined) return current === undefined ? [] : [`ALTER TABLE ${target} REMOVE TTL`];
  const same = current !== undefined && current.replace(/\s+/g, "") === wanted.replace(/^TTL\s+/, "").replace(/\s+/g, "");
  return same ? [] : [...before, `ALTER TABLE ${target} MODIFY ${wanted}`];
}

/** A query listing the columns of a table (`name` and `type` per row). */
export function columnsQuery(database: string, table: string): string {
  return `SELECT name, type FROM system.columns WHERE database = ${quoteString(database)} AND table = ${quoteString(table)}`;
}

/**
 * A string at a JSON path of a JSON text column. Current ClickHouse follows the path exactly;
 * 18.16 has only visitParam*, which finds the first key of that name at any depth, so each step
 * narrows to the raw value of the previous key first.
 */
export function jsonString(dialect: Dialect, column: string, ...path: string[]): string {
  const keys = path.map((k) => `'${k.replace(/'/g, "\\'")}'`);
  if (dialect === "current") return `JSONExtractString(${column}, ${keys.join(", ")})`;
  let expr = column;
  for (const key of keys.slice(0, -1)) expr = `visitParamExtractRaw(${expr}, ${key})`;
  return `visitParamExtractString(${expr}, ${keys[keys.length - 1]})`;
}

/** A DateTime of the epoch in the dialect's time type: the "never" of argMax below. */
export function epoch(d: Dialect): string {
  return d === "current" ? "toDateTime64(0, 3, 'UTC')" : "toDateTime(0)";
}

/**
 * What quoteString writes for each character it escapes: the backslash, the quote, and the
 * control characters ClickHouse itself writes as escapes when it forwards a query to a cluster's
 * servers (older servers check max_query_size on that text: a raw newline, 1 byte as sent, would
 * be 2 there).
 */
const LITERAL_ESCAPES: Readonly<Record<string, string>> = {
  "\\": "\\\\",
  "'": "\\'",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\0": "\\0",
};

/** A ClickHouse string literal of `text` (LITERAL_ESCAPES escaped: the same text on both engines). */
export function quoteString(text: string): string {
  return "'" + text.replace(/[\\'\b\f\n\r\t\0]/g, (c) => LITERAL_ESCAPES[c]!) + "'";
}

/** Backquotes an identifier (database, table) for ClickHouse SQL. */
export function quoteIdent(name: string): string {
  return "`" + name.replace(/\\/g, "\\\\").replace(/`/g, "\\`") + "`";
}

/**
 * Settings for every ClickHouse client of a cluster: an INSERT into a Distributed table then
 * returns only once every shard's replica stored its rows (`insert_distributed_sync`; without it
 * the rows wait in a queue on the server the insert reached), so the sink commits offsets only
 * for rows every shard holds. And `insert_deduplicate` off: a Replicated table skips a block it
 * has stored before, materialized views included, so a retried insert whose first try stored
 * events_local but failed in a view (users, identities, catalog_shapes: a read-only replica, too
 * many parts) would never feed that view; without it the retry writes again, as on one server,
 * and FINAL and the views' idempotent aggregates (argMax, min, max, uniq) take the repeat.
 * Nothing on one server.
 */
export function clusterSettings(cluster?: string): { insert_distributed_sync?: 1; insert_deduplicate?: 0 } {
  return cluster === undefined ? {} : { insert_distributed_sync: 1, insert_deduplicate: 0 };
}
