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
import type { MessageType } from "../schemas/messages";
import { mayHoldLoneSurrogate, wellFormed } from "../schemas/wellformed";
import type { AuthHeaders, WriteKeys } from "./auth";
import { answerError, HttpError, invalidBody, methodNotAllowed, overloaded, refuseUnauthorized, tooDeep, type ErrorBody } from "./errors";
import type { IngestMetrics } from "./metrics";
import { buildRecords, buildRejected, type BatchDefaults } from "./envelope";
import type { TokenBuckets } from "./ratelimit";
import { jsonDepthOver, sortBatch, validateSingle, type RejectedItem, type Validation } from "./validate";
import type { Message } from "../schemas/messages";

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
  /** Bytes of request bodies held at once (reserved on arrival); past it, 503 + Retry-After. */
  maxInflightBytes: number;
  /** Allowed CORS origins, or ["*"]. */
  corsOrigins: string[];
  /** Seconds a client should wait after a 503. */
  retryAfterSeconds: number;
  /** Per-workspace rate limit. */
  rateLimit: TokenBuckets;
  /** The OpenAPI document served at /openapi.json. */
  openapi: object;
  metrics: IngestMetrics;
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

/** What a route's body holds: messages to accept, items refused, and the batch defaults. */
interface Sorted {
  messages: Message[];
  rejected: RejectedItem[];
  defaults: BatchDefaults;
}

/** The route prefixes: the spec's (Dittofeed) and Segment's. */
export const PREFIXES = ["/api/public/apps", "/v1"] as const;
/** The single-message routes. */
export const SINGLE_TYPES: readonly MessageType[] = ["identify", "track", "page", "screen", "group", "alias"];

/** Content-Types whose body is read as JSON. */
const JSON_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"] as const;

