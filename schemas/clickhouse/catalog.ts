/**
 * What is there to query: the views `event_catalog` (each event name per type and workspace) and
 * `property_catalog` (each top-level key of properties, traits and context per event, with the
 * JSON types seen), with first and last receipt and how many messages. Both read
 * `catalog_shapes`, an AggregatingMergeTree table kept at insert time by one materialized view
 * over events: one row per (workspace, type, event, name, shape), a shape being a message's list
 * of keys and types (the events columns `catalog_keys` and `catalog_shape`, filled by the ingest:
 * 18.16 cannot list a JSON object's keys). Messages of one event share a few shapes, so the view groups a block into
 * few rows, and the keys are spread out only when the catalog is read: one view, not one per
 * catalog, costs the insert less (measured: docs/ANALYST-MODEL.md). `count` is uniq(message_id), so a
 * retried message counts once (exact below 65,536 messages, about 1% off above: ClickHouse's uniq).
 */
import { OVER_CAP_SHAPE, SOURCE_CODES, TYPE_CODES } from "../catalog";
import { type Feed, retentionClause, viewStatements } from "./analyst";
import { Dialect, TYPES, distributedDdl, engine, onCluster, quoteIdent, quoteString, storageName } from "./sql";

export const CATALOG_TABLE = "catalog_shapes";
export const CATALOG_MV = "catalog_shapes_mv";
export const EVENT_CATALOG_VIEW = "event_catalog";
export const PROPERTY_CATALOG_VIEW = "property_catalog";

/** The sorting key of catalog_shapes, as system.tables reports it (ownership checks). */
export const CATALOG_SORTING_KEY = "workspace_id,type,event,name,shape";

/** Any shard is right for a shape's row (its states merge across shards); one event stays together. */
const CATALOG_SHARDING_KEY = "cityHash64(workspace_id, event, name)";

/** catalog_shapes; with `retentionDays` on current ClickHouse a shape's rows expire by `last_seen` (aggregateRetentionTtl). */
function catalogTableDdl(dialect: Dialect, database: string, cluster?: string, retentionDays?: number): string {
  const t = TYPES[dialect];
  const local = storageName(CATALOG_TABLE, cluster);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  workspace_id ${t.lowString},
  type ${t.lowString},
  event String,
  name String,
  shape UInt64,
  keys AggregateFunction(argMax, Array(String), UInt64),
  first_seen AggregateFunction(min, ${t.time}),
  last_seen AggregateFunction(max, ${t.time}),
  count AggregateFunction(uniq, String)
)
ENGINE = ${engine("AggregatingMergeTree", "", database, local, cluster)}
ORDER BY (${CATALOG_SORTING_KEY.split(",").join(", ")})${retentionClause(dialect, "last_seen", retentionDays)}`;
}

/**
 * The SELECT feeding catalog_shapes from events rows: `event` a track's event name, `name` a
 * page's or screen's name (as in events). The shape is the row's `catalog_shape` (the ingest's
 * hash of its keys); `keys` the longest list a row of the shape carried: the ingest sends a
 * shape's list once in a while and [] in between (ingest/records/catalog.ts). A row the ingest marked
 * over its workspace's daily caps (catalog_shape OVER_CAP_SHAPE) is counted in the over-cap row
 * of its workspace, type and UTC day of receipt: event '', name the day (YYYY-MM-DD), shape
 * OVER_CAP_SHAPE; so a flood of names adds one row a day. `event` and `name` are aliases of
 * expressions reading only their own column (both engines read the column there, and group by
 * the expression); other aliases are named unlike any events column: 18.16 would read the alias
 * in the column's place. A subquery is no way out: 18.16 runs a view's outer query on the
 * inserted block and skips the inner one.
 */
function shapesSelect(database: string, table: string): string {
  const over = `catalog_shape = ${OVER_CAP_SHAPE}`;
  return `SELECT workspace_id, type,
  if(${over}, '', event) AS event,
  if(${over}, toString(toDate(received_at, 'UTC')), name) AS name,
  catalog_shape AS shape,
  argMaxState(catalog_keys, toUInt64(length(catalog_keys))) AS keys,
  minState(received_at) AS first_seen,
  maxState(received_at) AS last_seen,
  uniqState(message_id) AS count
FROM ${quoteIdent(database)}.${quoteIdent(table)}
GROUP BY workspace_id, type, event, name, shape`;
}

/** Text in the catalog view's definition since it has the over-cap row: a view without it is replaced (deploy/setup/migrate.ts). */
export const CATALOG_MV_MARK = String(OVER_CAP_SHAPE);

/**
 * catalog_shapes with its feed (see analyst.ts feeds: the view first, then a backfill that may
 * overlap it). Rows stored before `catalog_keys` existed have an empty list: their events are in
 * event_catalog, their keys not in property_catalog.
 */
export function catalogFeed(dialect: Dialect, database: string, table: string, cluster?: string, retentionDays?: number): Feed {
  const into = (name: string) => `${quoteIdent(database)}.${quoteIdent(name)}`;
  return {
    table: CATALOG_TABLE,
    view: CATALOG_MV,
    tableDdl: [
      catalogTableDdl(dialect, database, cluster, retentionDays),
      ...(cluster === undefined ? [] : [distributedDdl(database, CATALOG_TABLE, cluster, CATALOG_SHARDING_KEY)]),
    ],
    viewMark: CATALOG_MV_MARK,
    viewDdl: `CREATE MATERIALIZED VIEW ${into(CATALOG_MV)}${onCluster(cluster)} TO ${into(storageName(CATALOG_TABLE, cluster))} AS ${shapesSelect(database, storageName(table, cluster))}`,
    backfill: `INSERT INTO ${into(CATALOG_TABLE)} ${shapesSelect(database, table)}`,
    expiresBy: "last_seen",
  };
}

const shapes = (database: string, workspaceId?: string) =>
  `${quoteIdent(database)}.${quoteIdent(CATALOG_TABLE)}${workspaceId === undefined ? "" : ` WHERE workspace_id = ${quoteString(workspaceId)}`}`;

/**
 * One event per row: workspace_id, type, event, name, count (messages), first_seen, last_seen
 * (receipt times), over_cap (UInt8): 1 on a workspace's over-cap row of a type and day (event '',
 * name the day: the messages past its daily catalog caps, ingest/records/catalog.ts), 0 on the others.
 * States merge under new names, renamed outside: on 18.16 an alias named like a column would
 * replace the column inside the -Merge function.
 */
export function eventCatalogSelect(database: string, workspaceId?: string): string {
  return `SELECT workspace_id, type, event, name, n AS count, first AS first_seen, last AS last_seen, capped AS over_cap
