/**
 * The ClickHouse model, in two dialects chosen by server version at migration time.
 *
 * `events` is the complete record, laid out for time-window queries: PARTITION BY month of
 * `event_date`, ORDER BY (workspace_id, event_date, type, message_id). ReplacingMergeTree only
 * collapses rows with equal sorting keys in the same partition, so `event_date` must be equal for
 * every retry of a message: it is the UTC day of the client's own `timestamp` (kept by SDKs
 * across retries, whatever sentAt each attempt carries), and of receivedAt only for a message
 * sent without one (EVENT_DATE). The per-type views read `events FINAL`.
 * `users` and `identities` are AggregatingMergeTree tables fed at insert time by materialized
 * views over `events`, with aggregates that give the same answer when a retry is counted twice
 * (argMax, min, max, uniq). `rejected_messages` keeps what the ingest refused. An object is only
 * replaced when schemas/ownership.ts found it to be ours.
 *
 * On a cluster (CLICKHOUSE_CLUSTER, the name of a cluster in the servers' remote_servers) each
 * table is `<name>_local`, a Replicated* engine on every shard, created ON CLUSTER, and `<name>`
 * is a Distributed table over it: the names analysts and the sink use read and write every
 * shard. Rows are sharded by a hash of the columns that identify them (EVENTS_SHARDING_KEY), so
 * every copy of a message lands on one shard and collapses there.
 */

import { EVENT_ROW_COLUMNS } from "./row";

/** Which DDL a server gets. `legacy` is ClickHouse < 20 (no DateTime64; the 18.16 of Debian 12). */
export type Dialect = "current" | "legacy";

/** ClickHouse gained DateTime64 in 20.1 and LowCardinality by default in 19.x. */
export function dialectFor(version: string): Dialect {
  const major = Number.parseInt(version.split(".")[0] ?? "", 10);
  return Number.isFinite(major) && major >= 20 ? "current" : "legacy";
}

/** Column types per dialect. */
const TYPES: Record<Dialect, { time: string; lowString: string }> = {
  current: { time: "DateTime64(3, 'UTC')", lowString: "LowCardinality(String)" },
  legacy: { time: "DateTime", lowString: "String" },
};

