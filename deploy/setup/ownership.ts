/**
 * Which existing objects bearing our names are ours, decided from rows of system.tables alone
 * (pure, no I/O). Migrate runs no DDL when any is not ours, so a user's table or view named
 * `users`, `tracks` or `rejected_messages` is never dropped, replaced or written to.
 *
 * Ours, per name (anything else with that name is a conflict):
 * | name                | engine               | and                                               |
 * |---------------------|----------------------|---------------------------------------------------|
 * | a per-type view     | View                 | its query reads `<database>.<table> FINAL`        |
 * | users               | AggregatingMergeTree | sorting key `workspace_id, user_id`               |
 * | users (older)       | View                 | reads `<database>.<table> FINAL` (replaced)       |
 * | identities          | AggregatingMergeTree | sorting key `workspace_id, anonymous_id, user_id` |
 * | users_mv, ..._mv    | MaterializedView     | `TO <database>.<its table>`, reads `<table>`      |
 * | rejected_messages   | ReplacingMergeTree   | sorting key `workspace_id, rejection_id`          |
 * | schema_migrations   | MergeTree            | sorting key `step`                                |
 * | privacy_requests    | MergeTree            | sorting key `workspace_id, requested_at, request_id` |
 * A view is recognised by what it reads, not by its full text, so views of an older release are
 * still ours and get replaced by the current definition.
 */
import { IDENTITIES_MV, IDENTITIES_TABLE, USERS_MV, USERS_TABLE, viewNames } from "../../schemas/clickhouse/analyst";
import {
  CATALOG_MV,
  CATALOG_SORTING_KEY,
  CATALOG_TABLE,
  EVENT_CATALOG_VIEW,
  PROPERTY_CATALOG_VIEW,
} from "../../schemas/clickhouse/catalog";
import { MIGRATIONS_TABLE, PRIVACY_TABLE, REJECTED_TABLE, reservedTableNames } from "../../schemas/clickhouse/tables";
import { EVENTS_SORTING_KEY } from "../../schemas/clickhouse/events";
import { DELIVERY_FAILURES_TABLE } from "../../schemas/clickhouse/deliveries";
import { AUDIT_SORTING_KEY, AUDIT_TABLE } from "../../schemas/clickhouse/audit";
import { quoteString, storageName } from "../../schemas/clickhouse/sql";

/**
 * One row of system.tables. `create_table_query` exists on 18.16 and on current ClickHouse
 * (`as_select` only on current); both store identifiers backquoted only where needed.
 */
export interface TableRow {
  name: string;
  engine: string;
  create_table_query: string;
  sorting_key: string;
}

/** The verdict: names already ours (to replace or keep), and every conflict as `db.name (engine)`. */
export interface Ownership {
  ours: Set<string>;
  conflicts: string[];
  /** `users` is the view of releases before the users table: ours, to be dropped and replaced. */
  usersIsView: boolean;
}

/** The system.tables rows for `names` (default: our reserved names) in `database` (none when it does not exist). */
export function existingObjectsQuery(database: string, names: readonly string[] = reservedTableNames()): string {
  return `SELECT name, engine, create_table_query, sorting_key FROM system.tables
WHERE database = ${quoteString(database)} AND name IN (${names.map(quoteString).join(", ")})`;
}

/** The names existingObjectsQuery reads on a cluster: the reserved names, `<table>` and `<table>_local`. */
export function clusterObjectNames(table: string, cluster: string): string[] {
  return [...reservedTableNames(cluster), table, storageName(table, cluster)];
}

/**
 * Sorts the rows of existingObjectsQuery into ours and conflicts. On a cluster (rows of
 * clusterObjectNames), `users`, `identities`, `rejected_messages` and `<table>` are ours when
 * Distributed over `<name>_local` on that cluster, and each `_local` table (and
 * schema_migrations) when it is the Replicated form of what the table above requires.
 */
export function classifyExisting(rows: readonly TableRow[], database: string, table: string, cluster?: string): Ownership {
  const views = new Set(viewNames());
  const reserved = new Set(cluster === undefined ? reservedTableNames() : clusterObjectNames(table, cluster));
  const fronts = [USERS_TABLE, IDENTITIES_TABLE, REJECTED_TABLE, PRIVACY_TABLE, CATALOG_TABLE, DELIVERY_FAILURES_TABLE, AUDIT_TABLE, table];
  const feedTargets: Record<string, string> = { [USERS_MV]: USERS_TABLE, [IDENTITIES_MV]: IDENTITIES_TABLE, [CATALOG_MV]: CATALOG_TABLE };
  const local = (name: string) => storageName(name, cluster);
  const ours = new Set<string>();
  const conflicts: string[] = [];
  let usersIsView = false;
  for (const row of rows) {
    if (!reserved.has(row.name)) continue;
    // On a cluster, judge a `_local` table as the table it stores, by its engine without `Replicated`.
    let name = row.name;
    let engine = row.engine;
    let mine: boolean | undefined;
    if (cluster !== undefined) {
      const stores = fronts.find((f) => local(f) === row.name);
      if (fronts.includes(row.name) && stores === undefined)
        mine = row.engine === "Distributed" && readsDistributed(row.create_table_query, cluster, database, local(row.name));
      else if (stores !== undefined || row.name === MIGRATIONS_TABLE) {
        name = stores ?? row.name;
        engine = row.engine.startsWith("Replicated") ? row.engine.slice("Replicated".length) : "";
      }
    }
    const finalView = engine === "View" && readsFinal(row.create_table_query, database, table);
    const key = bare(row.sorting_key);
    if (mine !== undefined) {
      // a Distributed table, judged above
    } else if (views.has(name)) mine = finalView;
    else if (name === USERS_TABLE) {
      usersIsView = finalView;
      mine = finalView || (engine === "AggregatingMergeTree" && key === "workspace_id,user_id");
    } else if (name === IDENTITIES_TABLE) mine = engine === "AggregatingMergeTree" && key === "workspace_id,anonymous_id,user_id";
    else if (name === CATALOG_TABLE) mine = engine === "AggregatingMergeTree" && key === CATALOG_SORTING_KEY;
    else if (name === EVENT_CATALOG_VIEW || name === PROPERTY_CATALOG_VIEW)
      mine = engine === "View" && readsTable(row.create_table_query, database, CATALOG_TABLE);
    else if (feedTargets[name] !== undefined)
      mine = engine === "MaterializedView" && feedsFrom(row.create_table_query, database, local(table), local(feedTargets[name]));
    else if (name === REJECTED_TABLE) mine = engine === "ReplacingMergeTree" && key === "workspace_id,rejection_id";
    else if (name === table) mine = engine === "ReplacingMergeTree" && key === EVENTS_SORTING_KEY;
    else if (name === PRIVACY_TABLE) mine = engine === "MergeTree" && key === "workspace_id,requested_at,request_id";
    else if (name === DELIVERY_FAILURES_TABLE) mine = engine === "ReplacingMergeTree" && key === "destination_id,message_id";
    else if (name === AUDIT_TABLE) mine = engine === "MergeTree" && key === AUDIT_SORTING_KEY;
    else mine = name === MIGRATIONS_TABLE && engine === "MergeTree" && key === "step";
    if (mine) ours.add(row.name);
    else conflicts.push(`${database}.${row.name} (${row.engine})`);
  }
  return { ours, conflicts: conflicts.sort(), usersIsView };
}

