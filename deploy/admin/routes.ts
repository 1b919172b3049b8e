/**
 * The admin API's routes (issue 51), one table the server (deploy/admin/api.ts) and the OpenAPI
 * document (deploy/admin/openapi.ts) are both built from, so the document lists exactly what is
 * served. Each route calls the same operation the CLI calls (deploy/commands/*). Scopes:
 *   operator   an operator token only (tokens, the whole audit trail)
 *   workspace  the path's {workspaceId}: an operator token, or that workspace's token
 *   any        any valid token; what it answers is narrowed to what the token may see
 * Answers: the operation's value as JSON, or its refusal (deploy/admin/api.ts AdminError).
 */
import type { ClickHouseClient } from "@clickhouse/client";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import type { AdminBook } from "../../schemas/admin/book";
import { done, refuse, type OpResult } from "../../schemas/admin/result";
import { clientSql } from "../../schemas/clickhouse/client";
import type { WriteKeyEntry } from "../../ingest/admission/keys";
import { mayAccess, type Principal } from "../../ingest/admission/tokens";
import { createWriteKey, listWriteKeys, revokeWriteKey } from "../commands/keys";
import { createAdminToken, listAdminTokens, revokeAdminToken } from "../commands/tokens";
import { readCatalog } from "../commands/catalog";
import { readAudit } from "./audit";
import type { RegulationsContext } from "../commands/regulations";
import type { RegulationRunner } from "../commands/regulations-run";
import { REGULATION_ROUTES } from "./routes-privacy";
import { WORKSPACE_ROUTES, type WorkspaceContext } from "./routes-workspace";
import { HEALTH_ROUTES } from "./routes-health";
import { VIOLATION_ROUTES } from "./routes-violations";
import { DLQ_ROUTES, type DlqContext } from "./routes-dlq";
import { REPLAY_ROUTES, type ReplaysPart } from "./routes-replays";

/** What the routes act on. */
export interface AdminContext {
  kafka: Kafka;
  /** KAFKA_ADMIN_TOPIC. */
  adminTopic: string;
  book: AdminBook;
  configuredKeys: () => WriteKeyEntry[];
  clickhouse: ClickHouseClient;
  database: string;
  log: Logger;
  /** What regulations run with (deploy/commands/regulations.ts). */
  regulations: RegulationsContext;
  /** Runs them in the background of this ingest. */
  runner: RegulationRunner;
  /** What the destination and plan routes act with. */
  workspace: WorkspaceContext;
  /** What the DLQ routes read. */
  dlq: DlqContext;
  /** What the replay routes act with, and the runner of replays in this ingest. */
  replays: ReplaysPart;
}

/** One call of a route: its path parameters, query, parsed JSON body, caller and time. */
export interface AdminCall {
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  body: unknown;
  principal: Principal;
  now: Date;
}

/** One route (see the module comment). */
export interface AdminRoute {
  method: "get" | "post" | "put" | "delete";
  /** OpenAPI form: `/admin/v1/workspaces/{workspaceId}/keys`. */
  path: string;
  /** The operation's name; a change's audit `action`. */
  operationId: string;
  summary: string;
  scope: "operator" | "workspace" | "any";
  /** The request body's schema (a component name), when it takes one. */
  body?: string;
  /** The success answer's schema (a component name) and status. */
  answer: string;
  status: 200 | 201;
  /** Query parameters it reads. */
  query?: string[];
  handle: (c: AdminContext, call: AdminCall) => Promise<OpResult<unknown>>;
  /** The audit `target` of a change: the id of the thing changed. */
  target?: (call: AdminCall, value: unknown) => string;
}

const actorOf = (p: Principal) => p.actor;

