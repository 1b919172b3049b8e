/**
 * The Koa application (no listen): routes, auth, body parsing, validation, produce.
 * Kafka failing or too slow is answered 503 with Retry-After; nothing is answered 2xx unless the
 * broker acknowledged every record of the request.
 */
import Router from "@koa/router";
import Koa from "koa";
import bodyParser from "koa-bodyparser";
import type { Logger } from "pino";
import type { EventRecord } from "../schemas/envelope";
import type { AuthHeaders, WriteKeys } from "./auth";
import { recordFromIdentify, recordsFromBatch, type Receipt } from "./envelope";
import { validateBatch, validateIdentify, type Validation, type ValidationIssue } from "./validate";

/** What the app needs from the rest of the service. */
export interface AppDeps {
  writeKeys: WriteKeys;
  /** Resolves when the broker acknowledged every record (see Accumulator.produce). */
  produce: (records: EventRecord[]) => Promise<void>;
  /** Whether the producer is connected and the service is not shutting down. */
  isReady: () => boolean;
  /** Body limit in bytes, counted after decompression. */
  maxRequestBytes: number;
  /** Seconds a client should wait after a 503. */
  retryAfterSeconds: number;
  log: Logger;
}

/** JSON body of every error answer. */
export interface ErrorBody {
  error: string;
  message: string;
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

const AUTH_MESSAGES = {
  missing: "a writeKey is required: Authorization: Basic base64(writeKey:), Bearer, or PublicWriteKey header",
  malformed: "the Authorization header could not be read (bad scheme or base64)",
  conflict: "the request names more than one writeKey",
  unknown: "unknown writeKey",
} as const;

/** Error codes of body-parser failures (co-body / raw-body `type`) by HTTP status. */
const PARSE_ERRORS: Record<number, string> = {
  400: "invalid_json",
  413: "payload_too_large",
  415: "unsupported_media_type",
};

/** Builds the ingest Koa app. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa();
  const router = new Router();
  const parseJson = bodyParser({
    enableTypes: ["json"],
    jsonLimit: `${deps.maxRequestBytes}b`,
    strict: true,
  });

  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });
  router.get("/readyz", (ctx) => {
    const ready = deps.isReady();
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? "ready" : "not ready" };
  });

  const ingest = <T>(validate: (body: unknown) => Validation<T>, toRecords: (v: T, r: Receipt) => EventRecord[]) =>
    async (ctx: Koa.Context) => {
      const receivedAt = new Date().toISOString();
      const auth = deps.writeKeys.authenticate(ctx.headers as AuthHeaders);
      if (!auth.ok) throw new HttpError(401, { error: "unauthorized", message: AUTH_MESSAGES[auth.reason] });
      const type = ctx.request.is("application/json");
      if (type === null) throw new HttpError(400, { error: "invalid_json", message: "the request has no body" });
      if (type === false) {
        throw new HttpError(415, { error: "unsupported_media_type", message: "Content-Type must be application/json" });
      }
      await parseJson(ctx, async () => {});
      const result = validate(ctx.request.body);
      if (!result.ok) {
        throw new HttpError(400, {
          error: "invalid_body",
          message: `the body has ${result.issues.length} invalid field(s); nothing was accepted`,
          issues: result.issues,
        });
      }
      await deps.produce(toRecords(result.value, { workspaceId: auth.workspaceId, receivedAt }));
      ctx.status = 204;
    };

  router.post("/api/public/apps/identify", ingest(validateIdentify, (body, r) => [recordFromIdentify(body, r)]));
  router.post("/api/public/apps/batch", ingest(validateBatch, recordsFromBatch));

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
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

/** Sorts a failure into the answer: client errors as they are, Kafka trouble 503, the rest 500. */
function answerError(ctx: Koa.Context, error: unknown, deps: AppDeps): void {
  if (error instanceof HttpError) {
    ctx.status = error.status;
    ctx.body = error.body;
    return;
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === "number" && PARSE_ERRORS[status] !== undefined) {
    ctx.status = status;
    ctx.body = {
      error: PARSE_ERRORS[status],
      message: status === 413 ? `the body is over ${deps.maxRequestBytes} bytes` : (error as Error).message,
    } satisfies ErrorBody;
    return;
  }
  if (typeof status === "number" && status >= 400 && status < 500) {
    ctx.status = status;
    ctx.body = { error: "bad_request", message: (error as Error).message } satisfies ErrorBody;
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

/** ProduceTimeoutError and every kafkajs error (their names start with KafkaJS). */
function isKafkaUnavailable(error: unknown): boolean {
  const name = (error as { name?: unknown }).name;
  return typeof name === "string" && (name === "ProduceTimeoutError" || name.startsWith("KafkaJS"));
}