/** Columns added after the first release, with their types; migrations add them to old tables. */
const ADDED_COLUMNS = (d: Dialect): [name: string, type: string, after: string][] => [
  ["original_timestamp", `Nullable(${TYPES[d].time})`, "timestamp"],
  ["category", "String", "name"],
  ["extra", "String", "context"],
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
  event String,
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
  extra String`;
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
 * (`ttl_only_drop_parts`); 18.16 has no TTL, so there retention is `partitionsToDrop`. On a
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
function engine(family: string, args: string, database: string, table: string, cluster?: string, shared = false): string {
  if (cluster === undefined) return args === "" ? family : `${family}(${args})`;
  const path = quoteString(`/clickhouse/tables/${shared ? "all" : "{shard}"}/${database}/${table}`);
  return `Replicated${family}(${path}, '{replica}'${args === "" ? "" : `, ${args}`})`;
}

/**
 * Sharding keys of the Distributed tables: a hash of what identifies a row, so every copy of
 * one (a retried message, a repeated refusal) is stored on the same shard, where
 * ReplacingMergeTree collapses it. The events key is the messageId alone (as the Kafka key),
 * a hash the sink also computes (schemas/shard.ts) when it inserts into each shard directly.
 * Users and identities rows are states of aggregates, merged by -Merge across shards, so any
 * shard is right for them; their owner's id keeps one user together on the backfill.
 */
export const EVENTS_SHARDING_KEY = "halfMD5(message_id)";
const SHARDING_KEYS = {
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
  const current = /\bTTL\s+(.*?)(?:\s+SETTINGS\b|$)/s.exec(createQuery)?.[1]?.trim();
  if (retentionDays === undefined) return current === undefined ? [] : [`ALTER TABLE ${name} REMOVE TTL`];
  const wanted = retentionTtl(retentionDays);
  const same = current !== undefined && current.replace(/\s+/g, "") === wanted.slice(4).replace(/\s+/g, "");
  return same ? [] : [`ALTER TABLE ${name} MODIFY SETTING ttl_only_drop_parts = 1`, `ALTER TABLE ${name} MODIFY ${wanted}`];
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

/** The active partitions of a table, for partitionsToDrop. */
export function partitionsQuery(database: string, table: string): string {
  return `SELECT DISTINCT partition_id AS id FROM system.parts
WHERE database = ${quoteString(database)} AND table = ${quoteString(table)} AND active ORDER BY id`;
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

/**
 * `ALTER TABLE ... ADD COLUMN` for the columns a table made by an older release lacks, given the
 * columns it has (18.16 has no `ADD COLUMN IF NOT EXISTS`); on a cluster, to `<table>_local` and
 * then `<table>`, ON CLUSTER.
 */
export function addColumnsDdl(
  dialect: Dialect,
  database: string,
  table: string,
  existing: ReadonlySet<string>,
  cluster?: string,
): string[] {
  const tables = cluster === undefined ? [table] : [storageName(table, cluster), table];
  return ADDED_COLUMNS(dialect)
    .filter(([name]) => !existing.has(name))
    .flatMap(([name, type, after]) =>
      tables.map(
        (t) => `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(t)}${onCluster(cluster)} ADD COLUMN ${name} ${type} AFTER ${after}`,
      ),
    );
}

/** A query listing the columns of a table (name per row). */
export function columnsQuery(database: string, table: string): string {
  return `SELECT name FROM system.columns WHERE database = ${quoteString(database)} AND table = ${quoteString(table)}`;
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

/** Names of the analyst views, by message type. */
export const TYPE_VIEWS = {
  identify: "identifies",
  track: "tracks",
  page: "pages",
  screen: "screens",
  group: "groups",
  alias: "aliases",
} as const;

/** Tables kept at insert time by materialized views over events, and those views' names. */
export const USERS_TABLE = "users";
export const IDENTITIES_TABLE = "identities";
export const USERS_MV = "users_mv";
export const IDENTITIES_MV = "identities_mv";

/** Steps of setup that ran to the end (backfills), so a crashed one is run again. */
export const MIGRATIONS_TABLE = "schema_migrations";

/** Columns every per-type view has, typed. */
function commonColumns(d: Dialect): string[] {
  return [
    "workspace_id",
    "message_id",
    "user_id",
    "anonymous_id",
    "timestamp",
    "original_timestamp",
    "sent_at",
    "received_at",
    "event_date",
    `${jsonString(d, "context", "ip")} AS context_ip`,
    `${jsonString(d, "context", "userAgent")} AS context_user_agent`,
    `${jsonString(d, "context", "library", "name")} AS context_library_name`,
    `${jsonString(d, "context", "library", "version")} AS context_library_version`,
    "context",
  ];
}

/** Type-specific columns of each view. */
function typeColumns(d: Dialect): Record<keyof typeof TYPE_VIEWS, string[]> {
  return {
    identify: ["traits", `${jsonString(d, "traits", "email")} AS email`, `${jsonString(d, "traits", "name")} AS name`],
    track: ["event", "properties"],
    page: [
      "name",
      "category",
      "properties",
      `${jsonString(d, "properties", "url")} AS url`,
      `${jsonString(d, "properties", "path")} AS path`,
      `${jsonString(d, "properties", "referrer")} AS referrer`,
      `${jsonString(d, "properties", "title")} AS title`,
    ],
    screen: ["name", "category", "properties"],
    group: ["group_id", "traits", `${jsonString(d, "traits", "name")} AS group_name`],
    alias: ["previous_id"],
  };
}

/** Every analyst view name (the per-type views). */
export function viewNames(): string[] {
  return Object.values(TYPE_VIEWS);
}

/**
 * Statements that create the analyst views, replacing those in `ours` (views found to be ours by
 * schemas/ownership.ts) so their definitions stay current: `CREATE OR REPLACE` on current
 * ClickHouse, drop-and-create on 18.16, which lacks it. A name not in `ours` gets a plain
 * `CREATE VIEW`, which fails rather than replace an object that appeared since the check. On a
 * cluster the views are made ON CLUSTER and read the Distributed table (every shard).
 */
export function viewsDdl(
  dialect: Dialect,
  database: string,
  table: string,
  ours: ReadonlySet<string> = new Set(),
  cluster?: string,
): string[] {
  const source = `${quoteIdent(database)}.${quoteIdent(table)} FINAL`;
  const views: [name: string, select: string][] = Object.entries(TYPE_VIEWS).map(([type, name]) => [
    name,
    `SELECT ${[...commonColumns(dialect), ...typeColumns(dialect)[type as keyof typeof TYPE_VIEWS]].join(", ")}
