/**
 * The admin API's server side: a router for the ingest's admin port (ingest/http/admin.ts
 * AdminExtension) built from ADMIN_ROUTES (deploy/admin/routes.ts). For each call, in order:
 * the token (ingest/http/admin.ts adminGuard: 401, or 429 for a network past its failed
 * attempts), the route's scope (403: an operator route for a workspace token, or another
 * workspace's path), then, for a route that takes one, the JSON body (415 for a body of another
 * type, 413 past ADMIN_BODY_LIMIT, 400 for bad JSON; a route that takes none never reads it), the
 * operation, then for a change (any method but GET) the audit row (deploy/admin/audit.ts). An
 * operation's refusal is answered with its status and an AdminError naming the field; a thrown
 * error (Kafka or ClickHouse unreachable) 503, logged. A method a path does not serve is 405 with
 * Allow (OPTIONS: 204 with Allow), whatever the method. GET /admin/v1/openapi.json is open: it
 * holds no data.
 */
import { METHODS } from "node:http";
import Router from "@koa/router";
import bodyParser from "koa-bodyparser";
import type Koa from "koa";
import { tags } from "typia";
import type { AdminGuard } from "../../ingest/http/admin";
import { mayAccess, type Principal } from "../../ingest/admission/tokens";
import type { FieldIssue, OpResult } from "../../schemas/admin/result";
import { ADMIN_ROUTES, type AdminCall, type AdminContext, type AdminRoute } from "./routes";
import { writeAudit } from "./audit";

/** Largest JSON body the admin API reads (a tracking plan is the largest it takes). */
export const ADMIN_BODY_LIMIT = "2mb";

/** Every refusal of the admin API. */
export interface AdminError {
  /**
   * bad_request, unauthorized, forbidden, not_found, method_not_allowed, conflict,
   * payload_too_large, unsupported_media_type, unavailable, too_many_failures.
   */
  error: string;
  message: string;
  /** The input field at fault, when one is. */
  field?: string;
  issues?: FieldIssue[];
}

/** The HTTP status of each refusal code. */
const CODES: Record<number, string> = { 400: "bad_request", 403: "forbidden", 404: "not_found", 409: "conflict", 503: "unavailable" };

/** Whether `principal` may call `route` with `params` (see the module comment). Pure. */
export function allowed(route: Pick<AdminRoute, "scope">, principal: Principal, params: Record<string, string>): boolean {
  if (route.scope === "operator") return principal.kind === "operator";
  if (route.scope === "workspace") return params.workspaceId !== undefined && mayAccess(principal, params.workspaceId);
  return true;
}

/** The router of ADMIN_ROUTES and the document, acting on `c`, authenticating with `guard`. */
export function adminRouter(c: AdminContext, guard: AdminGuard, openapi: object): Router {
  const router = new Router();
  router.get("/admin/v1/openapi.json", (ctx) => {
    ctx.body = openapi;
  });
  const parse = bodyParser({ enableTypes: ["json"], jsonLimit: ADMIN_BODY_LIMIT, strict: true });
  for (const route of ADMIN_ROUTES) {
    const admit = async (ctx: Koa.Context, next: Koa.Next) => {
      const principal = guard(ctx);
      if (principal === undefined) return;
      if (!allowed(route, principal, ctx.params))
        return answer(ctx, 403, { error: "forbidden", message: "this token may not do this here" });
      (ctx.state as { principal?: Principal }).principal = principal;
      await next();
    };
    const body = route.body === undefined ? [] : [refusals, jsonOnly, parse];
    router[route.method](koaPath(route.path), admit, ...body, (ctx) =>
      serve(c, route, ctx, (ctx.state as { principal: Principal }).principal),
    );
  }
  for (const [path, served] of servedMethods([{ path: "/admin/v1/openapi.json", method: "get" }, ...ADMIN_ROUTES])) {
    const others = METHODS.filter((m) => m !== "CONNECT" && !served.includes(m));
    router.register(koaPath(path), others, (ctx) => {
      ctx.set("Allow", served.join(", "));
      if (ctx.method === "OPTIONS") return void (ctx.status = 204);
      answer(ctx, 405, { error: "method_not_allowed", message: `${path} answers ${served.join(", ")}` });
    });
  }
  return router;
}

