/**
 * Error answers of the ingest: every refusal is a JSON body `{ error, message, issues? }` with a
 * status saying whose fault it is. Client mistakes are 4xx as they are; Kafka failing or too slow
 * is 503 with Retry-After (retriable); anything else is a logged 500 (ingest/http/answer.ts sorts them).
 */
import type { AuthResult } from "../admission/auth";
import type { ValidationIssue } from "../records/validate";
import type { tags } from "typia";

/** JSON body of every error answer. */
export interface ErrorBody {
  /** Machine-readable code: invalid_json, invalid_body, unauthorized, payload_too_large, ... */
  error: string;
  /** What was wrong, for a person. */
  message: string;
  /** Each bad field of an invalid_body answer: the first 100 of them (MAX_LISTED_ISSUES). */
  issues?: ValidationIssue[];
  /** Bad fields of an invalid_body answer found but not listed in `issues` (absent when every one is listed). */
  issuesNotListed?: number & tags.Type<"uint32">;
}

/**
 * Most issues one invalid_body answer lists: a small gzip batch of 2,500 invalid items would
 * otherwise be answered with 22,500 of them (2.2 MB). Our rule; Segment names none.
 */
export const MAX_LISTED_ISSUES = 100;

/** An error answered to the client as it is (4xx, 503). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
    /** Headers sent with the answer (Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(body.message);
  }
}

/** Body limits named in error messages. */
export interface ErrorLimits {
  maxRequestBytes: number;
  maxJsonDepth: number;
}

const AUTH_MESSAGES = {
  missing: "a writeKey is required: Authorization: Basic base64(writeKey:), Bearer, PublicWriteKey header, or writeKey in the body",
  malformed: "the writeKey could not be read (bad scheme, bad base64, or a non-string writeKey)",
  conflict: "the request names more than one writeKey",
  unknown: "unknown writeKey",
} as const;

/** 405: the route answers POST only (and OPTIONS for CORS). */
export function methodNotAllowed(): HttpError {
  return new HttpError(405, { error: "method_not_allowed", message: "this route answers POST (and OPTIONS for CORS)" });
}

/**
 * 400: the body has invalid fields and nothing in it was accepted; names the first
 * MAX_LISTED_ISSUES bad fields and counts the others (`issuesNotListed`).
 */
export function invalidBody(issues: Iterable<ValidationIssue>): HttpError {
  const listed: ValidationIssue[] = [];
  let count = 0;
  for (const issue of issues) if (++count <= MAX_LISTED_ISSUES) listed.push(issue);
  const body: ErrorBody = {
    error: "invalid_body",
    message: `the body has ${count} invalid field(s); nothing was accepted`,
    issues: listed,
  };
  if (count > listed.length) body.issuesNotListed = count - listed.length;
  return new HttpError(400, body);
}

/**
 * 503 + Retry-After: the request bodies held now would pass the in-flight byte budget
 * (INGEST_MAX_INFLIGHT_BYTES); the client retries after Retry-After seconds.
 */
export function overloaded(retryAfterSeconds: number): HttpError {
  return new HttpError(
    503,
    { error: "overloaded", message: "too many request bytes in flight; retry after Retry-After seconds" },
    { "Retry-After": String(retryAfterSeconds) },
  );
}

/**
 * 413: the body would take more memory once parsed than one request may ever hold (16 times
 * MAX_REQUEST_BYTES, or its share of INGEST_MAX_INFLIGHT_BYTES); retrying cannot help. `bytes`
 * is the estimate of ingest/http/parsed-size.ts.
 */
export function tooCostly(bytes: number, capacity: number): HttpError {
  return new HttpError(413, {
    error: "payload_too_large",
    message: `the body would take about ${bytes} bytes of memory once parsed; one request may hold at most ${capacity}`,
  });
}

/** 413: the body is over MAX_REQUEST_BYTES, counted after decompression (Segment: 500 KB). */
export function payloadTooLarge(maxRequestBytes: number): HttpError {
  return new HttpError(413, {
    error: "payload_too_large",
    message: `the body is over ${maxRequestBytes} bytes (counted after decompression)`,
  });
}