FROM ${source}
WHERE type = '${type}'`,
  ]);
  return views.flatMap(([name, select]) => {
    const view = `${quoteIdent(database)}.${quoteIdent(name)}${onCluster(cluster)}`;
    if (!ours.has(name)) return [`CREATE VIEW ${view} AS ${select}`];
    return dialect === "current"
      ? [`CREATE OR REPLACE VIEW ${view} AS ${select}`]
      : [`DROP TABLE IF EXISTS ${view}`, `CREATE VIEW ${view} AS ${select}`];
  });
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

/** The table of items the ingest refused, kept for operators and analysts. */
export const REJECTED_TABLE = "rejected_messages";

/**
 * `CREATE TABLE IF NOT EXISTS` for `rejected_messages`; idempotent. `rejection_id` is the hex
 * SHA-256 of workspaceId + raw, so a retried refusal shares the ORDER BY key and collapses under
 * FINAL; no PARTITION BY from receive time: ReplacingMergeTree only merges within a partition.
 * `message_id` is '' when the item had no usable messageId, `type` '' when it was not a string;
 * `reasons` holds "path: expected" entries, `raw` the item's JSON text as received. On a cluster,
 * `rejected_messages_local` and the Distributed `rejected_messages` over it.
 */
export function rejectedTableDdl(dialect: Dialect, database: string, cluster?: string): string[] {
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
ORDER BY (workspace_id, rejection_id)`;
  return cluster === undefined ? [storage] : [storage, distributedDdl(database, REJECTED_TABLE, cluster, SHARDING_KEYS.rejected)];
}

/** The audit table of `users delete` / `suppress` / `unsuppress` (sink/privacy.ts). */
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
export const DISTRIBUTED_TABLES = [USERS_TABLE, IDENTITIES_TABLE, REJECTED_TABLE, PRIVACY_TABLE] as const;

/**
 * Names migrate creates beside the events table: views, users, identities, their feeds,
 * rejected_messages, schema_migrations, privacy_requests; on a cluster also the `_local` tables
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
    REJECTED_TABLE,
    MIGRATIONS_TABLE,
    PRIVACY_TABLE,
    ...locals,
  ];
}

/** A DateTime of the epoch in the dialect's time type: the "never" of argMax below. */
function epoch(d: Dialect): string {
  return d === "current" ? "toDateTime64(0, 3, 'UTC')" : "toDateTime(0)";
}

/**
 * `users`: one row per (workspace_id, user_id) after merges, so reading one user is a key lookup.
 * Read with the -Merge functions: `argMaxMerge(traits)` is the traits object of the user's
 * latest identify by event time (the whole object, not merged key by key; '{}' before any
 * identify), `argMaxMerge(anonymous_id)` the latest anonymousId seen with the user,
 * `minMerge(first_seen)` / `maxMerge(last_seen)` the first and last event time of any message,
 * `uniqMerge(events)` how many messages (ClickHouse uniq: a retry is not counted again; exact
 * up to hash collisions below 65,536 per user, about 1% error above).
 */
export function usersTableDdl(dialect: Dialect, database: string, cluster?: string): string {
  const t = TYPES[dialect];
  const local = storageName(USERS_TABLE, cluster);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  workspace_id ${t.lowString},
  user_id String,
  traits AggregateFunction(argMax, String, ${t.time}),
  anonymous_id AggregateFunction(argMax, String, ${t.time}),
  first_seen AggregateFunction(min, ${t.time}),
  last_seen AggregateFunction(max, ${t.time}),
  events AggregateFunction(uniq, String)
)
ENGINE = ${engine("AggregatingMergeTree", "", database, local, cluster)}
ORDER BY (workspace_id, user_id)`;
}

/** The SELECT feeding `users` from events rows (the materialized view's and the backfill's). */
function usersSelect(dialect: Dialect, database: string, table: string): string {
  const never = epoch(dialect);
  return `SELECT workspace_id, user_id,
  argMaxState(if(type = 'identify', traits, '{}'), if(type = 'identify', timestamp, ${never})) AS traits,
  argMaxState(anonymous_id, if(anonymous_id != '', timestamp, ${never})) AS anonymous_id,
  minState(timestamp) AS first_seen,
  maxState(timestamp) AS last_seen,
  uniqState(message_id) AS events
FROM ${quoteIdent(database)}.${quoteIdent(table)}
WHERE user_id != ''
GROUP BY workspace_id, user_id`;
}

/**
 * `identities`: which anonymousId (or alias previousId) belongs to which userId, one row per
 * (workspace_id, anonymous_id, user_id), from identify messages carrying both ids and alias
 * messages (previousId -> userId). Not transitive: alias a -> b then b -> c gives two rows.
 * `minMerge(first_linked_at)` / `maxMerge(last_linked_at)` are event times.
 */
export function identitiesTableDdl(dialect: Dialect, database: string, cluster?: string): string {
  const t = TYPES[dialect];
  const local = storageName(IDENTITIES_TABLE, cluster);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  workspace_id ${t.lowString},
  anonymous_id String,
  user_id String,
  first_linked_at AggregateFunction(min, ${t.time}),
  last_linked_at AggregateFunction(max, ${t.time})
)
ENGINE = ${engine("AggregatingMergeTree", "", database, local, cluster)}
ORDER BY (workspace_id, anonymous_id, user_id)`;
}

