/**
 * What is there to query: `event_catalog` (each event name per type and workspace) and
 * `property_catalog` (each top-level key of properties, traits and context per event, with the
 * JSON types seen), with first and last receipt and how many messages. AggregatingMergeTree tables
 * kept by materialized views over events at insert time, as users and identities are (analyst.ts);
 * `count` is uniq(message_id), so a retried message counts once (exact below 65,536 messages per
 * row, about 1% off above: ClickHouse's uniq). The property keys come from the events column
 * `catalog_keys`, which the ingest fills (schemas/row.ts catalogKeys): 18.16 cannot list a JSON
 * object's keys.
 */
import { type Feed } from "./analyst";
import { Dialect, TYPES, distributedDdl, engine, onCluster, quoteIdent, quoteString, storageName } from "./sql";

export const EVENT_CATALOG_TABLE = "event_catalog";
export const PROPERTY_CATALOG_TABLE = "property_catalog";
export const EVENT_CATALOG_MV = "event_catalog_mv";
export const PROPERTY_CATALOG_MV = "property_catalog_mv";

/** The sorting keys of the two tables, as system.tables reports them (ownership checks). */
export const CATALOG_SORTING_KEYS = {
  [EVENT_CATALOG_TABLE]: "workspace_id,type,event,name",
  [PROPERTY_CATALOG_TABLE]: "workspace_id,type,event,name,source,key",
} as const;

/** Any shard is right for a catalog row (its states merge across shards); one event stays together. */
const CATALOG_SHARDING_KEY = "cityHash64(workspace_id, event)";

function catalogTableDdl(dialect: Dialect, database: string, name: keyof typeof CATALOG_SORTING_KEYS, cluster?: string): string {
  const t = TYPES[dialect];
  const local = storageName(name, cluster);
  const keyColumns =
    name === PROPERTY_CATALOG_TABLE ? `\n  source ${t.lowString},\n  key String,\n  types AggregateFunction(groupUniqArray, String),` : "";
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  workspace_id ${t.lowString},
  type ${t.lowString},
  event String,
  name String,${keyColumns}
  first_seen AggregateFunction(min, ${t.time}),
  last_seen AggregateFunction(max, ${t.time}),
  count AggregateFunction(uniq, String)
)
ENGINE = ${engine("AggregatingMergeTree", "", database, local, cluster)}
ORDER BY (${CATALOG_SORTING_KEYS[name].split(",").join(", ")})`;
}

/**
 * The SELECT feeding event_catalog from events rows: `event` is a track's event name, `name` a
 * page's or screen's name, as in events (both '' for other types). No subquery and no alias
 * named like a column: 18.16's materialized views find neither.
 */
function eventCatalogSelect(database: string, table: string): string {
  return `SELECT workspace_id, type, event, name,
  minState(received_at) AS first_seen,
  maxState(received_at) AS last_seen,
  uniqState(message_id) AS count
FROM ${quoteIdent(database)}.${quoteIdent(table)}
GROUP BY workspace_id, type, event, name`;
}

/** The SELECT feeding property_catalog: one row per `<source>:<type>:<key>` entry of catalog_keys. */
function propertyCatalogSelect(database: string, table: string): string {
  const part = (n: number) => `splitByChar(':', entry)[${n}]`;
  return `SELECT workspace_id, type, event, name,
  ${part(1)} AS source,
  substring(entry, length(${part(1)}) + length(${part(2)}) + 3) AS key,
  groupUniqArrayState(${part(2)}) AS types,
  minState(received_at) AS first_seen,
  maxState(received_at) AS last_seen,
  uniqState(message_id) AS count
FROM ${quoteIdent(database)}.${quoteIdent(table)}
ARRAY JOIN catalog_keys AS entry
GROUP BY workspace_id, type, event, name, source, key`;
}

/**
 * event_catalog and property_catalog with their feeds (see analyst.ts feeds: view first, then a
 * backfill that may overlap it). Rows stored before `catalog_keys` existed have none, so the
 * property catalog starts with the rows received since.
 */
export function catalogFeeds(dialect: Dialect, database: string, table: string, cluster?: string): Feed[] {
  const into = (name: string) => `${quoteIdent(database)}.${quoteIdent(name)}`;
  const source = storageName(table, cluster);
  const feed = (name: keyof typeof CATALOG_SORTING_KEYS, view: string, select: (t: string) => string): Feed => ({
    table: name,
    view,
    tableDdl: [
      catalogTableDdl(dialect, database, name, cluster),
      ...(cluster === undefined ? [] : [distributedDdl(database, name, cluster, CATALOG_SHARDING_KEY)]),
    ],
    viewDdl: `CREATE MATERIALIZED VIEW ${into(view)}${onCluster(cluster)} TO ${into(storageName(name, cluster))} AS ${select(source)}`,
    backfill: `INSERT INTO ${into(name)} ${select(table)}`,
  });
  return [
    feed(EVENT_CATALOG_TABLE, EVENT_CATALOG_MV, (t) => eventCatalogSelect(database, t)),
    feed(PROPERTY_CATALOG_TABLE, PROPERTY_CATALOG_MV, (t) => propertyCatalogSelect(database, t)),
  ];
}

/**
 * One row of eventCatalogQuery: `event` a track's event name, `name` a page's or screen's name
 * (as in events); times are ClickHouse's text, `count` a decimal string.
 */
export interface EventCatalogRow {
  workspace_id: string;
  type: string;
  event: string;
  name: string;
  count: string;
  first_seen: string;
  last_seen: string;
}

/** One row of propertyCatalogQuery; `types` the JSON types seen, sorted. */
export interface PropertyCatalogRow extends EventCatalogRow {
  source: string;
  key: string;
  types: string[];
}

/**
 * The merged states under new names, renamed outside: on 18.16 an alias named like a column
 * (count, first_seen) would replace the column inside the -Merge functions too.
 */
function mergedQuery(table: string, keys: string[], order: string, database: string, workspaceId?: string): string {
  const types = table === PROPERTY_CATALOG_TABLE;
  return `SELECT ${keys.join(", ")},${types ? " kinds AS types," : ""} toString(n) AS count, toString(first) AS first_seen, toString(last) AS last_seen
FROM (
  SELECT ${keys.join(", ")},${types ? " arraySort(groupUniqArrayMerge(types)) AS kinds," : ""} uniqMerge(count) AS n, minMerge(first_seen) AS first, maxMerge(last_seen) AS last
  FROM ${quoteIdent(database)}.${quoteIdent(table)}${workspaceId === undefined ? "" : `\n  WHERE workspace_id = ${quoteString(workspaceId)}`}
  GROUP BY ${keys.join(", ")}
)
ORDER BY ${order}`;
}

/** The event catalog of one workspace (or all), most messages first. */
export function eventCatalogQuery(database: string, workspaceId?: string): string {
  return mergedQuery(
    EVENT_CATALOG_TABLE,
    ["workspace_id", "type", "event", "name"],
    "workspace_id, n DESC, type, event, name",
    database,
    workspaceId,
  );
}

/** The property catalog of one workspace (or all): per event, its keys by source, most messages first. */
export function propertyCatalogQuery(database: string, workspaceId?: string): string {
  const keys = ["workspace_id", "type", "event", "name", "source", "key"];
  return mergedQuery(PROPERTY_CATALOG_TABLE, keys, "workspace_id, type, event, name, source, n DESC, key", database, workspaceId);
}
