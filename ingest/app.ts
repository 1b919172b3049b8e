/**
 * The Koa application (no listen): routes, CORS, auth, body parsing, validation, limits,
 * produce. Kafka failing or too slow is answered 503 with Retry-After; nothing is answered 2xx
 * unless the broker acknowledged every record of the request.
 */
import { randomUUID } from "node:crypto";
import cors from "@koa/cors";
import Router from "@koa/router";
import Koa from "koa";
import bodyParser from "koa-bodyparser";
import type { Logger } from "pino";
import type { EventRecord } from "../schemas/envelope";
import { itemIds, type PrivacyList } from "../schemas/privacy";
import { mayHoldLoneSurrogate, wellFormed } from "../schemas/wellformed";
import type { AuthHeaders, WriteKeys } from "./auth";
import { bytesToReserve, InflightBudget } from "./budget";
import { buildRecords, buildRejected, type Receipt } from "./envelope";
import {
  answerError,
  assertAuthenticated,
  invalidBody,
  messageTooLarge,
  methodNotAllowed,
  noBody,
  notFound,
  overloaded,
  rateLimited,
  tooDeep,
  unknownProject,
  unsupportedEncoding,
  unsupportedMediaType,
  type ErrorBody,
} from "./errors";
import type { IngestMetrics } from "./metrics";
import type { TokenBuckets } from "./ratelimit";
import { routeTable, type Route, type Sorted } from "./routes";
import { publicAddress, settingsDocument } from "./settings";
import { jsonDepthOver } from "./validate";

/** What the app needs from the rest of the service. */
export interface AppDeps {
  writeKeys: WriteKeys;
  /** Resolves when the broker acknowledged every record (see Accumulator.produce). */
  produce: (records: EventRecord[]) => Promise<void>;
  /** Whether the producer is connected and the service is not shutting down. */
  isReady: () => boolean;
  limits: Limits;
  /**
   * Proxies in front of the ingest that append to X-Forwarded-For (0: ignore the header). The
   * client address is the entry that many hops from the right: entries left of it are the
   * client's own claims.
   */
  trustedProxies: number;
  /**
   * Bytes held at once: request bodies (reserved on arrival) plus records the producer holds
   * until Kafka settles them (`producerBytesHeld`); past it, 503 + Retry-After.
   */
  maxInflightBytes: number;
  /** Bytes of records pending or in sends Kafka has not settled (Accumulator.bytesHeld). */
  producerBytesHeld: () => number;
  /** Allowed CORS origins, or ["*"]. */
  corsOrigins: string[];
  /** Seconds a client should wait after a 503. */
  retryAfterSeconds: number;
  /** PUBLIC_URL: the address SDKs send to, in the settings document; unset, the request's own. */
  publicUrl?: string;
  /** Per-workspace rate limit. */
  rateLimit: TokenBuckets;
  /** The OpenAPI document served at /openapi.json. */
  openapi: object;
  metrics: IngestMetrics;
  /** Users deleted or suppressed (schemas/suppressions.ts follows the topic); absent: none. */
  privacy?: PrivacyList;
  /** Each request logs through a child with its request id; never a writeKey or a body at info. */
  log: Logger;
}

/** Request limits; defaults are Segment's. */
export interface Limits {
  /** Body bytes after decompression (Segment: 500 KB). */
  maxRequestBytes: number;
  /** Bytes of one stored message (Segment: 32 KB). */
  maxMessageBytes: number;
  /** Messages in one batch (Segment: 2,500). */
  maxBatchMessages: number;
  /** Nesting of arrays and objects. */
  maxJsonDepth: number;
}

/**
 * Header of a 200 answer counting the batch items refused (each kept in `rejected_messages`
 * with its reasons); absent when none was. The body stays empty, as the spec says.
 */
export const REJECTED_HEADER = "X-Rejected-Messages";

/** How long a CDN or browser may keep a settings document, s (writeKeys and the address rarely change). */
const SETTINGS_MAX_AGE_SECONDS = 300;

/** Content-Types whose body is read as JSON. */
const JSON_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"] as const;

