/**
 * What analysts read beside `events`: the per-type views (over `events FINAL`), and `users` and
 * `identities`, AggregatingMergeTree tables fed at insert time by materialized views over
 * `events`, with aggregates that give the same answer when a retry is counted twice (argMax, min,
 * max, uniq).
 */
import { ENRICHMENT_COLUMNS } from "../enrichment";
import { Dialect, SHARDING_KEYS, TYPES, distributedDdl, engine, epoch, jsonString, onCluster, quoteIdent, storageName } from "./sql";

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

/**
 * The time an identify (and a message's anonymousId) is ranked by in `users`: the client's
 * skew-corrected `timestamp`, but never later than the ingest's `received_at`, so a message dated
 * in the future (a writeKey holder's identify "at the end of tomorrow") cannot outrank the user's
 * real identifies until its date passes (issue 46, row 10). Both are the dialect's time type.
 */
export const USERS_RANK = "least(timestamp, received_at)";

/**
 * The setup step recorded once `users_mv` ranks by USERS_RANK: an install whose step is missing
 * gets the view replaced (deploy/setup/migrate.ts). A later change of a feed's definition names a
 * new step.
 */
export const USERS_RANK_STEP = "users_mv: identifies ranked by least(timestamp, received_at)";

/**
 * RETENTION_DAYS on an aggregate table (users, identities, catalog_shapes) on current ClickHouse:
 * a stored row is kept while the UTC day of the latest time it holds (`column`, a max state, e.g.
 * `last_seen`) is one of the last `days` days, as rejectedRetentionTtl keeps a refused item by its
 * receive day. Rows of one key merge into one, so a key seen within the window keeps a row; a part
 * of its history that expired before a merge took it in goes, as the events it summed up did.
 */
export function aggregateRetentionTtl(column: string, days: number): string {
  return `TTL toDate(finalizeAggregation(${column})) + toIntervalDay(${Math.trunc(days)})`;
}

/** aggregateRetentionTtl on a new table: a TTL line on current ClickHouse with RETENTION_DAYS, else nothing (18.16 has no TTL). */
export function retentionClause(dialect: Dialect, column: string, days?: number): string {
  return dialect === "current" && days !== undefined ? `\n${aggregateRetentionTtl(column, days)}` : "";
}

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
    ...ENRICHMENT_COLUMNS,
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
 * deploy/setup/ownership.ts) so their definitions stay current: `CREATE OR REPLACE` on current
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
  return views.flatMap(([name, select]) => viewStatements(dialect, database, name, select, ours, cluster));
}

/**
 * The statements making one plain view `name` over `select`: `CREATE VIEW` when it is not in
 * `ours`, else a replacement (`CREATE OR REPLACE` current, drop-and-create 18.16), ON CLUSTER
 * when `cluster` is set.
 */
export function viewStatements(
  dialect: Dialect,
  database: string,
  name: string,
  select: string,
  ours: ReadonlySet<string>,
  cluster?: string,
): string[] {
  const view = `${quoteIdent(database)}.${quoteIdent(name)}${onCluster(cluster)}`;
  if (!ours.has(name)) return [`CREATE VIEW ${view} AS ${select}`];
  return dialect === "current"
    ? [`CREATE OR REPLACE VIEW ${view} AS ${select}`]
    : [`DROP TABLE IF EXISTS ${view}`, `CREATE VIEW ${view} AS ${select}`];
}

/**
 * `users`: one row per (workspace_id, user_id) after merges, so reading one user is a key lookup.
 * Read with the -Merge functions: `argMaxMerge(traits)` is the traits object of the user's
 * latest identify by event time, a time in the future counting as its receipt (USERS_RANK; the
 * whole object, not merged key by key; '{}' before any identify), `argMaxMerge(anonymous_id)` the
 * latest anonymousId seen with the user (ranked alike), `minMerge(first_seen)` /
 * `maxMerge(last_seen)` the first and last event time of any message, `uniqMerge(events)` how
 * many messages (ClickHouse uniq: a retry is not counted again; exact up to hash collisions below
 * 65,536 per user, about 1% error above). With `retentionDays` on current ClickHouse, rows expire
 * by `last_seen` (aggregateRetentionTtl; on 18.16 the sink deletes them: sink/upkeep/retention.ts).
 */