FROM (
  SELECT workspace_id, type, event, name, toUInt8(shape = ${OVER_CAP_SHAPE}) AS capped,
    uniqMerge(count) AS n, minMerge(first_seen) AS first, maxMerge(last_seen) AS last
  FROM ${shapes(database, workspaceId)}
  GROUP BY workspace_id, type, event, name, capped
)`;
}

/** ClickHouse's transform() of a code letter into its name. */
function decode(letter: string, codes: Readonly<Record<string, string>>): string {
  const names = Object.keys(codes);
  return `transform(${letter}, [${names.map((n) => quoteString(codes[n]!)).join(", ")}], [${names.map(quoteString).join(", ")}], '')`;
}

/**
 * One key per row: workspace_id, type, event, name, source (properties, traits, context), key,
 * types (the JSON types seen, sorted), count, first_seen, last_seen. Each shape's states are
 * merged first, then spread over its keys and merged again per key: a message counts once per
 * key whichever shapes it was counted in.
 */
export function propertyCatalogSelect(database: string, workspaceId?: string): string {
  return `SELECT workspace_id, type, event, name, source, key, kinds AS types, n AS count, first AS first_seen, last AS last_seen
FROM (
  SELECT workspace_id, type, event, name,
    ${decode("substring(entry, 1, 1)", SOURCE_CODES)} AS source,
    substring(entry, 3) AS key,
    arraySort(groupUniqArray(${decode("substring(entry, 2, 1)", TYPE_CODES)})) AS kinds,
    uniqMerge(shape_count) AS n, min(shape_first) AS first, max(shape_last) AS last
  ${shapeEntries(database, workspaceId)}
  GROUP BY workspace_id, type, event, name, source, key
)`;
}

/**
 * `FROM` catalog_shapes merged per shape (shape_keys, shape_count, shape_first, shape_last),
 * spread over the shape's key entries (`entry`, as schemas/catalog.ts writes them).
 */
function shapeEntries(database: string, workspaceId?: string): string {
  return `FROM (
    SELECT workspace_id, type, event, name, argMaxMerge(keys) AS shape_keys, uniqMergeState(count) AS shape_count,
      minMerge(first_seen) AS shape_first, maxMerge(last_seen) AS shape_last
    FROM ${shapes(database, workspaceId)}
    GROUP BY workspace_id, type, event, name, shape
  )
  ARRAY JOIN shape_keys AS entry`;
}

/** One JSON type a key was seen with: `messages` holding it so, in how many `workspaces`. */
export interface KeyTypeSeen {
  type: string;
  messages: number;
  workspaces: number;
}

/**
 * Statements creating the two views, replacing those in `ours` (found to be ours by
 * deploy/setup/ownership.ts) as analyst.ts viewsDdl does. On a cluster they read the Distributed
 * catalog_shapes.
 */
export function catalogViewsDdl(dialect: Dialect, database: string, ours: ReadonlySet<string> = new Set(), cluster?: string): string[] {
  const views: [string, string][] = [
    [EVENT_CATALOG_VIEW, eventCatalogSelect(database)],
    [PROPERTY_CATALOG_VIEW, propertyCatalogSelect(database)],
  ];
  return views.flatMap(([name, select]) => viewStatements(dialect, database, name, select, ours, cluster));
}

/**
 * One row of the event catalog: `event` a track's event name, `name` a page's or screen's name
 * (as in events); times are ClickHouse's text; count a decimal string (as readCatalog gives it).
 */
export interface EventCatalogRow {
  workspace_id: string;
  type: string;
  event: string;
  name: string;
  count: string;
  first_seen: string;
  last_seen: string;
  /**
   * 1: the over-cap row of its workspace, type and day (`name` the day, YYYY-MM-DD); 0 or absent
   * otherwise (the property catalog has no over-cap rows).
   */
  over_cap?: number;
}

/** One row of the property catalog; `types` the JSON types seen, sorted. */
export interface PropertyCatalogRow extends EventCatalogRow {
  source: string;
  key: string;
  types: string[];
}

/** The event catalog of one workspace (or all), most messages first. */
export function eventCatalogQuery(database: string, workspaceId?: string): string {
  return `${eventCatalogSelect(database, workspaceId)}\nORDER BY workspace_id, n DESC, type, event, name`;
}

/** The property catalog of one workspace (or all): per event, its keys by source, most messages first. */
export function propertyCatalogQuery(database: string, workspaceId?: string): string {
  return `${propertyCatalogSelect(database, workspaceId)}\nORDER BY workspace_id, type, event, name, source, n DESC, key`;
}
