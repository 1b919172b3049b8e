/**
 * Materialized property columns: `prop_<key>` (from properties), `trait_<key>` (traits) or
 * `ctx_<key>` (context), one top-level key of the JSON text computed by the server at every
 * insert, so a filter or a GROUP BY on it reads a column instead of parsing JSON on every row
 * (PostHog's answer to the same cost). Pure SQL; deploy/commands/properties.ts runs it. Current
 * ClickHouse extracts with JSONExtract*, exactly at the top level; 18.16 has only visitParam*,
 * which takes the first key of that name at any depth (`{"a":{"plan":1},"plan":2}` gives 1):
 * there, materialize only keys no nested object repeats.
 */
import { SOURCE_CODES, TYPE_CODES } from "../catalog";
import { CATALOG_TABLE, type KeyTypeSeen } from "./catalog";
import { EVENTS_SHARDING_KEY } from "./events";
import { Dialect, alterDistributedDdl, onCluster, quoteIdent, quoteString, storageName } from "./sql";

/** Where a key is read from, and the prefix of its column. */
export const COLUMN_PREFIXES = { properties: "prop_", traits: "trait_", context: "ctx_" } as const;
export type PropertySource = keyof typeof COLUMN_PREFIXES;

/**
 * The column types a key may be stored as: String (the text of a string; of any other value its
 * JSON text, null and an absent key ''), Float64 and Int64 (numbers), UInt8 (booleans). Values of
 * another type read as 0 in the numeric columns (a numeric string as its number).
 */
export const COLUMN_TYPES = ["String", "Float64", "Int64", "UInt8"] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

/** One materialized key. */
export interface MaterializedKey {
  source: PropertySource;
  key: string;
  type: ColumnType;
}

/**
 * The column of a key, or why it cannot have one (an error value): keys of letters, digits and
 * `_`, starting with a letter or `_`, up to 64 characters, map to a column of the same spelling;
 * any other key would need a renaming that two keys could share.
 */
export function columnName(source: PropertySource, key: string): { ok: true; column: string } | { ok: false; error: string } {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(key))
    return {
      ok: false,
      error: `${source}.${JSON.stringify(key)} cannot be a column: a key of letters, digits and _ (at most 64, not starting with a digit) maps to ${COLUMN_PREFIXES[source]}<key>`,
    };
  return { ok: true, column: `${COLUMN_PREFIXES[source]}${key}` };
}

const EXTRACT: Record<Dialect, Record<ColumnType, string>> = {
  current: { String: "JSONExtractString", Float64: "JSONExtractFloat", Int64: "JSONExtractInt", UInt8: "JSONExtractBool" },
  legacy: {
    String: "visitParamExtractString",
    Float64: "visitParamExtractFloat",
    Int64: "visitParamExtractInt",
    UInt8: "visitParamExtractBool",
  },
};

/**
 * The expression computing a key's value from its JSON text column ('' or 0 when absent). A
 * String on 18.16: visitParamExtractString gives '' for any value but a string, where current
 * ClickHouse's JSONExtractString gives the value's JSON text, so a value not in quotes is read
 * raw (visitParamExtractRaw; `null` as ''), which makes both engines agree.
 */
export function extractExpression(dialect: Dialect, m: MaterializedKey): string {
  const read = (f: string) => `${f}(${m.source}, ${quoteString(m.key)})`;
  if (dialect === "current" || m.type !== "String") return read(EXTRACT[dialect][m.type]);
  const raw = read("visitParamExtractRaw");
  return `multiIf(startsWith(${raw}, '"'), ${read("visitParamExtractString")}, ${raw} = 'null', '', ${raw})`;
}

/**
 * `ALTER TABLE ... ADD COLUMN` for a key: MATERIALIZED on one server; on a cluster DEFAULT (the same
 * expression) on `<table>_local` ON CLUSTER, then on the Distributed `<table>` (alterDistributedDdl:
 * made again on 18.16), as the events table's event_date: the Distributed table computes the value
 * and sends it on, which 18.16 refuses for a MATERIALIZED column. `column` is columnName's.
 */