/**
 * The SELECT feeding `identities`. The output alias `anonymous_id` shadows the column in WHERE
 * and GROUP BY on 18.16 and not on current ClickHouse; the conditions are written so both
 * readings select the same rows (for an identify the alias equals the column).
 */
function identitiesSelect(database: string, table: string): string {
  return `SELECT workspace_id, if(type = 'alias', previous_id, anonymous_id) AS anonymous_id, user_id,
  minState(timestamp) AS first_linked_at,
  maxState(timestamp) AS last_linked_at
FROM ${quoteIdent(database)}.${quoteIdent(table)}
WHERE user_id != '' AND ((type = 'identify' AND anonymous_id != '') OR (type = 'alias' AND previous_id != ''))
GROUP BY workspace_id, anonymous_id, user_id`;
}

/** What feeds one aggregate table: its name, its materialized view, and the shared SELECT. */
export interface Feed {
  table: typeof USERS_TABLE | typeof IDENTITIES_TABLE;
  view: typeof USERS_MV | typeof IDENTITIES_MV;
  /** CREATE TABLE IF NOT EXISTS for the target (on a cluster, `_local`, then the Distributed table). */
  tableDdl: string[];
  /** CREATE MATERIALIZED VIEW ... TO the target, reading the events table (on a cluster, each server's `_local` tables). */
  viewDdl: string;
  /**
   * INSERT ... SELECT of every events row into the target; safe to repeat (idempotent aggregates).
   * On a cluster it reads and writes the Distributed tables: run it with insert_distributed_sync=1.
   */
  backfill: string;
}

/**
 * `users` and `identities` with their feeds. Every aggregate gives the same state when a row is
 * counted twice, so the backfill may overlap what the view already inserted (and retries of a
 * message, not yet collapsed in events, count once). On a cluster each server's view feeds its
 * own `_local` target from the events rows inserted there; analysts read the Distributed tables,
 * whose -Merge functions merge the shards' states.
 */
export function feeds(dialect: Dialect, database: string, table: string, cluster?: string): Feed[] {
  const into = (name: string) => `${quoteIdent(database)}.${quoteIdent(name)}`;
  const local = (name: string) => into(storageName(name, cluster));
  const distributed = (name: string, key: string) => (cluster === undefined ? [] : [distributedDdl(database, name, cluster, key)]);
  const mv = (name: string, target: string, select: string) =>
    `CREATE MATERIALIZED VIEW ${into(name)}${onCluster(cluster)} TO ${local(target)} AS ${select}`;
  const source = storageName(table, cluster);
  return [
    {
      table: USERS_TABLE,
      view: USERS_MV,
      tableDdl: [usersTableDdl(dialect, database, cluster), ...distributed(USERS_TABLE, SHARDING_KEYS.users)],
      viewDdl: mv(USERS_MV, USERS_TABLE, usersSelect(dialect, database, source)),
      backfill: `INSERT INTO ${into(USERS_TABLE)} ${usersSelect(dialect, database, table)}`,
    },
    {
      table: IDENTITIES_TABLE,
      view: IDENTITIES_MV,
      tableDdl: [identitiesTableDdl(dialect, database, cluster), ...distributed(IDENTITIES_TABLE, SHARDING_KEYS.identities)],
      viewDdl: mv(IDENTITIES_MV, IDENTITIES_TABLE, identitiesSelect(database, source)),
      backfill: `INSERT INTO ${into(IDENTITIES_TABLE)} ${identitiesSelect(database, table)}`,
    },
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

/** A ClickHouse string literal. */
export function quoteString(text: string): string {
  return "'" + text.replace(/\\/g, "\\\\").replace(/'/g, "\\'") + "'";
}

/** Backquotes an identifier (database, table) for ClickHouse SQL. */
export function quoteIdent(name: string): string {
  return "`" + name.replace(/\\/g, "\\\\").replace(/`/g, "\\`") + "`";
}

/**
 * Settings for every ClickHouse client of a cluster: an INSERT into a Distributed table then
 * returns only once every shard's replica stored its rows (`insert_distributed_sync`; without it
 * the rows wait in a queue on the server the insert reached), so the sink commits offsets only
 * for rows every shard holds. Nothing on one server.
 */
export function clusterSettings(cluster?: string): { insert_distributed_sync?: 1 } {
  return cluster === undefined ? {} : { insert_distributed_sync: 1 };
}