/**
 * 408 + Connection: close: the whole body did not arrive within INGEST_BODY_TIMEOUT_MS of the
 * headers (a client that sends nothing or trickles); the connection is not kept.
 */
export function bodyTimeout(timeoutMs: number): HttpError {
  return new HttpError(408, { error: "body_timeout", message: `the body did not arrive within ${timeoutMs} ms` }, { Connection: "close" });
}

/**
 * 408 + Connection: close: the body stopped arriving (or crawled) while the in-flight budget was
 * full, and its room was given to bodies that arrive (ingest/admission/budget.ts evicts such bodies).
 */
export function bodyTooSlow(): HttpError {
  return new HttpError(
    408,
    { error: "body_too_slow", message: "the body stopped arriving while others needed the room; send it again in one go" },
    { Connection: "close" },
  );
}

/**
 * 400: a body sent with Content-Encoding gzip or deflate that does not decompress (not that
 * format, or cut short); `detail` is zlib's reason ("incorrect header check", "unexpected end of file").
 */
export function invalidEncoding(encoding: string, detail: string): HttpError {
  return new HttpError(400, {
    error: "invalid_encoding",
    message: `the body is not valid ${encoding} data (Content-Encoding: ${encoding}): ${detail}`,
  });
}

/** 400: the client closed the connection before its body ended (nobody reads this answer). */
export function bodyAborted(): HttpError {
  return new HttpError(400, { error: "aborted", message: "the connection closed before the body ended" });
}

/** 400: the body is not JSON, or its top level is not an object or an array. */
export function invalidJson(detail: string): HttpError {
  return new HttpError(400, { error: "invalid_json", message: `the body is not valid JSON: ${detail}` });
}

/** 400: arrays and objects nest deeper than the limit. */
export function tooDeep(limits: ErrorLimits): HttpError {
  return new HttpError(400, { error: "too_deep", message: `the body nests arrays and objects deeper than ${limits.maxJsonDepth} levels` });
}

/** 401: the request's writeKey is missing, unreadable, conflicting or unknown. */
export function unauthorized(reason: Extract<AuthResult, { ok: false }>["reason"]): HttpError {
  return new HttpError(401, { error: "unauthorized", message: AUTH_MESSAGES[reason] });
}

/** Throws 401 unless the request authenticated; narrows `auth` to its workspace. */
export function assertAuthenticated(auth: AuthResult): asserts auth is Extract<AuthResult, { ok: true }> {
  if (!auth.ok) throw unauthorized(auth.reason);
}

/** 400: the request has no body. */
export function noBody(): HttpError {
  return new HttpError(400, { error: "invalid_json", message: "the request has no body" });
}

/** 415: a Content-Type whose body is not read as JSON. */
export function unsupportedMediaType(): HttpError {
  return new HttpError(415, {
    error: "unsupported_media_type",
    message: "Content-Type must be application/json (text/plain or application/x-www-form-urlencoded holding JSON are read as JSON too)",
  });
}

/** 415: a Content-Type charset other than UTF-8 or a Latin-1 label (ingest/http/charset.ts bodyCharset). */
export function unsupportedCharset(charset: string): HttpError {
  return new HttpError(415, {
    error: "unsupported_charset",
    message: `charset ${JSON.stringify(charset.slice(0, 64))} is not supported; send UTF-8 (charset=utf-8, or none)`,
  });
}

/** 415: a Content-Encoding other than gzip (x-gzip), deflate or identity. */
export function unsupportedEncoding(encoding: string): HttpError {
  return new HttpError(415, {
    error: "unsupported_encoding",
    message: `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`,
  });
}

/** 400: a batch over MAX_BATCH_MESSAGES (Segment: 2,500); the count, not the size, is wrong. */
export function tooManyMessages(count: number, limit: number): HttpError {
  return new HttpError(400, { error: "too_many_messages", message: `the batch has ${count} messages; the limit is ${limit} per request` });
}

