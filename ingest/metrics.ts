/**
 * Prometheus metrics of the ingest (prom-client), on its own registry. Names follow
 * `ingest_<noun>_<unit>`; labels are route, status and topic only, never a writeKey, workspace
 * or user id (unbounded and sensitive).
 */
import { createServer, type Server } from "node:http";
import Router from "@koa/router";
import Koa from "koa";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** The ingest's metrics. */
export interface IngestMetrics {
  registry: Registry;
  /** Requests answered, by route pattern and status code. */
  requests: Counter<"route" | "status">;
  /** Time from request arrival to answer, s. */
  requestSeconds: Histogram<"route">;
  /** Time of one sendBatch until the broker's ack (or failure), s. */
  produceSeconds: Histogram<"status">;
  /** Records acknowledged by the broker. */
  recordsProduced: Counter<"topic">;
  /** Requests refused whole, by reason (the error code answered). */
  requestsRefused: Counter<"reason">;
  /**
   * Requests answered 429 before their body was read (keyed in their headers, the workspace's
   * bucket empty), by bucket: `items` (RATE_LIMIT_PER_SECOND) or `bytes` (RATE_LIMIT_BYTES_PER_SECOND).
   */
  requestsUnread: Counter<"bucket">;
  /** Batch items (or single messages) refused and kept in `rejected_messages`. */
  messagesRejected: Counter;
  /** Messages and refused items of suppressed users: answered 2xx, not stored (schemas/privacy/list.ts). */
  messagesSuppressed: Counter;
  /** Messages whose user agent was stored unparsed: its request's parse budget was spent (ingest/enrich.ts). */
  agentsUnparsed: Counter;
  /** Messages stored past their workspace's daily catalog caps, by cap (ingest/catalog.ts CapVerdict). */
  catalogOverCap: Counter<"cap">;
  /** Live view streams open now (ingest/live/routes.ts). */
  liveViewers: Gauge;
  /** Live items not sent to a viewer whose connection held too much unsent. */
  liveDropped: Counter;
}

/** Creates the metrics on a fresh registry, with Node's process metrics prefixed `ingest_`. */
export function ingestMetrics(): IngestMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "ingest_" });
  // 15 and 20 ms: a 20 ms latency objective (issue 28's paced p99) is read off a bucket, not between two.
  const seconds = [0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
  return {
    registry,
    requests: new Counter({
      name: "ingest_requests_total",
      help: "Requests answered, by route and status",
      labelNames: ["route", "status"],
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: "ingest_request_duration_seconds",
      help: "Request latency, arrival to answer",
      labelNames: ["route"],
      buckets: seconds,
      registers: [registry],
    }),
    produceSeconds: new Histogram({
      name: "ingest_produce_duration_seconds",
      help: "sendBatch latency until the broker's ack",
      labelNames: ["status"],
      buckets: seconds,
      registers: [registry],
    }),
    recordsProduced: new Counter({
      name: "ingest_records_produced_total",
      help: "Records acknowledged by Kafka (acks=all)",
      labelNames: ["topic"],
      registers: [registry],
    }),
    requestsRefused: new Counter({
      name: "ingest_requests_refused_total",
      help: "Requests refused, by error code",
      labelNames: ["reason"],
      registers: [registry],
    }),
    requestsUnread: new Counter({
      name: "ingest_requests_unread_total",
      help: "Requests answered 429 before their body was read, by rate limit bucket (items, bytes)",
      labelNames: ["bucket"],
      registers: [registry],
    }),
    messagesRejected: new Counter({
      name: "ingest_messages_rejected_total",
      help: "Messages refused and kept in rejected_messages",
      registers: [registry],
    }),
    messagesSuppressed: new Counter({
      name: "ingest_messages_suppressed_total",
      help: "Messages and refused items of suppressed users, accepted and not stored",
      registers: [registry],
    }),
    agentsUnparsed: new Counter({
      name: "ingest_user_agents_unparsed_total",
      help: "Messages stored without browser and OS: their request's user agent parse budget was spent",
      registers: [registry],
    }),
    catalogOverCap: new Counter({
      name: "ingest_catalog_over_cap_total",
      help: "Messages stored but counted in the catalog's over-cap row: their workspace's daily cap of new names or shapes was reached, by cap",
      labelNames: ["cap"],
      registers: [registry],
    }),
    liveViewers: new Gauge({ name: "ingest_live_viewers", help: "Live view streams open now", registers: [registry] }),
    liveDropped: new Counter({
      name: "ingest_live_dropped_total",
      help: "Live items skipped for viewers too slow to take them",
      registers: [registry],
    }),
  };
}

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