export function usersTableDdl(dialect: Dialect, database: string, cluster?: string, retentionDays?: number): string {
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
ORDER BY (workspace_id, user_id)${retentionClause(dialect, "last_seen", retentionDays)}`;
}

/** The SELECT feeding `users` from events rows (the materialized view's and the backfill's). */
function usersSelect(dialect: Dialect, database: string, table: string): string {
  const never = epoch(dialect);
  return `SELECT workspace_id, user_id,
  argMaxState(if(type = 'identify', traits, '{}'), if(type = 'identify', ${USERS_RANK}, ${never})) AS traits,
  argMaxState(anonymous_id, if(anonymous_id != '', ${USERS_RANK}, ${never})) AS anonymous_id,
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
 * `minMerge(first_linked_at)` / `maxMerge(last_linked_at)` are event times. With `retentionDays`
 * on current ClickHouse, rows expire by `last_linked_at` (aggregateRetentionTtl; 18.16: the sink).
 */
export function identitiesTableDdl(dialect: Dialect, database: string, cluster?: string, retentionDays?: number): string {
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
ORDER BY (workspace_id, anonymous_id, user_id)${retentionClause(dialect, "last_linked_at", retentionDays)}`;
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
  /** users, identities, event_catalog or property_catalog (catalog.ts). */
  table: string;
  view: string;
  /** CREATE TABLE IF NOT EXISTS for the target (on a cluster, `_local`, then the Distributed table). */
  tableDdl: string[];
  /** CREATE MATERIALIZED VIEW ... TO the target, reading the events table (on a cluster, each server's `_local` tables). */
  viewDdl: string;
  /** Text the current view's definition holds: an existing view without it is dropped and made again (catalog.ts). */
  viewMark?: string;
  /**
   * INSERT ... SELECT of every events row into the target; safe to repeat (idempotent aggregates).
   * On a cluster it reads and writes the Distributed tables: run it with insert_distributed_sync=1.
   */
  backfill: string;
  /**
   * The setup step naming the view's current definition (e.g. USERS_RANK_STEP): an existing view
   * of an install that has not recorded it is replaced. Unset: an existing view is kept as it is.
   */
  revision?: string;
  /** The max-state column rows of the target expire by under RETENTION_DAYS (aggregateRetentionTtl). */
  expiresBy: string;
}

/**
 * `users` and `identities` with their feeds. Every aggregate gives the same state when a row is
 * counted twice, so the backfill may overlap what the view already inserted (and retries of a
 * message, not yet collapsed in events, count once). On a cluster each server's view feeds its
 * own `_local` target from the events rows inserted there; analysts read the Distributed tables,
 * whose -Merge functions merge the shards' states.
 */
export function feeds(dialect: Dialect, database: string, table: string, cluster?: string, retentionDays?: number): Feed[] {
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
      tableDdl: [usersTableDdl(dialect, database, cluster, retentionDays), ...distributed(USERS_TABLE, SHARDING_KEYS.users)],
      viewDdl: mv(USERS_MV, USERS_TABLE, usersSelect(dialect, database, source)),
      backfill: `INSERT INTO ${into(USERS_TABLE)} ${usersSelect(dialect, database, table)}`,
      revision: USERS_RANK_STEP,
      expiresBy: "last_seen",
    },
    {
      table: IDENTITIES_TABLE,
      view: IDENTITIES_MV,
      tableDdl: [identitiesTableDdl(dialect, database, cluster, retentionDays), ...distributed(IDENTITIES_TABLE, SHARDING_KEYS.identities)],
      viewDdl: mv(IDENTITIES_MV, IDENTITIES_TABLE, identitiesSelect(database, source)),
      backfill: `INSERT INTO ${into(IDENTITIES_TABLE)} ${identitiesSelect(database, table)}`,
      expiresBy: "last_linked_at",
    },
  ];
}