/**
 * 413: a batch whose shared fields (its `context` and other top-level fields, merged into each
 * item) would add more than MAX_REQUEST_BYTES once copied into every accepted item: a few KB of
 * gzip must not make tens of MB of records. Our rule; Segment names none.
 */
export function sharedFieldsTooLarge(sharedBytes: number, items: number, limit: number): HttpError {
  return new HttpError(413, {
    error: "batch_shared_too_large",
    message: `the batch's shared fields (context and other top-level fields) are ${sharedBytes} bytes; copied into each of its ${items} items they would add ${sharedBytes * items} bytes; the limit is ${limit} bytes (MAX_REQUEST_BYTES): send them in the items or in smaller batches`,
  });
}

/**
 * 413: one message over MAX_MESSAGE_BYTES as stored (Segment: 32 KB per message), or (`over`
 * "record") whose Kafka record, its JSON escaped again, is over the producer's limit (the smaller
 * of KAFKA_MAX_MESSAGE_BYTES and the topic's max.message.bytes): the broker would refuse it on
 * every retry. `index` is the message's position in the batch.
 */
export function messageTooLarge(index: number, bytes: number, limit: number, over: "message" | "record" = "message"): HttpError {
  return new HttpError(413, {
    error: "message_too_large",
    message:
      over === "message"
        ? `message ${index} is ${bytes} bytes; the limit is ${limit} bytes per message`
        : `message ${index} makes a Kafka record of ${bytes} bytes (its JSON escaped again); the limit is ${limit} bytes per record`,
  });
}

/**
 * 429 + Retry-After: the workspace is over its rate limit, of batch items (RATE_LIMIT_PER_SECOND)
 * or of decoded body bytes (RATE_LIMIT_BYTES_PER_SECOND).
 */
export function rateLimited(retryAfterSeconds: number, over: "items" | "bytes" = "items"): HttpError {
  const what = over === "items" ? "messages" : "body bytes";
  return new HttpError(
    429,
    { error: "rate_limited", message: `this writeKey sends more ${what} per second than allowed; retry after Retry-After seconds` },
    { "Retry-After": String(retryAfterSeconds) },
  );
}

/**
 * 429 + Retry-After: the client's network (IPv4 /24, IPv6 /64) made too many requests that no
 * writeKey vouched for: authentication failures (`failures`), or bytes of bodies without a
 * checked key (`bytes`, or `process` when every network's together ran out). Answered before the
 * key is looked up or the body read (ingest/admission/networks.ts).
 */
export function unkeyedLimited(retryAfterSeconds: number, bucket: "failures" | "bytes" | "process"): HttpError {
  const what =
    bucket === "failures" ? "too many requests with a missing or unknown writeKey" : "too many body bytes without a known writeKey";
  return new HttpError(
    429,
    { error: "rate_limited", message: `this network sent ${what}; retry after Retry-After seconds` },
    { "Retry-After": String(retryAfterSeconds) },
  );
}

/**
 * 421: the settings document was asked for under a Host that is neither PUBLIC_URL's nor one of
 * INGEST_ALLOWED_HOSTS (nor, with neither set, a loopback name or an IP literal): its `apiHost`
 * would send the SDK's events wherever the request's Host said. The Host is not echoed.
 */
export function hostNotAllowed(host: string): HttpError {
  return new HttpError(421, {
    error: "host_not_allowed",
    message: `this Host (${host.length} characters) is not one the settings may name; set PUBLIC_URL or INGEST_ALLOWED_HOSTS`,
  });
}

/** 404: the settings of a writeKey that is not configured (the key itself is never echoed). */
export function unknownProject(): HttpError {
  return new HttpError(404, { error: "not_found", message: "no project has this writeKey" });
}

/** 404: no route for this method and path. */
export function notFound(method: string, path: string): HttpError {
  return new HttpError(404, { error: "not_found", message: `no route ${method} ${path}` });
}
