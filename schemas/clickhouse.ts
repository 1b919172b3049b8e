/**
 * The ClickHouse model, in two dialects chosen by server version at migration time.
 *
 * `events` is the complete record. ReplacingMergeTree collapses rows sharing the ORDER BY key
 * (workspace_id, message_id) within a partition, so PARTITION BY must be equal for every retry
 * of a message: no partitioning by receive time, or by a timestamp that defaults to it.
 * The analyst views (one per message type, and `users`) read `events FINAL`, so every query on
 * them is deduplicated without the analyst having to remember FINAL. `rejected_messages` keeps
 * what the ingest refused. A view is only replaced when schemas/ownership.ts found it to be ours:
 * the statements here never drop or replace an object they were not told is ours.
 */

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

/** `CREATE TABLE IF NOT EXISTS` for the events table; idempotent. */
export function eventsTableDdl(dialect: Dialect, database: string, table: string): string {
  const t = TYPES[dialect];
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(table)} (
  workspace_id ${t.lowString},
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
  received_at ${t.time},
  properties String,
  traits String,
  context String,
  extra String
)
ENGINE = ReplacingMergeTree(received_at)
ORDER BY (workspace_id, message_id)`;
}

/**
 * `ALTER TABLE ... ADD COLUMN` for the columns a table made by an older release lacks, given the
 * columns it has (18.16 has no `ADD COLUMN IF NOT EXISTS`).
 */
export function addColumnsDdl(dialect: Dialect, database: string, table: string, existing: ReadonlySet<string>): string[] {
  return ADDED_COLUMNS(dialect)
    .filter(([name]) => !existing.has(name))
    .map(([name, type, after]) => `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(table)} ADD COLUMN ${name} ${type} AFTER ${after}`);
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

/** The view of the latest traits per (workspace_id, user_id). */
export const USERS_VIEW = "users";

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

/** Every analyst view name: the per-type views, then `users`. */
export function viewNames(): string[] {
  return [...Object.values(TYPE_VIEWS), USERS_VIEW];
}

/**
 * Statements that create the analyst views, replacing those in `ours` (views found to be ours by
 * schemas/ownership.ts) so their definitions stay current: `CREATE OR REPLACE` on current
 * ClickHouse, drop-and-create on 18.16, which lacks it. A name not in `ours` gets a plain
 * `CREATE VIEW`, which fails rather than replace an object that appeared since the check.
 */
export function viewsDdl(dialect: Dialect, database: string, table: string, ours: ReadonlySet<string> = new Set()): string[] {
  const source = `${quoteIdent(database)}.${quoteIdent(table)} FINAL`;
  const views: [name: string, select: string][] = Object.entries(TYPE_VIEWS).map(([type, name]) => [
    name,
    `SELECT ${[...commonColumns(dialect), ...typeColumns(dialect)[type as keyof typeof TYPE_VIEWS]].join(", ")}
FROM ${source}
WHERE type = '${type}'`,
  ]);
  // ClickHouse aliases are query-wide, so the aggregates get other names inside and are renamed outside.
  views.push([
    USERS_VIEW,
    `SELECT workspace_id, user_id,
  last_traits AS traits,
  ${jsonString(dialect, "last_traits", "email")} AS email,
  last_anonymous_id AS anonymous_id,
  first_identified_at, last_identified_at, identifies
FROM (
  SELECT workspace_id, user_id,
    argMax(traits, timestamp) AS last_traits,
    argMax(anonymous_id, timestamp) AS last_anonymous_id,
    min(timestamp) AS first_identified_at,
    max(timestamp) AS last_identified_at,
    count() AS identifies
  FROM ${source}
  WHERE type = 'identify' AND user_id != ''
  GROUP BY workspace_id, user_id
)`,
  ]);
  return views.flatMap(([name, select]) => {
    const view = `${quoteIdent(database)}.${quoteIdent(name)}`;
    if (!ours.has(name)) return [`CREATE VIEW ${view} AS ${select}`];
    return dialect === "current"
      ? [`CREATE OR REPLACE VIEW ${view} AS ${select}`]
      : [`DROP TABLE IF EXISTS ${view}`, `CREATE VIEW ${view} AS ${select}`];
  });
}

/** The statements creating the database and the events table; safe to run again. */
export function tableDdl(dialect: Dialect, database: string, table: string): string[] {
  return [`CREATE DATABASE IF NOT EXISTS ${quoteIdent(database)}`, eventsTableDdl(dialect, database, table)];
}

/** The table of items the ingest refused, kept for operators and analysts. */
export const REJECTED_TABLE = "rejected_messages";

/**
 * `CREATE TABLE IF NOT EXISTS` for `rejected_messages`; idempotent. `rejection_id` is the hex
 * SHA-256 of workspaceId + raw, so a retried refusal shares the ORDER BY key and collapses under
 * FINAL; no PARTITION BY from receive time: ReplacingMergeTree only merges within a partition.
 * `message_id` is '' when the item had no usable messageId, `type` '' when it was not a string;
 * `reasons` holds "path: expected" entries, `raw` the item's JSON text as received.
 */
export function rejectedTableDdl(dialect: Dialect, database: string): string {
  const t = TYPES[dialect];
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(REJECTED_TABLE)} (
  workspace_id ${t.lowString},
  received_at ${t.time},
  rejection_id String,
  message_id String,
  type ${t.lowString},
  reasons Array(String),
  raw String
)
ENGINE = ReplacingMergeTree(received_at)
ORDER BY (workspace_id, rejection_id)`;
}

/** Names migrate creates beside the events table: the analyst views and `rejected_messages`. */
export function reservedTableNames(): string[] {
  return [...viewNames(), REJECTED_TABLE];
}

/**
 * Why CLICKHOUSE_TABLE cannot be `table`, or undefined when it can: an events table named like a
 * view or `rejected_messages` would be taken for a user's object (or, on 18.16, dropped).
 */
export function tableNameConflict(table: string): string | undefined {
  if (!reservedTableNames().includes(table)) return undefined;
  return `CLICKHOUSE_TABLE=${table} is a name setup creates itself (${reservedTableNames().join(", ")}); choose another`;
}

/** A ClickHouse string literal. */
export function quoteString(text: string): string {
  return "'" + text.replace(/\\/g, "\\\\").replace(/'/g, "\\'") + "'";
}

/** Backquotes an identifier (database, table) for ClickHouse SQL. */
export function quoteIdent(name: string): string {
  return "`" + name.replace(/\\/g, "\\\\").replace(/`/g, "\\`") + "`";
}