export function addColumnDdl(
  dialect: Dialect,
  database: string,
  table: string,
  column: string,
  m: MaterializedKey,
  cluster?: string,
): string[] {
  const kind = cluster === undefined ? "MATERIALIZED" : "DEFAULT";
  const add = `ADD COLUMN ${quoteIdent(column)} ${m.type} ${kind} ${extractExpression(dialect, m)}`;
  if (cluster === undefined) return [`ALTER TABLE ${quoteIdent(database)}.${quoteIdent(table)} ${add}`];
  return [
    `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} ${add}`,
    ...alterDistributedDdl(dialect, database, table, cluster, EVENTS_SHARDING_KEY, add),
  ];
}

/**
 * `ALTER TABLE ... DROP COLUMN` of a key's column; on a cluster, the Distributed table's first
 * (alterDistributedDdl: on 18.16 made again without it, so after `_local`), then `_local`'s.
 */
export function dropColumnDdl(dialect: Dialect, database: string, table: string, column: string, cluster?: string): string[] {
  const drop = `DROP COLUMN ${quoteIdent(column)}`;
  const local = `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} ${drop}`;
  if (cluster === undefined) return [local];
  const distributed = alterDistributedDdl(dialect, database, table, cluster, EVENTS_SHARDING_KEY, drop);
  return dialect === "current" ? [...distributed, local] : [local, ...distributed];
}

/**
 * Current ClickHouse: the mutation writing the column into the parts stored before it existed
 * (they compute it at every read until then). 18.16 has no such ALTER: see fillPartitionsQuery.
 */
export function materializeColumnDdl(database: string, table: string, column: string, cluster?: string): string {
  return `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} MATERIALIZE COLUMN ${quoteIdent(column)}`;
}

/**
 * 18.16: the partitions (column `partition`, as system.parts gives it) holding an active part
 * without the column. Rewriting each with OPTIMIZE ... FINAL (optimizePartitionDdl) writes the
 * column (18.16 refuses an UPDATE of a MATERIALIZED column); it also collapses retries, as a
 * merge does, and costs a rewrite of the partition. On a `cluster`, of `<table>_local` on every
 * shard (one replica of each answers; the IN subquery runs on that server, on its own parts).
 */
export function fillPartitionsQuery(database: string, table: string, column: string, cluster?: string): string {
  const where = `database = ${quoteString(database)} AND table = ${quoteString(storageName(table, cluster))} AND active`;
  const parts = cluster === undefined ? "system.parts" : `cluster(${quoteString(cluster)}, system, parts)`;
  return `SELECT DISTINCT partition FROM ${parts}
WHERE ${where} AND name NOT IN (SELECT name FROM system.parts_columns WHERE ${where} AND column = ${quoteString(column)})
ORDER BY partition`;
}

/** `OPTIMIZE TABLE ... PARTITION <p> FINAL` for a month partition (YYYYMM, as the events table's). Throws on another shape. */
export function optimizePartitionDdl(database: string, table: string, partition: string, cluster?: string): string {
  if (!/^\d{6}$/.test(partition)) throw new Error(`not a month partition: ${partition}`);
  return `OPTIMIZE TABLE ${quoteIdent(database)}.${quoteIdent(storageName(table, cluster))}${onCluster(cluster)} PARTITION ${partition} FINAL`;
}

/** The materialized key columns of a table: name, type, expression (system.columns). */
export function materializedColumnsQuery(database: string, table: string): string {
  return `SELECT name, type, default_kind AS kind, default_expression AS expression FROM system.columns
WHERE database = ${quoteString(database)} AND table = ${quoteString(table)} AND default_kind IN ('MATERIALIZED', 'DEFAULT')
  AND match(name, '^(prop|trait|ctx)_')
ORDER BY name`;
}