/**
 * Body encodings accepted (RFC 9110 content codings, case-insensitive; x-gzip is gzip:
 * https://www.rfc-editor.org/rfc/rfc9110#section-8.4.1.3), each
 * mapped to the name the decompressing library (inflation) knows; limits count decoded bytes.
 */
const ENCODINGS = new Map([
  ["identity", "identity"],
  ["gzip", "gzip"],
  ["x-gzip", "gzip"],
  ["deflate", "deflate"],
]);

/** Builds the ingest Koa app. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.trustedProxies > 0, maxIpsCount: deps.trustedProxies });
  const router = new Router();
  const { limits } = deps;
  const parseJson = bodyParser({
    enableTypes: ["json"],
    // sendBeacon can only send text/plain, and RudderStack's Node SDK labels its (gzipped) JSON
    // application/x-www-form-urlencoded: both bodies are the same JSON.
    extendTypes: { json: [...JSON_TYPES] },
    jsonLimit: `${limits.maxRequestBytes}b`,
    strict: true,
    // co-body refuses `__proto__` keys by default; JSON.parse keeps them as plain own data,
    // which is what the client sent. Nothing here copies input keys onto a prototype-bearing
    // object by assignment (spreads define own properties), so they stay data end to end.
    ...({ onProtoPoisoning: "ignore" } as object),
  });

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
  // The settings analytics.js and the mobile SDKs load first (their CDN's path, under /v1).
  router.get("/v1/projects/:writeKey/settings", (ctx) => {
    const writeKey = ctx.params.writeKey!;
    if (deps.writeKeys.workspaceOf(writeKey) === undefined) throw unknownProject();
    ctx.set("Cache-Control", `public, max-age=${SETTINGS_MAX_AGE_SECONDS}`);
    ctx.body = settingsDocument(writeKey, publicAddress(deps.publicUrl, { protocol: ctx.protocol, host: ctx.host }));
  });

  const budget = new InflightBudget(deps.maxInflightBytes, deps.producerBytesHeld);

  /**
   * One POST: authenticate, reserve bytes, read the body, sort it into messages and refused
   * items, build their records, take the rate, produce both (acks=all), answer. 200 with an
   * empty body (REJECTED_HEADER counting refused items), or 400 naming each bad field when
   * nothing was accepted; every other refusal is a named HttpError of errors.ts.
   */
  const ingest = (route: Route) => async (ctx: Koa.Context) => {
    const receivedAt = new Date().toISOString();
    const headers = ctx.headers as AuthHeaders;
    // A bad header fails before the body is read.
    if (headers.authorization !== undefined || headers.publicwritekey !== undefined)
      assertAuthenticated(deps.writeKeys.authenticate(headers));
    const release = budget.reserve(bytesToReserve(ctx.get("Content-Length"), ctx.get("Content-Encoding"), limits.maxRequestBytes));
    if (release === undefined) throw overloaded(deps.retryAfterSeconds);
    try {
      const body = await readJson(ctx, parseJson, limits);
      const auth = deps.writeKeys.authenticate(headers, body?.writeKey);
      assertAuthenticated(auth);
      const sorted = route.sort(body);
      if (!sorted.ok) throw invalidBody(sorted.issues);
      const receipt: Receipt = { workspaceId: auth.workspaceId, receivedAt, clientIp: clientIp(ctx.ip) };
      const kept = deps.privacy ? withoutSuppressed(sorted.value, auth.workspaceId, deps.privacy, deps.metrics) : sorted.value;
      const { records, refusals } = toRecords(kept, receipt, limits);
      // Refused items are stored too, so they count against the workspace's rate like messages.
      if (records.length + refusals.length > 0) {
        const allowed = deps.rateLimit.take(auth.workspaceId, records.length + refusals.length, performance.now());
        if (!allowed.ok) throw rateLimited(allowed.retryAfterSeconds);
      }
      // The refused items are stored (acks=all) before either answer, so none is lost silently.
      await deps.produce([...records, ...refusals]);
      deps.metrics.messagesRejected.inc(refusals.length);
      // 400 only when no item was valid: a suppressed user's valid messages are accepted (and not stored).
      if (sorted.value.messages.length === 0) throw invalidBody(sorted.value.rejected.flatMap((r) => r.issues));
      if (refusals.length > 0) ctx.set(REJECTED_HEADER, String(refusals.length));
      ctx.status = 200;
      ctx.body = "";
    } finally {
      release();
    }
  };
  for (const route of routeTable(limits)) router.post(route.path, ingest(route));

  app.use(async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdOf(ctx.get("X-Request-Id"));
    ctx.set("X-Request-Id", requestId);
    const log = deps.log.child({ reqId: requestId });
    ctx.state.log = log;
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw notFound(ctx.method, ctx.path);
    } catch (error) {
      answerError(ctx, error, deps.retryAfterSeconds, deps.limits, log);
    }
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched";
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.requests.inc({ route, status: String(ctx.status) });
    deps.metrics.requestSeconds.observe({ route }, seconds);
    if (ctx.status >= 400) deps.metrics.requestsRefused.inc({ reason: (ctx.body as ErrorBody | undefined)?.error ?? String(ctx.status) });
    log.debug({ method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1000) }, "request");
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
 * Checks Content-Type and Content-Encoding, parses the JSON body (parse failures become 4xx),
 * refuses nesting over the limit, and replaces lone surrogates with U+FFFD (as a browser
 * decodes them; ClickHouse refuses them).
 */
