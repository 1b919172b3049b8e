/**
 * The ingest's admin app and server, on a port of their own (INGEST_METRICS_PORT): GET /metrics
 * from ingest/metrics.ts's registry, and the live view's routes. Apart from the public app
 * (ingest/http/app.ts): other timeouts, its own connection cap, nothing a writeKey reaches.
 */
import { createServer, type Server } from "node:http";
import Router from "@koa/router";
import Koa from "koa";
import type { IngestMetrics } from "../metrics";

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
