/**
 * The Koa application (no listen): routes, CORS, auth, body parsing, validation, limits,
 * produce. Kafka failing or too slow is answered 503 with Retry-After; nothing is answered 2xx
 * unless the broker acknowledged every record of the request.
 */
import cors from "@koa/cors";
import Router from "@koa/router";
import Koa from "koa";
import bodyParser from "koa-bodyparser";
import type { Logger } from "pino";
import type { EventRecord } from "../schemas/envelope";
import type { MessageType } from "../schemas/messages";
import type { AuthHeaders, AuthResult, WriteKeys } from "./auth";
import { buildRecords, type BatchDefaults } from "./envelope";
import type { TokenBuckets } from "./ratelimit";
import { jsonDepthOver, validateBatch, validateSingle, type Validation, type ValidationIssue } from "./validate";
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

/** JSON body of every error answer. */
export interface ErrorBody {
  /** Machine-readable code: invalid_json, invalid_body, unauthorized, payload_too_large, ... */
  error: string;
  /** What was wrong, for a person. */
  message: string;
  /** Each bad field of an invalid_body answer. */
  issues?: ValidationIssue[];
}

/** An error answered to the client as it is (4xx, 503). */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
}

/** The route prefixes: the spec's (Dittofeed) and Segment's. */
export const PREFIXES = ["/api/public/apps", "/v1"] as const;
/** The single-message routes. */
export const SINGLE_TYPES: readonly MessageType[] = ["identify", "track", "page", "screen", "group", "alias"];

const AUTH_MESSAGES = {
  missing: "a writeKey is required: Authorization: Basic base64(writeKey:), Bearer, PublicWriteKey header, or writeKey in the body",
  malformed: "the writeKey could not be read (bad scheme, bad base64, or a non-string writeKey)",
  conflict: "the request names more than one writeKey",
  unknown: "unknown writeKey",
} as const;

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
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new HttpError(404, { error: "not_found", message: `no route ${ctx.method} ${ctx.path}` });
      }
    } catch (error) {
      answerError(ctx, error, deps);
    }
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

function methodNotAllowed(): HttpError {
  return new HttpError(405, { error: "method_not_allowed", message: "this route answers POST (and OPTIONS for CORS)" });
}

function tooDeep(limits: Limits): HttpError {
  return new HttpError(400, { error: "too_deep", message: `the body nests arrays and objects deeper than ${limits.maxJsonDepth} levels` });
}

function refuseUnauthorized(auth: AuthResult): void {
  if (!auth.ok) throw new HttpError(401, { error: "unauthorized", message: AUTH_MESSAGES[auth.reason] });
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

/** Sorts a failure into the answer: client errors as they are, Kafka trouble 503, the rest 500. */
function answerError(ctx: Koa.Context, error: unknown, deps: AppDeps): void {
  if (error instanceof HttpError) {
    ctx.status = error.status;
    ctx.body = error.body;
    return;
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    ctx.status = status;
    ctx.body = parseErrorBody(status, error as Error, deps.limits);
    return;
  }
  if (isKafkaUnavailable(error)) {
    deps.log.warn({ err: error }, "produce failed; answering 503");
    ctx.status = 503;
    ctx.set("Retry-After", String(deps.retryAfterSeconds));
    ctx.body = { error: "unavailable", message: "events could not be stored now; retry later" } satisfies ErrorBody;
    return;
  }
  deps.log.error({ err: error }, "unexpected error");
  ctx.status = 500;
  ctx.body = { error: "internal", message: "internal error" } satisfies ErrorBody;
}

/** Body-parser (co-body / raw-body) failures as error bodies. */
function parseErrorBody(status: number, error: Error, limits: Limits): ErrorBody {
  if (status === 413) {
    return { error: "payload_too_large", message: `the body is over ${limits.maxRequestBytes} bytes (counted after decompression)` };
  }
  if (status === 415) return { error: "unsupported_encoding", message: error.message };
  // JSON.parse exhausts the stack on extreme nesting before our depth check can run.
  if (status === 400 && error instanceof RangeError) return tooDeep(limits).body;
  if (status === 400) return { error: "invalid_json", message: `the body is not valid JSON: ${error.message}` };
  return { error: "bad_request", message: error.message };
}

/** ProduceTimeoutError and every kafkajs error (their names start with KafkaJS). */
function isKafkaUnavailable(error: unknown): boolean {
  const name = (error as { name?: unknown }).name;
  return typeof name === "string" && (name === "ProduceTimeoutError" || name.startsWith("KafkaJS"));
}