async function readJson(ctx: Koa.Context, parseJson: Koa.Middleware, limits: Limits): Promise<Record<string, unknown> | undefined> {
  // Analytics-CSharp posts its gzipped JSON with no Content-Type at all: read it as JSON.
  if (ctx.get("Content-Type") === "" && ctx.request.length !== 0) ctx.req.headers["content-type"] = "application/json";
  const type = ctx.request.is(...JSON_TYPES);
  if (type === null) throw noBody();
  if (type === false) throw unsupportedMediaType();
  const encoding = (ctx.get("Content-Encoding") || "identity").trim().toLowerCase();
  const known = ENCODINGS.get(encoding);
  if (known === undefined) throw unsupportedEncoding(encoding);
  ctx.req.headers["content-encoding"] = known; // the library matches lower-case names only
  await parseJson(ctx, async () => {});
  const rawBody = String(ctx.request.rawBody ?? "");
  if (jsonDepthOver(rawBody, limits.maxJsonDepth)) throw tooDeep(limits);
  const body = ctx.request.body as Record<string, unknown> | undefined;
  return mayHoldLoneSurrogate(rawBody) ? wellFormed(body) : body;
}

/**
 * The messages and refused items of suppressed users taken out: the request is still answered
 * 2xx (an SDK would otherwise retry them for ever) and they are not stored (schemas/privacy.ts).
 */
function withoutSuppressed(sorted: Sorted, workspaceId: string, list: PrivacyList, metrics: IngestMetrics): Sorted {
  if (list.size === 0) return sorted;
  // Infinity: a new message is dropped only for a suppression (a deletion covers what came before it).
  const drops = (item: unknown) => list.drops(workspaceId, ...itemIds(item), Number.POSITIVE_INFINITY);
  const messages = sorted.messages.filter((m) => !drops(m));
  const rejected = sorted.rejected.filter((r) => !drops(r.item));
  const dropped = sorted.messages.length - messages.length + sorted.rejected.length - rejected.length;
  if (dropped === 0) return sorted;
  metrics.messagesSuppressed.inc(dropped);
  return { ...sorted, messages, rejected };
}

/** The records of the accepted messages and of the refused items; 413 for a message over the limit. */
function toRecords(sorted: Sorted, receipt: Receipt, limits: Limits): { records: EventRecord[]; refusals: EventRecord[] } {
  const built = buildRecords(sorted.messages, sorted.defaults, receipt, limits.maxMessageBytes);
  if (!built.ok) throw messageTooLarge(built.index, built.bytes, limits.maxMessageBytes);
  const refused = sorted.rejected.map((r) => ({ item: r.item, reasons: r.issues.map((i) => `${i.path}: ${i.expected}`) }));
  return { records: built.records, refusals: buildRejected(refused, receipt, limits.maxMessageBytes) };
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
