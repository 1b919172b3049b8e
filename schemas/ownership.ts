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
 * A view is recognised by what it reads, not by its full text, so views of an older release are
 * still ours and get replaced by the current definition.
 */
import {
  IDENTITIES_MV,
  IDENTITIES_TABLE,
  MIGRATIONS_TABLE,
  REJECTED_TABLE,
  USERS_MV,
  USERS_TABLE,
  quoteString,
  reservedTableNames,
  viewNames,
} from "./clickhouse";

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

/** Sorts the rows of existingObjectsQuery into ours and conflicts. */
export function classifyExisting(rows: readonly TableRow[], database: string, table: string): Ownership {
  const views = new Set(viewNames());
  const reserved = new Set(reservedTableNames());
  const ours = new Set<string>();
  const conflicts: string[] = [];
  let usersIsView = false;
  for (const row of rows) {
    if (!reserved.has(row.name)) continue;
    const finalView = row.engine === "View" && readsFinal(row.create_table_query, database, table);
    const key = bare(row.sorting_key);
    let mine: boolean;
    if (views.has(row.name)) mine = finalView;
    else if (row.name === USERS_TABLE) {
      usersIsView = finalView;
      mine = finalView || (row.engine === "AggregatingMergeTree" && key === "workspace_id,user_id");
    } else if (row.name === IDENTITIES_TABLE) mine = row.engine === "AggregatingMergeTree" && key === "workspace_id,anonymous_id,user_id";
    else if (row.name === USERS_MV || row.name === IDENTITIES_MV) {
      const target = row.name === USERS_MV ? USERS_TABLE : IDENTITIES_TABLE;
      mine = row.engine === "MaterializedView" && feedsFrom(row.create_table_query, database, table, target);
    } else if (row.name === REJECTED_TABLE) mine = row.engine === "ReplacingMergeTree" && key === "workspace_id,rejection_id";
    else mine = row.name === MIGRATIONS_TABLE && row.engine === "MergeTree" && key === "step";
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
  for (const m of code.matchAll(FROM_TABLE)) {
    if (unquote(m[1]!) === database && unquote(m[2]!) === table) return true;
  }
  return false;
}

/** The name an identifier token stands for. */
function unquote(token: string): string {
  const q = token[0];
  if (q !== "`" && q !== '"') return token;
  // one pass, so an escaped backslash before a quote is read as ClickHouse reads it
  return token.slice(1, -1).replace(/\\(.)|``|""/g, (_m: string, c?: string) => c ?? q);
}

/** A sorting key without spaces, parentheses or backquotes: `(a, `b`)` -> `a,b`. */
export function bare(key: string): string {
  return key.replace(/[\s()`]/g, "");
}
