/**
 * The named refusals of the ingest (ingest/http/errors.ts): each one's status, its JSON body's `error`
 * code and `message`, the headers it sends (Retry-After, Connection: close), the cap on the fields
 * an invalid_body answer lists, and the 401 that assertAuthenticated throws.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  HttpError,
  MAX_LISTED_ISSUES,
  assertAuthenticated,
  bodyAborted,
  bodyTimeout,
  bodyTooSlow,
  hostNotAllowed,
  invalidBody,
  invalidEncoding,
  invalidJson,
  messageTooLarge,
  methodNotAllowed,
  noBody,
  notFound,
  overloaded,
  payloadTooLarge,
  rateLimited,
  sharedFieldsTooLarge,
  tooCostly,
  tooDeep,
  tooManyMessages,
  unauthorized,
  unkeyedLimited,
  unknownProject,
  unsupportedCharset,
  unsupportedEncoding,
  unsupportedMediaType,
} from "../../../../ingest/http/errors";
import type { AuthResult } from "../../../../ingest/admission/auth";
import type { ValidationIssue } from "../../../../ingest/records/validate";

/** `n` issues, one per batch item: batch[0].event, batch[1].event, ... */
function* issues(n: number): Generator<ValidationIssue> {
  for (let i = 0; i < n; i++) yield { path: `batch[${i}].event`, expected: "string" };
}

test("an HttpError carries its status, body and headers, and its message is the body's", () => {
  const body = { error: "teapot", message: "short and stout" };
  const error = new HttpError(418, body, { "X-Kind": "tea" });
  assert.ok(error instanceof Error);
  assert.is(error.status, 418);
  assert.is(error.body, body);
  assert.equal(error.headers, { "X-Kind": "tea" });
  assert.is(error.message, "short and stout");
  assert.equal(new HttpError(400, body).headers, {});
});

test("a route that answers POST only refuses other methods with 405", () => {
  const error = methodNotAllowed();
  assert.is(error.status, 405);
  assert.equal(error.body, { error: "method_not_allowed", message: "this route answers POST (and OPTIONS for CORS)" });
});

test("invalidBody lists each bad field and counts them, with nothing left out under the cap", () => {
  const error = invalidBody([
    { path: "batch[0].event", expected: "string" },
    { path: "batch[2].userId", expected: "string | undefined" },
  ]);
  assert.is(error.status, 400);
  assert.equal(error.body, {
    error: "invalid_body",
    message: "the body has 2 invalid field(s); nothing was accepted",
    issues: [
      { path: "batch[0].event", expected: "string" },
      { path: "batch[2].userId", expected: "string | undefined" },
    ],
  });
  assert.not.ok("issuesNotListed" in error.body);
});

test("invalidBody lists at most 100 fields: exactly 100 are all listed, none counted apart", () => {
  assert.is(MAX_LISTED_ISSUES, 100);
  const error = invalidBody(issues(100));
  assert.is(error.body.issues?.length, 100);
  assert.is(error.body.issues?.[99]?.path, "batch[99].event");
  assert.is(error.body.issuesNotListed, undefined);
  assert.is(error.body.message, "the body has 100 invalid field(s); nothing was accepted");
});

test("invalidBody over the cap lists the first 100 fields and counts the others in issuesNotListed", () => {
  const error = invalidBody(issues(2_501));
  assert.is(error.status, 400);
  assert.is(error.body.issues?.length, 100);
  assert.is(error.body.issues?.[0]?.path, "batch[0].event");
  assert.is(error.body.issues?.[99]?.path, "batch[99].event");
  assert.is(error.body.issuesNotListed, 2_401);
  assert.is(error.body.message, "the body has 2501 invalid field(s); nothing was accepted");
  assert.is(invalidBody(issues(101)).body.issuesNotListed, 1);
});

test("overloaded is a 503 whose Retry-After header is the seconds given", () => {
  const error = overloaded(7);
  assert.is(error.status, 503);
  assert.equal(error.body, { error: "overloaded", message: "too many request bytes in flight; retry after Retry-After seconds" });
  assert.equal(error.headers, { "Retry-After": "7" });
});

test("a body too costly to parse and a body over MAX_REQUEST_BYTES are both 413 payload_too_large", () => {
  const costly = tooCostly(9_000_000, 8_192_000);
  assert.is(costly.status, 413);
  assert.equal(costly.body, {
    error: "payload_too_large",
    message: "the body would take about 9000000 bytes of memory once parsed; one request may hold at most 8192000",
  });
  const large = payloadTooLarge(512_000);
  assert.is(large.status, 413);
  assert.equal(large.body, { error: "payload_too_large", message: "the body is over 512000 bytes (counted after decompression)" });
});