/** The routes of keys, tokens, the audit trail and the catalog. */
const CORE_ROUTES: readonly AdminRoute[] = [
  {
    method: "get",
    path: "/admin/v1/workspaces",
    operationId: "workspaces.list",
    summary: "The workspaces that have keys (a workspace token: its own)",
    scope: "any",
    answer: "WorkspaceList",
    status: 200,
    handle: async (c, { principal }) => {
      const counts = new Map<string, number>();
      for (const k of listWriteKeys(c.book, c.configuredKeys())) {
        if (k.revokedAt === undefined && mayAccess(principal, k.workspaceId))
          counts.set(k.workspaceId, (counts.get(k.workspaceId) ?? 0) + 1);
      }
      return done({ workspaces: [...counts].sort().map(([workspaceId, keys]) => ({ workspaceId, keys })) });
    },
  },
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/keys",
    operationId: "keys.list",
    summary: "A workspace's write keys: fingerprint, source, created, last used, revoked",
    scope: "workspace",
    answer: "KeyList",
    status: 200,
    handle: async (c, { params }) => done({ keys: listWriteKeys(c.book, c.configuredKeys(), params.workspaceId) }),
  },
  {
    method: "post",
    path: "/admin/v1/workspaces/{workspaceId}/keys",
    operationId: "keys.create",
    summary: "Create a write key; the key is in this answer only",
    scope: "workspace",
    answer: "CreatedKey",
    status: 201,
    handle: (c, { params, principal, now }) =>
      createWriteKey({ kafka: c.kafka, topic: c.adminTopic }, params.workspaceId!, actorOf(principal), now),
    target: (_call, value) => (value as { key: { keyId: string } }).key.keyId,
  },
  {
    method: "delete",
    path: "/admin/v1/workspaces/{workspaceId}/keys/{keyId}",
    operationId: "keys.revoke",
    summary: "Revoke a write key: every ingest refuses it within seconds",
    scope: "workspace",
    answer: "ListedKey",
    status: 200,
    handle: (c, { params, principal, now }) =>
      revokeWriteKey({ kafka: c.kafka, topic: c.adminTopic }, c.book, c.configuredKeys(), params.keyId!, {
        workspaceId: params.workspaceId!,
        actor: actorOf(principal),
        now,
      }),
    target: ({ params }) => params.keyId!,
  },
  {
    method: "get",
    path: "/admin/v1/tokens",
    operationId: "tokens.list",
    summary: "Every admin token (never the token itself)",
    scope: "operator",
    answer: "TokenList",
    status: 200,
    handle: async (c) => done({ tokens: listAdminTokens(c.book) }),
  },
  {
    method: "post",
    path: "/admin/v1/tokens",
    operationId: "tokens.create",
    summary: "Create an operator or workspace token; the token is in this answer only",
    scope: "operator",
    body: "TokenInput",
    answer: "CreatedToken",
    status: 201,
    handle: (c, { body, principal, now }) => createAdminToken({ kafka: c.kafka, topic: c.adminTopic }, body, actorOf(principal), now),
    target: (_call, value) => (value as { listed: { tokenId: string } }).listed.tokenId,
  },
  {
    method: "delete",
    path: "/admin/v1/tokens/{tokenId}",
    operationId: "tokens.revoke",
    summary: "Revoke a token: refused by every ingest within seconds",
    scope: "operator",
    answer: "ListedToken",
    status: 200,
    handle: (c, { params, principal, now }) =>
      revokeAdminToken({ kafka: c.kafka, topic: c.adminTopic }, c.book, params.tokenId!, actorOf(principal), now),
    target: ({ params }) => params.tokenId!,
  },
  {
    method: "get",
    path: "/admin/v1/audit",
    operationId: "audit.list",
    summary: "The audit trail, newest first (filters: workspaceId, actor, action, since, limit)",
    scope: "operator",
    answer: "AuditList",
    status: 200,
    query: ["workspaceId", "actor", "action", "since", "limit"],
    handle: async (c, { query }) => auditOf(c, query, query.workspaceId),
  },
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/audit",
    operationId: "audit.workspace",
    summary: "A workspace's audit trail, newest first (filters: actor, action, since, limit)",
    scope: "workspace",
    answer: "AuditList",
    status: 200,
    query: ["actor", "action", "since", "limit"],
    handle: async (c, { params, query }) => auditOf(c, query, params.workspaceId),
  },
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/catalog",
    operationId: "catalog.read",
    summary: "What has arrived: each event, and each key of properties, traits and context with its types",
    scope: "workspace",
    answer: "Catalog",
    status: 200,
    handle: async (c, { params }) => done(await readCatalog(clientSql(c.clickhouse), c.database, params.workspaceId)),
  },
];

/** Every route, in the order the document lists them. */
export const ADMIN_ROUTES: readonly AdminRoute[] = [
  ...CORE_ROUTES,
  ...WORKSPACE_ROUTES,
  ...REPLAY_ROUTES,
  ...HEALTH_ROUTES,
  ...VIOLATION_ROUTES,
  ...REGULATION_ROUTES,
  ...DLQ_ROUTES,
];

async function auditOf(c: AdminContext, query: AdminCall["query"], workspaceId: string | undefined): Promise<OpResult<unknown>> {
  const limit = query.limit === undefined ? 100 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000) return refuse(400, "limit is a whole number from 1 to 1000", "limit");
  const since = query.since === undefined ? undefined : isoTime(query.since);
  if (since === null) return refuse(400, "since is an ISO 8601 time (2026-11-29T12:00:00Z)", "since");
  const rows = await readAudit(c.clickhouse, c.database, {
    limit,
    ...(workspaceId === undefined ? {} : { workspaceId }),
    ...(query.actor === undefined ? {} : { actor: query.actor }),
    ...(query.action === undefined ? {} : { action: query.action }),
    ...(since === undefined ? {} : { since }),
  });
  return done({ entries: rows });
}

/** An ISO 8601 date or time as UTC ISO text, or null when it is not one (or is out of range). */
export function isoTime(text: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}