/** The one message migrate throws when objects with our names are not ours. */
export function conflictMessage(conflicts: readonly string[]): string {
  return (
    `ClickHouse left unchanged: ${conflicts.join(", ")} bear names setup creates, but setup did not create them; ` +
    "rename or drop them, or set CLICKHOUSE_DATABASE to another database"
  );
}

/** An identifier as written by ClickHouse: `quoted` (\` or `` escapes), "quoted" or bare. */
const IDENT = '(`(?:[^`\\\\]|\\\\.|``)*`|"(?:[^"\\\\]|\\\\.)*"|[A-Za-z_][A-Za-z0-9_]*)';
const FROM_FINAL = new RegExp(`\\bFROM\\s+${IDENT}\\s*\\.\\s*${IDENT}\\s+FINAL\\b`, "gi");

/**
 * Whether a stored CREATE VIEW reads `database.table FINAL`. String literals are blanked first, so
 * a view merely mentioning that text in a literal does not count.
 */
export function readsFinal(createQuery: string, database: string, table: string): boolean {
  const code = createQuery.replace(/'(?:[^'\\]|\\.)*'/g, "''");
  for (const m of code.matchAll(FROM_FINAL)) {
    if (unquote(m[1]!) === database && unquote(m[2]!) === table) return true;
  }
  return false;
}

const TO_TARGET = new RegExp(`\\bTO\\s+${IDENT}\\s*\\.\\s*${IDENT}`, "i");
const FROM_TABLE = new RegExp(`\\bFROM\\s+${IDENT}\\s*\\.\\s*${IDENT}`, "gi");

/** Whether a stored CREATE MATERIALIZED VIEW writes `TO database.target` and reads `database.table`. */
export function feedsFrom(createQuery: string, database: string, table: string, target: string): boolean {
  const code = createQuery.replace(/'(?:[^'\\]|\\.)*'/g, "''");
  const to = TO_TARGET.exec(code);
  if (!to || unquote(to[1]!) !== database || unquote(to[2]!) !== target) return false;
  return readsTable(code, database, table);
}

/** Whether a stored query reads `database.table` (the catalog views read catalog_shapes). Literals are blanked first. */
export function readsTable(createQuery: string, database: string, table: string): boolean {
  const code = createQuery.replace(/'(?:[^'\\]|\\.)*'/g, "''");
  for (const m of code.matchAll(FROM_TABLE)) {
    if (unquote(m[1]!) === database && unquote(m[2]!) === table) return true;
  }
  return false;
}

const STRING_OR_IDENT = `('(?:[^'\\\\]|\\\\.)*'|${IDENT})`;
const DISTRIBUTED_ARGS = new RegExp(
  `\\bDistributed\\s*\\(\\s*${STRING_OR_IDENT}\\s*,\\s*${STRING_OR_IDENT}\\s*,\\s*${STRING_OR_IDENT}`,
  "i",
);

/** Whether a stored CREATE TABLE is `ENGINE = Distributed(cluster, database, table, ...)`. */
export function readsDistributed(createQuery: string, cluster: string, database: string, table: string): boolean {
  const m = DISTRIBUTED_ARGS.exec(createQuery);
  // each argument is two groups (the argument, then IDENT's own)
  return m !== null && unquote(m[1]!) === cluster && unquote(m[3]!) === database && unquote(m[5]!) === table;
}

/** The name an identifier token (or string literal) stands for. */
function unquote(token: string): string {
  const q = token[0];
  if (q !== "`" && q !== '"' && q !== "'") return token;
  // one pass, so an escaped backslash before a quote is read as ClickHouse reads it
  return token.slice(1, -1).replace(/\\(.)|``|""|''/g, (_m: string, c?: string) => c ?? q);
}

/** A sorting key without spaces, parentheses or backquotes: `(a, `b`)` -> `a,b`. */
export function bare(key: string): string {
  return key.replace(/[\s()`]/g, "");
}