/**
 * Rows read per block by keyTypesSeenQuery: each row of catalog_shapes may hold a list of up to
 * 600 keys (200 per object), so ClickHouse's default of 65,536 rows a block could mean hundreds of
 * MB in one block; 1,024 keeps a block to a few MB (measured on chdb 26.9: 100,000 shapes of 100
 * keys passed under a 50 MB limit, where merging every shape failed under 200 MB).
 */
const KEY_TYPES_BLOCK_ROWS = 1024;

/**
 * The JSON types one key of `source` was seen with in every workspace, within memory bounded by
 * the shapes that hold that key, not by the whole catalog (issue 46, row 4): each stored row's key
 * list is read on its own (finalizeAggregation, a block of KEY_TYPES_BLOCK_ROWS rows at a time)
 * and only the shapes listing the key are kept, with its type's code letter (a shape is the hash
 * of its list, so any row of it, listed or not, joins them); the rest is one group per type.
 * Columns: code (TYPE_CODES' letter), messages (uniqMerge of the shapes' counts: a message counts
 * once) and workspaces (UInt64: a number or a decimal string, by engine). Works on 18.16 and
 * current ClickHouse; keyTypesSeen turns the letters into type names.
 */
export function keyTypesSeenQuery(database: string, source: PropertySource, key: string): string {
  const entries = Object.values(TYPE_CODES).map((code) => quoteString(`${SOURCE_CODES[source]}${code}${key}`));
  const shapes = `${quoteIdent(database)}.${quoteIdent(CATALOG_TABLE)}`;
  return `SELECT code, uniqMerge(count) AS messages, uniqExact(workspace_id) AS workspaces
FROM ${shapes}
ANY INNER JOIN (
  SELECT shape, any(substring(entry, 2, 1)) AS code
  FROM (
    SELECT shape, arrayJoin(arrayFilter(e -> has([${entries.join(", ")}], e), finalizeAggregation(keys))) AS entry
    FROM ${shapes}
  )
  GROUP BY shape
) AS holding USING shape
GROUP BY code
ORDER BY messages DESC, code
SETTINGS max_block_size = ${KEY_TYPES_BLOCK_ROWS}`;
}

/** The rows of keyTypesSeenQuery as types seen, with numbers; a letter TYPE_CODES does not know is left out. Pure. */
export function keyTypesSeen(rows: readonly { code: string; messages: number | string; workspaces: number | string }[]): KeyTypeSeen[] {
  const names = new Map(Object.entries(TYPE_CODES).map(([name, code]) => [code as string, name]));
  return rows.flatMap((r) => {
    const type = names.get(r.code);
    return type === undefined ? [] : [{ type, messages: Number(r.messages), workspaces: Number(r.workspaces) }];
  });
}

/**
 * The column type for a key materialized without `--type`, from the JSON types the catalog saw
 * for it in every workspace (keyTypesSeenQuery): one type besides null decides (number: Float64,
 * boolean: UInt8, string, object or array: String). Two or more, or none, is an error value
 * naming them with their messages and workspaces: one message from any writeKey holder must not
 * choose every workspace's column, so the operator chooses with --type. Pure.
 */
export function columnTypeFor(
  source: PropertySource,
  key: string,
  seen: readonly KeyTypeSeen[],
): { ok: true; type: ColumnType } | { ok: false; error: string } {
  const values = seen.filter((s) => s.type !== "null");
  if (values.length === 1) {
    const only = values[0]!.type;
    return { ok: true, type: only === "number" ? "Float64" : only === "boolean" ? "UInt8" : "String" };
  }
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const listed = seen.map((s) => `${s.type} (${plural(s.messages, "message")}, ${plural(s.workspaces, "workspace")})`).join(", ");
  const saw = seen.length === 0 ? "no value of it" : values.length === 0 ? `only ${listed}` : `${values.length} JSON types: ${listed}`;
  return {
    ok: false,
    error:
      `${source}.${key}: the catalog saw ${saw}, over all workspaces; no column type is guessed and nothing was changed. ` +
      `Choose one with --type: Float64 or Int64 (numbers; other values read 0), UInt8 (booleans), String (a string's text, any other value's JSON text)`,
  };
}
