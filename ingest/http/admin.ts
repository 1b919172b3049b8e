/**
 * The ingest's admin app and server, on a port of their own (INGEST_METRICS_PORT): GET /metrics
 * from ingest/metrics.ts's registry, and the live view's routes. Apart from the public app
 * (ingest/http/app.ts): other timeouts, its own connection cap, nothing a writeKey reaches.
 */
import { createServer, type Server } from "node:http";
import Router from "@koa/router";
import Koa from "koa";
import type { IngestMetrics } from "../metrics";
import { networkOf } from "../admission/networks";
import type { AdminTokens, FailedAttempts, Principal } from "../admission/tokens";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import type { AdminBook } from "../../schemas/admin/book";
import type { WriteKeyEntry } from "../admission/keys";

/**
 * The admin app, on a port of its own (INGEST_METRICS_PORT): GET /metrics (Prometheus text) and
 * the routes of `extra` (the live view, ingest/live/routes.ts).
 */
export function metricsApp(metrics: IngestMetrics, ...extra: Router[]): Koa {
  const app = new Koa();
  const router = new Router();
  router.get("/metrics", async (ctx) => {
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  app.use(router.routes());
  for (const more of extra) app.use(more.routes()).use(more.allowedMethods());
  return app;
}

/**
 * The admin port's timeouts, ms: whole headers within, whole request within (a stream's answer
 * is not bounded: only the request), idle keep-alive. Fixed, not settings: its clients are a
 * Prometheus scrape, the live page and a test suite, all quick to ask (issue 46 row 6: Node's
 * defaults let a client hold a connection 300 s without finishing its request).
 */
export const ADMIN_TIMEOUTS = { headersMs: 10_000, requestMs: 15_000, keepAliveMs: 5_000 };

/**
 * The admin app's HTTP server, not yet listening: ADMIN_TIMEOUTS (checked every second), and at
 * most `maxConnections` connections at once (INGEST_METRICS_MAX_CONNECTIONS): past it Node closes
 * each new connection as it arrives, so idle or slow clients cannot pile up on the event loop the
 * public API shares.
 */
export function adminServer(app: Koa, maxConnections: number): Server {
  const server = createServer(
    {
      headersTimeout: ADMIN_TIMEOUTS.headersMs,
      requestTimeout: ADMIN_TIMEOUTS.requestMs,
      keepAliveTimeout: ADMIN_TIMEOUTS.keepAliveMs,
      connectionsCheckingInterval: 1_000,
    },
    app.callback(),
  );
  server.maxConnections = maxConnections;
  return server;
}

/** Checks a request of the admin port: its principal, or undefined once it has answered 401 or 429. */
export type AdminGuard = (ctx: Koa.Context) => Principal | undefined;

/**
 * The admin port's authentication (ingest/admission/tokens.ts): `Authorization: Bearer <token>`,
 * ADMIN_TOKEN or a created token. A network past its failed attempts is answered 429 with
 * Retry-After before its token is looked at; a missing, unknown or revoked token 401 with
 * WWW-Authenticate (one answer for all three, so a revoked token is not told apart). The client's
 * address is the socket's: the admin port is never behind the public load balancer.
 */
export function adminGuard(tokens: AdminTokens, failures: FailedAttempts, now: () => number = Date.now): AdminGuard {
  return (ctx) => {
    const network = networkOf(ctx.req.socket.remoteAddress ?? "");
    const room = failures.mayTry(network, now());
    if (!room.ok) {
      ctx.status = 429;
      ctx.set("Retry-After", String(room.retryAfterSeconds));
      ctx.body = { error: "too_many_failures", message: "too many failed attempts from this network; wait and try again" };
      return undefined;
    }
    const auth = tokens.authenticate(ctx.get("Authorization") || undefined);
    if (auth.ok) return auth.principal;
    if (auth.reason !== "missing" && auth.reason !== "off") failures.failed(network, now());
    ctx.status = 401;
    ctx.set("WWW-Authenticate", 'Bearer realm="admin"');
    ctx.body = {
      error: "unauthorized",
      message:
        auth.reason === "off"
          ? "the admin API is off: set ADMIN_TOKEN"
          : "send Authorization: Bearer <token> (ADMIN_TOKEN or a token made with it)",
    };
    return undefined;
  };
}

/** What the ingest gives the admin API it hosts (deploy/admin/): its Kafka client, the admin topic as read, its guard, the keys of its settings. */
export interface AdminParts {
  kafka: Kafka;
  book: AdminBook;
  guard: AdminGuard;
  /** The keys of WRITE_KEYS and the keys file, as last read. */
  configuredKeys: () => WriteKeyEntry[];
  log: Logger;
}

/** Adds routes to the admin port; `stop` runs before the ingest's Kafka clients disconnect. Throws: the ingest does not start. */
export type AdminExtension = (parts: AdminParts) => Promise<{ routers: Router[]; stop: () => Promise<void> }>;