/**
 * Body encodings accepted (RFC 9110 content codings, case-insensitive; x-gzip is gzip), each
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
  let inflightBytes = 0;
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
  router.get("/metrics", async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });

  /**
   * Reads, authenticates and sorts the body; produces the accepted messages and the refused
   * items together and answers 200 with an empty body (and REJECTED_HEADER when items were
   * refused), or 400 naming each bad field when nothing was accepted.
   */
  const ingest = (sort: (body: unknown) => Validation<Sorted>) => async (ctx: Koa.Context) => {
    const receivedAt = new Date().toISOString();
    const headers = ctx.headers as AuthHeaders;
    if (headers.authorization !== undefined || headers.publicwritekey !== undefined) {
      refuseUnauthorized(deps.writeKeys.authenticate(headers)); // a bad header fails before the body is read
    }
    const reserved = reserveBytes(ctx, limits.maxRequestBytes);
    if (inflightBytes + reserved > deps.maxInflightBytes) throw overloaded(deps.retryAfterSeconds);
    inflightBytes += reserved;
    try {
      await readBody(ctx, parseJson);
      const rawBody = String(ctx.request.rawBody ?? "");
      if (jsonDepthOver(rawBody, limits.maxJsonDepth)) throw tooDeep(limits);
      let body = ctx.request.body as Record<string, unknown> | undefined;
      if (mayHoldLoneSurrogate(rawBody)) body = wellFormed(body); // as a browser decodes them: U+FFFD
      const auth = deps.writeKeys.authenticate(headers, body?.writeKey);
      refuseUnauthorized(auth);
      if (!auth.ok) return;
      const sorted = sort(body);
      if (!sorted.ok) throw invalidBody(sorted.issues);
      const { messages, rejected, defaults } = sorted.value;
      const receipt = { workspaceId: auth.workspaceId, receivedAt, clientIp: clientIp(ctx.ip) };
      const built = buildRecords(messages, defaults, receipt, limits.maxMessageBytes);
      if (!built.ok) {
        throw new HttpError(413, {
          error: "message_too_large",
          message: `message ${built.index} is ${built.bytes} bytes; the limit is ${limits.maxMessageBytes} bytes per message`,
        });
      }
      const refusals = buildRejected(
        rejected.map((r) => ({ item: r.item, reasons: r.issues.map((i) => `${i.path}: ${i.expected}`) })),
        receipt,
        limits.maxMessageBytes,
      );
      if (built.records.length > 0) {
        const allowed = deps.rateLimit.take(auth.workspaceId, built.records.length, performance.now());
        if (!allowed.ok) {
          ctx.set("Retry-After", String(allowed.retryAfterSeconds));
          throw new HttpError(429, { error: "rate_limited", message: "this writeKey sends more messages per second than allowed; retry after Retry-After seconds" });
        }
      }
      // The refused items are stored (acks=all) before either answer, so none is lost silently.
      await deps.produce([...built.records, ...refusals]);
      deps.metrics.messagesRejected.inc(refusals.length);
      if (built.records.length === 0) throw invalidBody(rejected.flatMap((r) => r.issues));
      if (refusals.length > 0) ctx.set(REJECTED_HEADER, String(refusals.length));
      ctx.status = 200;
      ctx.body = "";
    } finally {
      inflightBytes -= reserved;
    }
  };

  const batchRoute = ingest((body) => {
    const count = Array.isArray((body as { batch?: unknown } | undefined)?.batch) ? (body as { batch: unknown[] }).batch.length : 0;
    if (count > limits.maxBatchMessages) {
      throw new HttpError(400, {
        error: "too_many_messages",
        message: `the batch has ${count} messages; the limit is ${limits.maxBatchMessages} per request`,
      });
    }
    const result = sortBatch(body);
    if (!result.ok) return result;
    const { frame, accepted, rejected } = result.value;
    return { ok: true, value: { messages: accepted, rejected, defaults: { context: frame.context, sentAt: frame.sentAt } } };
  });
  for (const prefix of PREFIXES) {
    router.post(`${prefix}/batch`, batchRoute);
    for (const type of SINGLE_TYPES) {
      router.post(
        `${prefix}/${type}`,
        ingest((body) => {
          const result = validateSingle(type, body);
          if (result.ok) return { ok: true, value: { messages: [result.value], rejected: [], defaults: {} } };
          // A body that is not even an object is a malformed request, not a refused message.
          if (body === null || typeof body !== "object" || Array.isArray(body)) return result;
          return { ok: true, value: { messages: [], rejected: [{ index: 0, item: body, issues: result.issues }], defaults: {} } };
        }),
      );
    }
  }

  app.use(async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdOf(ctx.get("X-Request-Id"));
    ctx.set("X-Request-Id", requestId);
    const log = deps.log.child({ reqId: requestId });
    ctx.state.log = log;
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new HttpError(404, { error: "not_found", message: `no route ${ctx.method} ${ctx.path}` });
      }
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
      allowHeaders: ["Authorization", "Content-Type", "Content-Encoding", "PublicWriteKey"],
      exposeHeaders: ["Retry-After", REJECTED_HEADER, "X-Request-Id"],
      maxAge: 86_400,
    }),
  );
  app.use(router.routes());
  // A method no route has (TRACE, ...) is the client's mistake: 405, not the router's default 501.
  app.use(router.allowedMethods({ throw: true, notImplemented: methodNotAllowed, methodNotAllowed }));
  return app;
}

/** Checks Content-Type and Content-Encoding, then parses the JSON body (errors become 4xx). */
async function readBody(ctx: Koa.Context, parseJson: Koa.Middleware): Promise<void> {
  const type = ctx.request.is(...JSON_TYPES);
  if (type === null) throw new HttpError(400, { error: "invalid_json", message: "the request has no body" });
  if (type === false) {
    throw new HttpError(415, {
      error: "unsupported_media_type",
      message: "Content-Type must be application/json (text/plain or application/x-www-form-urlencoded holding JSON are read as JSON too)",
    });
  }
  const encoding = (ctx.get("Content-Encoding") || "identity").trim().toLowerCase();
  const known = ENCODINGS.get(encoding);
  if (known === undefined) {
    throw new HttpError(415, {
      error: "unsupported_encoding",
      message: `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`,
    });
  }
  ctx.req.headers["content-encoding"] = known; // the library matches lower-case names only
  await parseJson(ctx, async () => {});
}

/**
 * Bytes to hold for a request while it is read and produced: its Content-Length when the body
 * is not compressed, else the most it may decode to.
 */
function reserveBytes(ctx: Koa.Context, maxRequestBytes: number): number {
  const length = Number(ctx.get("Content-Length"));
  const encoding = (ctx.get("Content-Encoding") || "identity").trim().toLowerCase();
  return encoding === "identity" && Number.isInteger(length) && length >= 0 ? Math.min(length, maxRequestBytes) : maxRequestBytes;
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

