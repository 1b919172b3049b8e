/**
 * `admin_audit`: every change made through the admin API or the CLI (issue 51), one row each:
 * who (the token's id, its scope), when, what (`action`, the thing changed, the request's
 * parameters with every secret left out), from where (the client address and user agent; `cli`
 * and the OS user for the CLI), and how it ended (`status`: the HTTP status the API answered, 0
 * when the change threw). Plain MergeTree, never deduplicated: a change retried is two rows.
 * Times are DateTime64(3) on current ClickHouse, DateTime on 18.16 (TYPES), written as ISO 8601
 * read with `date_time_input_format=best_effort`.
 */
import { type Dialect, TYPES, distributedDdl, engine, onCluster, quoteIdent, quoteString, storageName } from "./sql";

/** The table's name. */
export const AUDIT_TABLE = "admin_audit";

/** Its sorting key, as system.tables shows it (deploy/setup/ownership.ts). */
export const AUDIT_SORTING_KEY = "workspace_id,at,audit_id";

/** One row of `admin_audit` (JSONEachRow; `at` ISO 8601 UTC). */
export interface AuditRow {
  audit_id: string;
  at: string;
  /** The token's id (`operator` for ADMIN_TOKEN; `cli:<user>` from the CLI). */
  actor: string;
  /** `operator` or `workspace`. */
  scope: string;
  /** The workspace changed; '' for what has none (an operator token). */
  workspace_id: string;
  /** `<resource>.<verb>`: keys.create, tokens.revoke, destinations.add, plans.apply, regulations.create, dlq.replay... */
  action: string;
  /** The id of the thing changed (a key's fingerprint, a destinationId, a regulateId), '' when none. */
  target: string;
  /** The request's parameters as JSON, secrets left out. */
  params: string;
  /** The answer's HTTP status (the CLI: 200 done, 400/404/409 refused); 0 when the change threw. */
  status: number;
  /** The client's address (`cli` from the CLI). */
  source_ip: string;
  user_agent: string;
}

/**
 * `CREATE TABLE IF NOT EXISTS admin_audit` (and, on a cluster, `_local` replicated with a
 * Distributed table over it, sharded by workspace).
 */
export function auditTableDdl(dialect: Dialect, database: string, cluster?: string): string[] {
  const t = TYPES[dialect];
  const local = storageName(AUDIT_TABLE, cluster);
  const storage = `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  audit_id String,
  at ${t.time},
  actor String,
  scope ${t.lowString},
  workspace_id String,
  action ${t.lowString},
  target String,
  params String,
  status UInt16,
  source_ip String,
  user_agent String
)
ENGINE = ${engine("MergeTree", "", database, local, cluster)}
ORDER BY (workspace_id, at, audit_id)`;
  return cluster === undefined ? [storage] : [storage, distributedDdl(database, AUDIT_TABLE, cluster, "cityHash64(workspace_id)")];
}

/** What an audit query may narrow by; each absent filter keeps every row. */
export interface AuditFilter {
  workspaceId?: string;
  actor?: string;
  action?: string;
  /** ISO 8601 UTC (`2026-11-29T12:00:00.000Z`); `at >= since`. */
  since?: string;
  /** Rows returned at most (1-1000). */
  limit: number;
}

/** The newest rows of `admin_audit` that pass `filter`, newest first, as JSONEachRow. */
export function auditQuery(database: string, filter: AuditFilter): string {
  const where = [
    filter.workspaceId === undefined ? undefined : `workspace_id = ${quoteString(filter.workspaceId)}`,
    filter.actor === undefined ? undefined : `actor = ${quoteString(filter.actor)}`,
    filter.action === undefined ? undefined : `action = ${quoteString(filter.action)}`,
    filter.since === undefined ? undefined : `at >= parseDateTimeBestEffort(${quoteString(filter.since)})`,
  ].filter((w) => w !== undefined);
  const limit = Math.max(1, Math.min(1_000, Math.floor(filter.limit)));
  return `SELECT audit_id, at, actor, scope, workspace_id, action, target, params, status, source_ip, user_agent
FROM ${quoteIdent(database)}.${quoteIdent(AUDIT_TABLE)}
${where.length > 0 ? `WHERE ${where.join(" AND ")}\n` : ""}ORDER BY at DESC, audit_id DESC
LIMIT ${limit}`;
}