/** koa-router's form of an OpenAPI path: `{workspaceId}` as `:workspaceId`. */
const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

/** Each path of `routes` and the methods served on it, upper case, HEAD with GET. Pure. */
export function servedMethods(routes: readonly Pick<AdminRoute, "path" | "method">[]): Map<string, string[]> {
  const methods = new Map<string, string[]>();
  for (const { path, method } of routes) {
    const served = methods.get(path) ?? [];
    served.push(method.toUpperCase(), ...(method === "get" ? ["HEAD"] : []));
    methods.set(path, served);
  }
  return methods;
}

/** A body that is not JSON (by its Content-Type) is answered 415 before it is read; no body passes. */
async function jsonOnly(ctx: Koa.Context, next: Koa.Next): Promise<void> {
  if (ctx.is("application/json") === false) {
    return answer(ctx, 415, { error: "unsupported_media_type", message: "send the body as Content-Type: application/json", field: "body" });
  }
  await next();
}

async function serve(c: AdminContext, route: AdminRoute, ctx: Koa.Context, principal: Principal): Promise<void> {
  const query = Object.fromEntries((route.query ?? []).map((name) => [name, one(ctx.query[name])]));
  const call: AdminCall = { params: { ...ctx.params }, query, body: (ctx.request as { body?: unknown }).body, principal, now: new Date() };
  let result: OpResult<unknown>;
  try {
    result = await route.handle(c, call);
  } catch (error) {
    c.log.error({ err: error, operation: route.operationId }, "admin operation failed");
    await audit(c, route, ctx, call, 0, "");
    return answer(ctx, 503, { error: "unavailable", message: "Kafka or ClickHouse did not answer; nothing may have changed: try again" });
  }
  const status = result.ok ? route.status : result.status;
  const target = result.ok && route.target ? route.target(call, result.value) : (call.params.keyId ?? call.params.tokenId ?? "");
  if (route.method !== "get" && !(await audit(c, route, ctx, call, status, target))) ctx.set("X-Audit", "unwritten");
  if (result.ok) return answer(ctx, status, result.value);
  const { error, field, issues } = result;
  answer(ctx, status, {
    error: CODES[status] ?? "bad_request",
    message: error,
    ...(field ? { field } : {}),
    ...(issues ? { issues } : {}),
  });
}

function audit(c: AdminContext, route: AdminRoute, ctx: Koa.Context, call: AdminCall, status: number, target: string): Promise<boolean> {
  const workspaceId = call.params.workspaceId ?? (call.principal.kind === "workspace" ? call.principal.workspaceId : "");
  return writeAudit(
    c.clickhouse,
    c.database,
    {
      actor: call.principal.actor,
      scope: call.principal.kind,
      workspaceId,
      action: route.operationId,
      target,
      params: { ...call.params, ...(call.body === undefined ? {} : { body: call.body }) },
      status,
      sourceIp: ctx.req.socket.remoteAddress ?? "",
      userAgent: ctx.get("User-Agent"),
    },
    c.log,
  );
}

function answer(ctx: Koa.Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.body = body;
  ctx.set("Cache-Control", "no-store");
}

/** koa-bodyparser's refusals (bad JSON, too large, an unknown charset or encoding) as AdminErrors. */
async function refusals(ctx: Koa.Context, next: Koa.Next): Promise<void> {
  try {
    await next();
  } catch (error) {
    const status = (error as { status?: number }).status ?? 500;
    if (status >= 500) throw error;
    const code = status === 413 ? "payload_too_large" : status === 415 ? "unsupported_media_type" : "bad_request";
    const reason: AdminError = { error: code, message: (error as Error).message, field: "body" };
    answer(ctx, status, reason);
  }
}

function one(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text === "" ? undefined : text;
}

/** A count, as the document states it (typia tags). */
export type Count = number & tags.Type<"uint32">;