test("a body that does not arrive in time, or stops while others need the room, is a 408 that closes the connection", () => {
  const timeout = bodyTimeout(30_000);
  assert.is(timeout.status, 408);
  assert.equal(timeout.body, { error: "body_timeout", message: "the body did not arrive within 30000 ms" });
  assert.equal(timeout.headers, { Connection: "close" });
  const slow = bodyTooSlow();
  assert.is(slow.status, 408);
  assert.equal(slow.body, {
    error: "body_too_slow",
    message: "the body stopped arriving while others needed the room; send it again in one go",
  });
  assert.equal(slow.headers, { Connection: "close" });
});

test("bodies that cannot be read are 400s, each with its own code", () => {
  const encoding = invalidEncoding("gzip", "incorrect header check");
  assert.is(encoding.status, 400);
  assert.equal(encoding.body, {
    error: "invalid_encoding",
    message: "the body is not valid gzip data (Content-Encoding: gzip): incorrect header check",
  });
  assert.equal(bodyAborted().body, { error: "aborted", message: "the connection closed before the body ended" });
  assert.equal(invalidJson("Unexpected token } in JSON").body, {
    error: "invalid_json",
    message: "the body is not valid JSON: Unexpected token } in JSON",
  });
  assert.equal(noBody().body, { error: "invalid_json", message: "the request has no body" });
  const deep = tooDeep({ maxRequestBytes: 512_000, maxJsonDepth: 64 });
  assert.equal(deep.body, { error: "too_deep", message: "the body nests arrays and objects deeper than 64 levels" });
  assert.equal(
    [bodyAborted(), invalidJson("x"), noBody(), deep].map((e) => e.status),
    [400, 400, 400, 400],
  );
});

test("unauthorized is a 401 telling a missing, unreadable, conflicting and unknown writeKey apart", () => {
  const messages = (["missing", "malformed", "conflict", "unknown"] as const).map((reason) => {
    const error = unauthorized(reason);
    assert.is(error.status, 401);
    assert.is(error.body.error, "unauthorized");
    return error.body.message;
  });
  assert.equal(messages, [
    "a writeKey is required: Authorization: Basic base64(writeKey:), Bearer, PublicWriteKey header, or writeKey in the body",
    "the writeKey could not be read (bad scheme, bad base64, or a non-string writeKey)",
    "the request names more than one writeKey",
    "unknown writeKey",
  ]);
});

test("assertAuthenticated lets a workspace through and throws the 401 of a failed authentication", () => {
  const ok: AuthResult = { ok: true, workspaceId: "w1" };
  assert.not.throws(() => assertAuthenticated(ok));
  const failed: AuthResult = { ok: false, reason: "conflict" };
  let thrown: unknown;
  try {
    assertAuthenticated(failed);
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown instanceof HttpError, String(thrown));
  assert.is(thrown.status, 401);
  assert.equal(thrown.body, { error: "unauthorized", message: "the request names more than one writeKey" });
});

test("unsupported Content-Type, charset and Content-Encoding are 415s with their own codes", () => {
  const media = unsupportedMediaType();
  assert.is(media.status, 415);
  assert.is(media.body.error, "unsupported_media_type");
  assert.match(media.body.message, /^Content-Type must be application\/json /);
  const charset = unsupportedCharset("utf-16");
  assert.is(charset.status, 415);
  assert.equal(charset.body, {
    error: "unsupported_charset",
    message: 'charset "utf-16" is not supported; send UTF-8 (charset=utf-8, or none)',
  });
  const encoding = unsupportedEncoding("br");
  assert.is(encoding.status, 415);
  assert.equal(encoding.body, {
    error: "unsupported_encoding",
    message: "Content-Encoding br is not supported; use gzip, deflate or none",
  });
});

test("unsupportedCharset quotes the client's charset as JSON and keeps only its first 64 characters", () => {
  const hostile = unsupportedCharset('x"\n\\y');
  assert.is(hostile.body.message, 'charset "x\\"\\n\\\\y" is not supported; send UTF-8 (charset=utf-8, or none)');
  const long = unsupportedCharset("a".repeat(64) + "b".repeat(200));
  assert.is(long.body.message, `charset "${"a".repeat(64)}" is not supported; send UTF-8 (charset=utf-8, or none)`);
});

test("a batch of too many messages is a 400 naming the count and the limit", () => {
  const error = tooManyMessages(2_501, 2_500);
  assert.is(error.status, 400);
  assert.equal(error.body, { error: "too_many_messages", message: "the batch has 2501 messages; the limit is 2500 per request" });
});

