/**
 * The Koa application (no listen): routes, CORS, auth, body parsing, validation, limits,
 * produce. Kafka failing or too slow is answered 503 with Retry-After; nothing is answered 2xx
 * unless the broker acknowledged every record of the request.
 */
import { namesNoKey, type WriteKeys, type AuthHeaders, type AuthResult } from "./auth";
import { type UnkeyedGate } from "./networks";
import { admitPost, networkRefusal, surelyUnknown } from "./unkeyed";
import { settingsRoute } from "./settings-route";
import { type EventRecord } from "../schemas/envelope";
import { type TokenBuckets } from "./ratelimit";
import { type IngestMetrics } from "./metrics";
import { type PrivacyList } from "../schemas/privacy/list";
import { type Logger } from "pino";
import Koa from "koa";
import Router from "@koa/router";
import {
  type HttpError,
  overloaded,
  tooCostly,
  assertAuthenticated,
  rateLimited,
  notFound,
  type ErrorBody,
  methodNotAllowed,
  unkeyedLimited,
  unauthorized,
} from "./errors";
import { type HostPolicy } from "./settings";
import { InflightBudget, senderCap, type Lease } from "./budget";
import { type Route, refusalOf, refusedWhole, routeTable, toRecords, withoutNonFinite, withoutSuppressed } from "./routes";
import { type ContextPolicy, type Receipt, PLAIN_CONTEXT } from "./envelope";
import cors from "@koa/cors";
import { randomUUID } from "node:crypto";
import { readJson } from "./json-body";
import { answerError } from "./answer";
import type { Limits } from "./limits";

export type { Limits } from "./limits";

/** What the app needs from the rest of the service. */
export interface AppDeps {
  writeKeys: WriteKeys;
  /** Resolves when the broker acknowledged every record (see Accumulator.produce). */
  produce: (records: EventRecord[]) => Promise<void>;
  /** Whether the producer is connected and the service is not shutting down. */
  isReady: () => boolean;
  /**
   * Whether the service is stopping (SIGTERM). Every answer then carries `Connection: close`: a
   * keep-alive client opens its next connection elsewhere (behind kube-proxy, to a pod still
   * ready), and the server's close, which ends only idle connections, is not held open by a
   * client that keeps sending on a busy one.
   */
  isDraining: () => boolean;
  limits: Limits;
  /**
   * Proxies in front of the ingest that append to X-Forwarded-For (0: ignore the header). The
   * client address is the entry that many hops from the right: entries left of it are the
   * client's own claims.
   */
  trustedProxies: number;
  /**
   * Bytes held at once: request bodies (charged as they arrive, then by what parsing them makes;
   * ingest/budget.ts) plus records the producer holds until Kafka settles them
   * (`producerBytesHeld`); past it, 503 + Retry-After.
   */
  maxInflightBytes: number;
  /** A request's whole body must arrive within this many ms of its headers, else 408 (INGEST_BODY_TIMEOUT_MS). */
  bodyTimeoutMs: number;
  /** Bytes of records pending or in sends Kafka has not settled (Accumulator.bytesHeld). */
  producerBytesHeld: () => number;
  /** Allowed CORS origins, or ["*"]. */
  corsOrigins: string[];
  /** Seconds a client should wait after a 503. */
  retryAfterSeconds: number;
  /** PUBLIC_URL: the address SDKs send to, in the settings document; unset, the request's own. */
  publicUrl?: string;
  /**
   * Hosts the settings document may name when PUBLIC_URL is unset (INGEST_ALLOWED_HOSTS; see
   * ingest/settings.ts publicAddress): absent, loopback names and IP literals only.
   */
  allowedHosts?: HostPolicy;
  /**
   * The work of requests whose writeKey is not checked yet, charged by client network
   * (ingest/networks.ts); absent: not charged (unit tests of other parts).
   */
  unkeyedGate?: UnkeyedGate;
  /** Per-workspace rate limit of batch items (RATE_LIMIT_PER_SECOND; ingest/ratelimit.ts). */
  rateLimit: TokenBuckets;
  /** Per-workspace rate limit of decoded body bytes, paid by every body read (RATE_LIMIT_BYTES_PER_SECOND). */
  bytesLimit: TokenBuckets;
  /** The OpenAPI document served at /openapi.json. */
  openapi: object;
  metrics: IngestMetrics;
  /** Users deleted or suppressed (schemas/privacy/follower.ts follows the topic); absent: none. */
  privacy?: PrivacyList;
  /** Each request logs through a child with its request id; never a writeKey or a body at info. */
  log: Logger;
  /** Enrichment and IP_ANONYMIZE (ingest/enrich.ts); absent: neither. */
  contextPolicy?: ContextPolicy;
}

