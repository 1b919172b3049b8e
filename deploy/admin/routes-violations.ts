/**
 * The admin API's route of a workspace's recent tracking plan violations (issue 51): the messages
 * the plan flagged (`violations` not empty: docs/QUERIES.md "Tracking plan violations"), one per
 * messageId and type under FINAL, newest first by `received_at`, from the events of the last
 * VIOLATIONS_DAYS days (by `event_date`, the sorting day, so only those months are read). Each
 * violation stays the JSON text the ingest stored (`{"path", "keyword", "message"}`).
 */
import { done, refuse, type OpResult } from "../../schemas/admin/result";
import { serverVersion } from "../../schemas/clickhouse/client";
import { type Dialect, dialectFor, quoteIdent, quoteString } from "../../schemas/clickhouse/sql";
import type { AdminCall, AdminRoute } from "./routes";

/** How many days back the route looks (event_date). */
export const VIOLATIONS_DAYS = 30;

/** One flagged message. */
export interface FlaggedMessage {
  messageId: string;
  type: string;
  /** A track's event; a page's or screen's name; '' for the other types. */
  event: string;
  /** ISO 8601 UTC (whole seconds on ClickHouse 18.16). */
  receivedAt: string;
  /** Each a JSON object as text: `{"path": "/properties/total", "keyword": "type", "message": "..."}`. */
  violations: string[];
}

/** GET .../plan/violations: the messages the plan flagged, newest first. */
export interface ViolationList {
  violations: FlaggedMessage[];
}

/** A row as ClickHouse answers it (64-bit integers may come as text). */
interface FlaggedRow {
  message_id: string;
  type: string;
  event: string;
  received_ms: string | number;
  violations: string[];
}

/** The newest `limit` flagged messages of `workspaceId` (see the module comment). Pure. */
export function violationsQuery(dialect: Dialect, database: string, table: string, workspaceId: string, limit: number): string {
  const ms = dialect === "current" ? "toUnixTimestamp64Milli(received_at)" : "toUInt64(toUnixTimestamp(received_at)) * 1000";
  return `SELECT message_id, type, if(type = 'track', event, name) AS event, ${ms} AS received_ms, violations
FROM ${quoteIdent(database)}.${quoteIdent(table)} FINAL
WHERE workspace_id = ${quoteString(workspaceId)} AND event_date >= today() - ${VIOLATIONS_DAYS} AND notEmpty(violations)
ORDER BY received_at DESC, message_id, type
LIMIT ${Math.max(1, Math.min(200, Math.floor(limit)))}`;
}

/** `limit` of the query: 1-200, 50 when absent; undefined when it is not one. Pure. */
export function limitOf(query: AdminCall["query"]): number | undefined {
  if (query.limit === undefined) return 50;
  const limit = Number(query.limit);
  return /^\d+$/.test(query.limit) && limit >= 1 && limit <= 200 ? limit : undefined;
}

/** A row as the answer shows it. Pure. */
export function flaggedMessage(row: FlaggedRow): FlaggedMessage {
  return {
    messageId: row.message_id,
    type: row.type,
    event: row.event,
    receivedAt: new Date(Number(row.received_ms)).toISOString(),
    violations: row.violations,
  };
}

/** The violations route. */
export const VIOLATION_ROUTES: readonly AdminRoute[] = [
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/plan/violations",
    operationId: "plans.violations",
    summary: `Messages the tracking plan flagged, newest first, of the last ${VIOLATIONS_DAYS} days (limit: 1-200, default 50)`,
    scope: "workspace",
    answer: "ViolationList",
    status: 200,
    query: ["limit"],
    handle: async (c, { params, query }): Promise<OpResult<unknown>> => {
      const limit = limitOf(query);
      if (limit === undefined) return refuse(400, "limit is a whole number from 1 to 200", "limit");
      const { sql, database, table } = await c.workspace.plans.sql();
      const dialect = dialectFor(await serverVersion(sql));
      const rows = await sql.rows<FlaggedRow>(violationsQuery(dialect, database, table, params.workspaceId!, limit));
      return done({ violations: rows.map(flaggedMessage) } satisfies ViolationList);
    },
  },
];
