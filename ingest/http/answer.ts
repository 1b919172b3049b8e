/**
 * The one place a request's failure becomes its answer: a refusal of errors.ts as it is, a 4xx of
 * an HTTP library as a JSON body, Kafka failing or too slow as 503 + Retry-After, anything else
 * as a logged 500.
 */
import type Koa from "koa";
import type { Logger } from "pino";
import { HttpError, invalidJson, payloadTooLarge, tooDeep, type ErrorBody, type ErrorLimits } from "./errors";

/** Sorts a failure into the answer: client errors as they are, Kafka trouble 503, the rest 500. */
export function answerError(ctx: Koa.Context, error: unknown, retryAfterSeconds: number, limits: ErrorLimits, log: Logger): void {
  if (error instanceof HttpError) {
    ctx.status = error.status;
    ctx.set(error.headers);
    ctx.body = error.body;
    return;
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    ctx.status = status;
    ctx.body = parseErrorBody(status, error as Error, limits);
    return;
  }
  if (isKafkaUnavailable(error)) {
    log.warn({ err: error }, "produce failed; answering 503");
    ctx.status = 503;
    ctx.set("Retry-After", String(retryAfterSeconds));
    ctx.body = { error: "unavailable", message: "events could not be stored now; retry later" } satisfies ErrorBody;
    return;
  }
  log.error({ err: error }, "unexpected error");
  ctx.status = 500;
  ctx.body = { error: "internal", message: "internal error" } satisfies ErrorBody;
}

/** Failures of HTTP libraries that carry a 4xx `status` (raw-body's, Koa's) as error bodies. */
function parseErrorBody(status: number, error: Error, limits: ErrorLimits): ErrorBody {
  if (status === 413) return payloadTooLarge(limits.maxRequestBytes).body;
  if (status === 415) return { error: "unsupported_encoding", message: error.message };
  if (status === 400 && error instanceof RangeError) return tooDeep(limits).body;
  if (status === 400) return invalidJson(error.message).body;
  return { error: "bad_request", message: error.message };
}

/** ProduceTimeoutError and every kafkajs error (their names start with KafkaJS). */
function isKafkaUnavailable(error: unknown): boolean {
  const name = (error as { name?: unknown }).name;
  return typeof name === "string" && (name === "ProduceTimeoutError" || name.startsWith("KafkaJS"));
}
