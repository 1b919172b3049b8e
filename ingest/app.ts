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
import type { AuthHeaders, WriteKeys } from "./auth";
import { answerError, HttpError, methodNotAllowed, refuseUnauthorized, tooDeep, type ErrorBody } from "./errors";
import type { IngestMetrics } from "./metrics";
import { buildRecords, type BatchDefaults } from "./envelope";
import type { TokenBuckets } from "./ratelimit";
import { jsonDepthOver, validateBatch, validateSingle, type Validation } from "./validate";
import type { Message } from "../schemas/messages";

/** What the app needs from the rest of the service. */
export interface AppDeps {
  writeKeys: WriteKeys;
  /** Resolves when the broker acknowledged every record (see Accumulator.produce). */
  produce: (records: EventRecord[]) => Promise<void>;
  /** Whether the producer is connected and the service is not shutting down. */
  isReady: () => boolean;
  limits: Limits;
  /** Use X-Forwarded-For for the client address. */
  trustProxy: boolean;
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

/** The route prefixes: the spec's (Dittofeed) and Segment's. */
export const PREFIXES = ["/api/public/apps", "/v1"] as const;
/** The single-message routes. */
export const SINGLE_TYPES: readonly MessageType[] = ["identify", "track", "page", "screen", "group", "alias"];

/** Content-Types whose body is read as JSON. */
const JSON_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"] as const;

/** Body encodings accepted (RFC 9110 content codings); limits count the decoded bytes. */
const ENCODINGS = new Set(["identity", "gzip", "x-gzip", "deflate"]);

/** Builds the ingest Koa app. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.trustProxy });
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

  /** Reads, authenticates and validates; then produces and answers 200 with an empty body. */
  const ingest = (toMessages: (body: unknown) => Validation<{ messages: Message[]; defaults: BatchDefaults }>) =>
    async (ctx: Koa.Context) => {
      const receivedAt = new Date().toISOString();
      const headers = ctx.headers as AuthHeaders;
      if (headers.authorization !== undefined || headers.publicwritekey !== undefined) {
        refuseUnauthorized(deps.writeKeys.authenticate(headers)); // a bad header fails before the body is read
      }
      await readBody(ctx, parseJson);
      if (jsonDepthOver(String(ctx.request.rawBody ?? ""), limits.maxJsonDepth)) throw tooDeep(limits);
      const body = ctx.request.body as Record<string, unknown> | undefined;
      const auth = deps.writeKeys.authenticate(headers, body?.writeKey);
      refuseUnauthorized(auth);
      if (!auth.ok) return;
      const result = toMessages(body);
      if (!result.ok) {
        throw new HttpError(400, {
          error: "invalid_body",
          message: `the body has ${result.issues.length} invalid field(s); nothing was accepted`,
          issues: result.issues,
        });
      }
      const receipt = { workspaceId: auth.workspaceId, receivedAt, clientIp: clientIp(ctx.ip) };
      const built = buildRecords(result.value.messages, result.value.defaults, receipt, limits.maxMessageBytes);
      if (!built.ok) {
        throw new HttpError(413, {
          error: "message_too_large",
          message: `message ${built.index} is ${built.bytes} bytes; the limit is ${limits.maxMessageBytes} bytes per message`,
        });
      }
      const allowed = deps.rateLimit.take(auth.workspaceId, built.records.length, performance.now());
      if (!allowed.ok) {
        ctx.set("Retry-After", String(allowed.retryAfterSeconds));
        throw new HttpError(429, { error: "rate_limited", message: "this writeKey sends more messages per second than allowed; retry after Retry-After seconds" });
      }
      await deps.produce(built.records);
      ctx.status = 200;
      ctx.body = "";
    };

  const batchRoute = ingest((body) => {
    const count = Array.isArray((body as { batch?: unknown } | undefined)?.batch) ? (body as { batch: unknown[] }).batch.length : 0;
    if (count > limits.maxBatchMessages) {
      throw new HttpError(400, {
        error: "too_many_messages",
        message: `the batch has ${count} messages; the limit is ${limits.maxBatchMessages} per request`,
      });
    }
    const result = validateBatch(body);
    if (!result.ok) return result;
    const { batch, context, sentAt } = result.value;
    return { ok: true, value: { messages: batch, defaults: { context, sentAt } } };
  });
  for (const prefix of PREFIXES) {
    router.post(`${prefix}/batch`, batchRoute);
    for (const type of SINGLE_TYPES) {
      router.post(
        `${prefix}/${type}`,
        ingest((body) => {
          const result = validateSingle(type, body);
          return result.ok ? { ok: true, value: { messages: [result.value], defaults: {} } } : result;
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
    if (ctx.status >= 400) deps.metrics.messagesRefused.inc({ reason: (ctx.body as ErrorBody | undefined)?.error ?? String(ctx.status) });
    log.debug({ method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1000) }, "request");
  });
  app.use(
    cors({
      origin: (ctx) => corsOrigin(ctx.get("Origin"), deps.corsOrigins),
      allowMethods: ["GET", "POST", "OPTIONS"],
      allowHeaders: ["Authorization", "Content-Type", "Content-Encoding", "PublicWriteKey"],
      exposeHeaders: ["Retry-After"],
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
  if (!ENCODINGS.has(encoding)) {
    throw new HttpError(415, {
      error: "unsupported_encoding",
      message: `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`,
    });
  }
  await parseJson(ctx, async () => {});
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