/**
 * Header of a 200 answer counting the batch items refused (each kept in `rejected_messages`
 * with its reasons); absent when none was. The body is the route's (ingest/routes.ts): Segment's
 * `{"success":true}` under /v1, the spec's empty body under /api/public/apps.
 */
export const REJECTED_HEADER = "X-Rejected-Messages";

/** Builds the ingest Koa app. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.trustedProxies > 0, maxIpsCount: deps.trustedProxies });
  // Every error of a request is answered by the first middleware below; what still reaches Koa is
  // a connection that closed before its answer was written (a client gone mid-body). Koa's default
  // prints each one's stack to stderr, outside the JSON log.
  app.on("error", (error: Error) => deps.log.debug({ err: error }, "connection closed before the answer"));
  const router = new Router();
  const { limits } = deps;

  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });
  router.get("/readyz", (ctx) => {
    const ready = deps.isReady();
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? "ready" : "not ready" };
  });
  router.get("/openapi.json", (ctx) => {
    ctx.body = deps.openapi;
  });
  const refuseNetwork = networkRefusal(deps.metrics);
  // The settings analytics.js and the mobile SDKs load first (their CDN's path, under /v1).
  router.get("/v1/projects/:writeKey/settings", settingsRoute(deps, refuseNetwork));

  const budget = new InflightBudget(
    deps.maxInflightBytes,
    deps.producerBytesHeld,
    senderCap(deps.maxInflightBytes, limits.maxRequestBytes),
  );

  /** `bytes` more for a request, or its refusal: 503 + Retry-After while the budget is full, 413 if it can never fit. */
  const charge = (lease: Lease, bytes: number): HttpError | undefined => {
    const charged = lease.grow(bytes);
    if (charged.ok) return undefined;
    return charged.reason === "busy" ? overloaded(deps.retryAfterSeconds) : tooCostly(lease.bytes + bytes, charged.capacity);
  };

  /**
   * One POST: authenticate (a key header whose workspace has an empty bucket: 429 unread), read
   * the body (charged to the budget as it arrives and before it is parsed; its decoded bytes paid
   * to the bytes bucket whatever the answer), take the rate (one token per item, whatever the answer), sort it into messages and
   * refused items, build their records, produce both (acks=all), answer. 200 with the route's success body (REJECTED_HEADER counting
   * refused items), or 400 naming each bad field when nothing was accepted; every other refusal
   * is a named HttpError of errors.ts.
   */
  const ingest = (route: Route) => async (ctx: Koa.Context) => {
    const receivedAt = new Date().toISOString();
    const headers = ctx.headers as AuthHeaders;
    const { network, keyed, headerAuth, account } = await admitPost(headers, ctx.ip, deps, refuseNetwork);
    // The sender whose arriving bodies share a cap: the key header's workspace, else the client's network.
    const lease = budget.open(keyed, headerAuth?.ok ? `w:${headerAuth.workspaceId}` : `n:${network}`);
    /** The body's key is decided: an unknown one is one failure of the network, a known one gives its bytes back. */
    const decided = (auth: AuthResult) => {
      if (auth.ok) account?.keyed(performance.now());
      else account?.failed(performance.now());
    };
    // Decoded bytes are paid once: below, once the key is known, or in `finally` by the key header's workspace.
    let decoded = 0;
    let unpaid = headerAuth?.workspaceId;
    try {
      const body = await readJson(ctx, limits, {
        bodyTimeoutMs: deps.bodyTimeoutMs,
        charge: (n) => {
          const paid = account?.charge(n, performance.now());
          if (paid !== undefined && !paid.ok) return unkeyedLimited(paid.retryAfterSeconds, paid.bucket);
          return charge(lease, n);
        },
        decoded: (n) => (decoded += n),
        arrived: () => lease.markArrived(),
        eviction: lease,
        // No key header: a body whose every writeKey is unknown is refused before it is parsed.
        beforeParse: (text) => {
          if (keyed) return undefined;
          const early = surelyUnknown(text, deps.writeKeys);
          if (early === undefined) return undefined;
          decided(early);
          return unauthorized(early.reason);
        },
      });
      // A body without a writeKey of its own leaves the header's lookup standing (one SHA-256 a
      // request); one with a writeKey is checked against the header's key and looked up.
      const bodyKey: unknown = body?.writeKey;
      const auth = headerAuth !== undefined && namesNoKey(bodyKey) ? headerAuth : deps.writeKeys.authenticate(headers, bodyKey);
      decided(auth);
      assertAuthenticated(auth);
      lease.markKeyed();
      unpaid = undefined;
      const paid = deps.bytesLimit.pay(auth.workspaceId, decoded, performance.now());
      if (!paid.ok) throw rateLimited(paid.retryAfterSeconds, "bytes");
      // Parsed, the body's work is done: it takes its items' tokens before it is sorted, so a 400
      // or 413 after this has paid; a 429 takes none (a charge for each one starved SDKs that
      // retry above the limit: a review of 2026-11-26).
      const allowed = deps.rateLimit.take(auth.workspaceId, tokensOf(route, body, limits), performance.now());
      if (!allowed.ok) throw rateLimited(allowed.retryAfterSeconds);
      const sorted = route.sort(body);
      // A body refused whole (a bad batch frame, not an object) is kept too: its items, or itself.
      const whole = sorted.ok ? sorted.value : refusedWhole(body, sorted.issues);
      const value = ctx.state.nonFinite === true ? withoutNonFinite(whole) : whole;
      const receipt: Receipt = { workspaceId: auth.workspaceId, receivedAt, clientIp: clientIp(ctx.ip) };
      const kept = deps.privacy ? withoutSuppressed(value, auth.workspaceId, deps.privacy, deps.metrics) : value;
      const policy = deps.contextPolicy ?? PLAIN_CONTEXT;
      const { records, refusals, listedShapes, oversized } = toRecords(kept, receipt, limits, policy);
      const refusal = refusalOf(sorted, value, oversized);
      // The refused items are stored (acks=all) before either answer, so none is lost silently.
      await deps.produce([...records, ...refusals]);
      policy.shapes?.markDelivered(listedShapes);
      deps.metrics.messagesRejected.inc(refusals.length);
      if (refusal !== undefined) throw refusal;
      if (refusals.length > 0) ctx.set(REJECTED_HEADER, String(refusals.length));
      ctx.status = 200;
      ctx.body = route.successBody;
    } finally {
      if (unpaid !== undefined) deps.bytesLimit.pay(unpaid, decoded, performance.now());
      lease.release();
    }
  };
  for (const route of routeTable(limits)) router.post(route.path, ingest(route));

  app.use(async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdOf(ctx.get("X-Request-Id"));
    ctx.set("X-Request-Id", requestId);
    // The request's logger is made when something is logged (an error, or debug): most requests log nothing.
    const log = () => deps.log.child({ reqId: requestId });
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw notFound(ctx.method, ctx.path);
    } catch (error) {
      answerError(ctx, error, deps.retryAfterSeconds, deps.limits, log());
    }
    if (deps.isDraining()) ctx.set("Connection", "close");
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched";
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.requests.inc({ route, status: String(ctx.status) });
    deps.metrics.requestSeconds.observe({ route }, seconds);
    if (ctx.status >= 400) deps.metrics.requestsRefused.inc({ reason: (ctx.body as ErrorBody | undefined)?.error ?? String(ctx.status) });
    if (deps.log.isLevelEnabled("debug"))
      log().debug({ method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1000) }, "request");
  });
  app.use(
    cors({
      origin: (ctx) => corsOrigin(ctx.get("Origin"), deps.corsOrigins),
      allowMethods: ["GET", "POST", "OPTIONS"],
      // analytics.js 1.84 sends X-Retry-Count on every retry: without it the preflight fails and no retry ever lands.
      allowHeaders: ["Authorization", "Content-Type", "Content-Encoding", "PublicWriteKey", "X-Retry-Count", "X-Request-Id"],
      exposeHeaders: ["Retry-After", REJECTED_HEADER, "X-Request-Id"],
      maxAge: 86_400,
    }),
  );
  app.use(router.routes());
  // A method no route has (TRACE, ...) is the client's mistake: 405, not the router's default 501.
  app.use(router.allowedMethods({ throw: true, notImplemented: methodNotAllowed, methodNotAllowed }));
  return app;
}

/**
 * Tokens a parsed body takes (ingest/ratelimit.ts): one per item of a batch (refused items are
 * stored too), at most MAX_BATCH_MESSAGES (a longer batch is refused, too_many_messages); one
 * for any other body.
 */
function tokensOf(route: Route, body: Record<string, unknown> | undefined, limits: Limits): number {
  const items = route.kind === "batch" ? body?.batch : undefined;
  return Array.isArray(items) ? Math.min(limits.maxBatchMessages, Math.max(1, items.length)) : 1;
}

/** `::ffff:1.2.3.4` -> `1.2.3.4`; empty -> undefined. */
function clientIp(ip: string): string | undefined {
  if (ip === "") return undefined;
  return ip.startsWith("::ffff:") ? ip.slice("::ffff:".length) : ip;
}

/** The Access-Control-Allow-Origin value for a request's Origin, or '' to send none. */
function corsOrigin(origin: string, allowed: string[]): string {
  if (allowed.includes("*")) return origin === "" ? "*" : origin;
  return allowed.includes(origin) ? origin : "";
}

/** A client's X-Request-Id when it is short and plain, else a new one. */
function requestIdOf(header: string): string {
  return /^[\w.:-]{1,128}$/.test(header) ? header : randomUUID();
}
