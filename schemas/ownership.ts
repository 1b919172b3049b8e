/**
 * Which existing objects bearing our names are ours, decided from rows of system.tables alone
 * (pure, no I/O). Migrate runs no DDL when any is not ours, so a user's table or view named
 * `users`, `tracks` or `rejected_messages` is never dropped, replaced or written to.
 *
 * Ours, per name (anything else with that name is a conflict):
 * | name                | engine              | and                                          |
 * |---------------------|---------------------|----------------------------------------------|
 * | an analyst view     | View                | its query reads `<database>.<table> FINAL`   |
 * | rejected_messages   | ReplacingMergeTree  | sorting key `workspace_id, rejection_id`     |
 * A view is recognised by what it reads, not by its full text, so views of an older release are
 * still ours and get replaced by the current definition.
 */
import { REJECTED_TABLE, quoteString, reservedTableNames, viewNames } from "./clickhouse";

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
}

/** The system.tables rows for our reserved names in `database` (none when it does not exist). */
export function existingObjectsQuery(database: string): string {
  return `SELECT name, engine, create_table_query, sorting_key FROM system.tables
WHERE database = ${quoteString(database)} AND name IN (${reservedTableNames().map(quoteString).join(", ")})`;
}

/** Sorts the rows of existingObjectsQuery into ours and conflicts. */
export function classifyExisting(rows: readonly TableRow[], database: string, table: string): Ownership {
  const views = new Set(viewNames());
  const ours = new Set<string>();
  const conflicts: string[] = [];
  for (const row of rows) {
    const mine = views.has(row.name)
      ? row.engine === "View" && readsFinal(row.create_table_query, database, table)
      : row.name === REJECTED_TABLE && row.engine === "ReplacingMergeTree" && bare(row.sorting_key) === "workspace_id,rejection_id";
    if (mine) ours.add(row.name);
    else if (views.has(row.name) || row.name === REJECTED_TABLE) conflicts.push(`${database}.${row.name} (${row.engine})`);
  }
  return { ours, conflicts: conflicts.sort() };
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

/** The name an identifier token stands for. */
function unquote(token: string): string {
  const q = token[0];
  if (q !== "`" && q !== '"') return token;
  // one pass, so an escaped backslash before a quote is read as ClickHouse reads it
  return token.slice(1, -1).replace(/\\(.)|``|""/g, (_m: string, c?: string) => c ?? q);
}

/** A sorting key without spaces, parentheses or backquotes: `(a, `b`)` -> `a,b`. */
function bare(key: string): string {
  return key.replace(/[\s()`]/g, "");
}
