/**
 * Writing and reading the audit trail (schemas/clickhouse/audit.ts `admin_audit`): one row per
 * change made through the admin API or the CLI. Secrets never reach it: the parameters kept are
 * the request's, less every member named in SECRET_FIELDS, at any depth.
 */
import { randomUUID } from "node:crypto";
import type { ClickHouseClient } from "@clickhouse/client";
import type { Logger } from "pino";
import { AUDIT_TABLE, auditQuery, type AuditFilter, type AuditRow } from "../../schemas/clickhouse/audit";
import { clientSql } from "../../schemas/clickhouse/client";
import { quoteIdent } from "../../schemas/clickhouse/sql";

/** Members left out of an audited request's parameters (a destination's shared secret, its headers' values, a plan's schemas are kept whole). */
export const SECRET_FIELDS = new Set(["secret", "token", "writeKey", "password", "authorization", "headers"]);

/** Most characters of parameters kept in a row (a plan can be large: its start tells what changed). */
export const AUDIT_PARAMS_CHARS = 16_384;

/** What one change was: who, what, from where, how it ended. */
export interface AuditEntry {
  actor: string;
  scope: "operator" | "workspace";
  workspaceId: string;
  action: string;
  target: string;
  params: unknown;
  status: number;
  sourceIp: string;
  userAgent: string;
}

/** `params` without its secrets (SECRET_FIELDS), as JSON cut to AUDIT_PARAMS_CHARS. Pure. */
export function auditParams(params: unknown): string {
  const text = JSON.stringify(params ?? {}, (key, value: unknown) => (SECRET_FIELDS.has(key) ? "(left out)" : value)) ?? "{}";
  return text.length > AUDIT_PARAMS_CHARS ? `${text.slice(0, AUDIT_PARAMS_CHARS)}…` : text;
}

/** The row of an entry, stamped `now`. Pure. */
export function auditRow(entry: AuditEntry, now: Date): AuditRow {
  return {
    audit_id: randomUUID(),
    at: now.toISOString(),
    actor: entry.actor,
    scope: entry.scope,
    workspace_id: entry.workspaceId,
    action: entry.action,
    target: entry.target,
    params: auditParams(entry.params),
    status: entry.status,
    source_ip: entry.sourceIp,
    user_agent: entry.userAgent.slice(0, 512),
  };
}

/**
 * Writes one entry. A change is made before it is audited (the answer says what happened); when
 * ClickHouse refuses the row it is logged whole at error level, so the trail has it in the logs,
 * and `false` is returned (the API then sets `X-Audit: unwritten`). Never throws.
 */
export async function writeAudit(client: ClickHouseClient, database: string, entry: AuditEntry, log: Logger): Promise<boolean> {
  const row = auditRow(entry, new Date());
  try {
    await client.insert({
      table: `${quoteIdent(database)}.${quoteIdent(AUDIT_TABLE)}`,
      values: [row],
      format: "JSONEachRow",
      clickhouse_settings: { date_time_input_format: "best_effort" },
    });
    return true;
  } catch (error) {
    log.error({ err: error, audit: row }, "audit row not written to ClickHouse: it is this log line");
    return false;
  }
}

/** The newest audit rows passing `filter`. Throws on ClickHouse errors. */
export async function readAudit(client: ClickHouseClient, database: string, filter: AuditFilter): Promise<AuditRow[]> {
  const rows = await clientSql(client).rows<AuditRow>(auditQuery(database, filter));
  return rows.map((r) => ({ ...r, status: Number(r.status) }));
}