test("shared fields that would grow past the limit once copied into every item are a 413 naming the total", () => {
  const error = sharedFieldsTooLarge(3_000, 400, 512_000);
  assert.is(error.status, 413);
  assert.is(error.body.error, "batch_shared_too_large");
  assert.is(
    error.body.message,
    "the batch's shared fields (context and other top-level fields) are 3000 bytes; copied into each of its 400 items " +
      "they would add 1200000 bytes; the limit is 512000 bytes (MAX_REQUEST_BYTES): send them in the items or in smaller batches",
  );
});

test("messageTooLarge names the message's position, over the stored size by default or over the Kafka record limit", () => {
  const stored = messageTooLarge(3, 40_000, 32_768);
  assert.is(stored.status, 413);
  assert.equal(stored.body, { error: "message_too_large", message: "message 3 is 40000 bytes; the limit is 32768 bytes per message" });
  assert.equal(messageTooLarge(3, 40_000, 32_768, "message").body, stored.body);
  const record = messageTooLarge(0, 1_100_000, 1_048_576, "record");
  assert.is(record.status, 413);
  assert.equal(record.body, {
    error: "message_too_large",
    message: "message 0 makes a Kafka record of 1100000 bytes (its JSON escaped again); the limit is 1048576 bytes per record",
  });
});

test("rateLimited is a 429 with Retry-After, over messages by default or over body bytes", () => {
  const items = rateLimited(2);
  assert.is(items.status, 429);
  assert.equal(items.body, {
    error: "rate_limited",
    message: "this writeKey sends more messages per second than allowed; retry after Retry-After seconds",
  });
  assert.equal(items.headers, { "Retry-After": "2" });
  const bytes = rateLimited(5, "bytes");
  assert.is(bytes.status, 429);
  assert.is(bytes.body.message, "this writeKey sends more body bytes per second than allowed; retry after Retry-After seconds");
  assert.equal(bytes.headers, { "Retry-After": "5" });
});

test("unkeyedLimited is a 429 telling failed writeKeys from bytes sent without a known one", () => {
  const failures = unkeyedLimited(60, "failures");
  assert.is(failures.status, 429);
  assert.equal(failures.body, {
    error: "rate_limited",
    message: "this network sent too many requests with a missing or unknown writeKey; retry after Retry-After seconds",
  });
  assert.equal(failures.headers, { "Retry-After": "60" });
  const bytesMessage = "this network sent too many body bytes without a known writeKey; retry after Retry-After seconds";
  assert.is(unkeyedLimited(1, "bytes").body.message, bytesMessage);
  assert.is(unkeyedLimited(1, "process").body.message, bytesMessage);
  assert.equal(unkeyedLimited(3, "process").headers, { "Retry-After": "3" });
});

test("a Host the settings may not name is a 421 giving its length, never the Host itself", () => {
  const host = "evil.example:8080";
  const error = hostNotAllowed(host);
  assert.is(error.status, 421);
  assert.equal(error.body, {
    error: "host_not_allowed",
    message: "this Host (17 characters) is not one the settings may name; set PUBLIC_URL or INGEST_ALLOWED_HOSTS",
  });
  assert.not.ok(error.body.message.includes("evil"));
});

test("an unknown route names its method and path; unknown settings never echo the writeKey; both are 404 not_found", () => {
  const route = notFound("GET", "/v1/nothing");
  assert.is(route.status, 404);
  assert.equal(route.body, { error: "not_found", message: "no route GET /v1/nothing" });
  const project = unknownProject();
  assert.is(project.status, 404);
  assert.equal(project.body, { error: "not_found", message: "no project has this writeKey" });
});

test("only the 503, the 429s and the 408s send headers: every other refusal sends none", () => {
  const plain = [
    methodNotAllowed(),
    invalidBody(issues(1)),
    tooCostly(1, 1),
    payloadTooLarge(1),
    invalidEncoding("deflate", "unexpected end of file"),
    bodyAborted(),
    invalidJson("x"),
    tooDeep({ maxRequestBytes: 1, maxJsonDepth: 1 }),
    unauthorized("missing"),
    noBody(),
    unsupportedMediaType(),
    unsupportedCharset("x"),
    unsupportedEncoding("x"),
    tooManyMessages(2, 1),
    sharedFieldsTooLarge(1, 1, 1),
    messageTooLarge(0, 2, 1),
    hostNotAllowed("h"),
    unknownProject(),
    notFound("GET", "/"),
  ];
  assert.equal(
    plain.map((e) => e.headers),
    plain.map(() => ({})),
  );
});

test.run();
