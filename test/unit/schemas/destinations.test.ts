/**
 * Webhook destinations (schemas/destinations.ts): which topic values are destinations, the sealing
 * of a destination's shared secret (AES-256-GCM bound to its destinationId), Segment's
 * `X-Signature`, the listing that never shows the secret, and the operator's headers refused.
 */
import { createHmac } from "node:crypto";
import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  deliveryReports,
  headerProblem,
  listed,
  openSecret,
  parseDestination,
  sealSecret,
  SECRET_KEY_MIN_CHARS,
  signature,
  type SealedSecret,
  type WebhookDestination,
} from "../../../schemas/destinations";

const KEY = "k".repeat(SECRET_KEY_MIN_CHARS);
const OTHER_KEY = "o".repeat(SECRET_KEY_MIN_CHARS);

/** A full, valid entry as the CLI writes it, as plain JSON fields. */
const entry = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  destinationId: "orders-hook-1",
  workspaceId: "w1",
  kind: "webhook",
  name: "Webhooks",
  url: "https://hooks.example.com/segment",
  headers: { Authorization: "Bearer abc" },
  secret: { iv: "aXY=", tag: "dGFn", data: "ZGF0YQ==" },
  types: ["track", "identify"],
  events: ["Order Completed"],
  categories: ["Advertising"],
  batchSize: 20,
  batchWaitMs: 500,
  paused: false,
  createdAt: "2026-01-02T03:04:05.000Z",
  updatedAt: "2026-01-02T03:04:05.000Z",
  ...over,
});

const without = (field: string): Record<string, unknown> => {
  const e = entry();
  delete e[field];
  return e;
};

const parse = (value: unknown): WebhookDestination | undefined => parseDestination(JSON.stringify(value));

test("a full valid entry is parsed, from a Buffer or a string, with its fields as written", () => {
  const text = JSON.stringify(entry());
  const fromBuffer = parseDestination(Buffer.from(text));
  assert.ok(fromBuffer);
  assert.equal(fromBuffer, JSON.parse(text));
  assert.equal(parseDestination(text), JSON.parse(text));
  const minimal = without("secret");
  delete minimal.types;
  delete minimal.events;
  delete minimal.categories;
  assert.equal(parse(minimal), minimal, "secret, types, events and categories are optional");
});

test("a tombstone (null or an empty value) is no destination", () => {
  assert.is(parseDestination(null), undefined);
  assert.is(parseDestination(""), undefined);
  assert.is(parseDestination(Buffer.alloc(0)), undefined);
});

test("a value that is not JSON, or JSON that is not an object, is no destination", () => {
  assert.is(parseDestination("{not json"), undefined);
  assert.is(parseDestination(Buffer.from(JSON.stringify(entry()).slice(0, -1))), undefined, "truncated");
  assert.is(parseDestination("null"), undefined);
  assert.is(parseDestination("[]"), undefined);
  assert.is(parseDestination('"webhook"'), undefined);
});

test("a destinationId must be lowercase letters, digits and dashes, starting with a letter or digit, 1 to 63 characters", () => {
  assert.ok(parse(entry({ destinationId: "a" })), "one character");
  assert.ok(parse(entry({ destinationId: "a".repeat(63) })), "63 characters");
  assert.is(parse(entry({ destinationId: "Orders" })), undefined, "uppercase");
  assert.is(parse(entry({ destinationId: "a".repeat(64) })), undefined, "too long");
  assert.is(parse(entry({ destinationId: "" })), undefined, "empty");
  assert.is(parse(entry({ destinationId: "-orders" })), undefined, "a leading dash");
  assert.is(parse(entry({ destinationId: "orders_hook" })), undefined, "an underscore");
  assert.is(parse(entry({ destinationId: "orders/hook" })), undefined, "a slash");
});

test("batchSize is a whole number from 1 to 1000; batchWaitMs at most 60000", () => {
  assert.ok(parse(entry({ batchSize: 1 })));
  assert.ok(parse(entry({ batchSize: 1000 })));
  assert.is(parse(entry({ batchSize: 0 })), undefined);
  assert.is(parse(entry({ batchSize: 1001 })), undefined);
  assert.is(parse(entry({ batchSize: 2.5 })), undefined);
  assert.is(parse(entry({ batchSize: "20" })), undefined);
  assert.ok(parse(entry({ batchWaitMs: 0 })));
  assert.ok(parse(entry({ batchWaitMs: 60_000 })));
  assert.is(parse(entry({ batchWaitMs: 60_001 })), undefined);
  assert.is(parse(entry({ batchWaitMs: -1 })), undefined);
});

test("an entry missing a required field is no destination", () => {
  for (const field of [
    "destinationId",
    "workspaceId",
    "kind",
    "name",
    "url",
    "headers",
    "batchSize",
    "batchWaitMs",
    "paused",
    "createdAt",
    "updatedAt",
  ])
    assert.is(parse(without(field)), undefined, field);
});

test("only the webhook kind is a destination, and fields of the wrong type refuse the entry", () => {
  assert.is(parse(entry({ kind: "http" })), undefined);
  assert.is(parse(entry({ kind: "Webhook" })), undefined);
  assert.is(parse(entry({ name: "" })), undefined, "an empty name");
  assert.is(parse(entry({ workspaceId: "" })), undefined, "an empty workspaceId");
  assert.is(parse(entry({ url: "https://x/" + "a".repeat(2048) })), undefined, "a URL over 2048 characters");
  assert.is(parse(entry({ headers: { "X-Count": 1 } })), undefined, "a header that is not a string");
  assert.is(parse(entry({ types: ["track", "purchase"] })), undefined, "a type Segment does not have");
  assert.is(parse(entry({ paused: "false" })), undefined);
  assert.is(parse(entry({ secret: { iv: "aXY=", tag: "dGFn" } })), undefined, "a sealed secret without its data");
});

test("a sealed secret opens with the same key and destinationId", () => {
  const secret = "whsec_Ünïcode 🔑 secret";
  const sealed = sealSecret(secret, "orders-hook-1", KEY);
  assert.type(sealed.iv, "string");
  assert.is(Buffer.from(sealed.iv, "base64").length, 12, "a 96-bit GCM nonce");
  assert.is(Buffer.from(sealed.tag, "base64").length, 16, "a full 128-bit tag");
  assert.is.not(sealed.data, Buffer.from(secret).toString("base64"), "the data is not the secret in base64");
  assert.not.ok(JSON.stringify(sealed).includes("whsec"), "the secret is not readable in the sealed form");
  assert.is(openSecret(sealed, "orders-hook-1", KEY), secret);
  assert.is(openSecret(sealSecret("", "d", KEY), "d", KEY), "", "an empty secret round-trips too");
});

test("a sealed secret does not open under another key or for another destinationId", () => {
  const sealed = sealSecret("s3cret", "orders-hook-1", KEY);
  assert.is(openSecret(sealed, "orders-hook-1", OTHER_KEY), undefined, "another key");
  assert.is(openSecret(sealed, "orders-hook-2", KEY), undefined, "another destination: the secret is bound to its id");
  assert.is(openSecret(sealed, "orders-hook-1", KEY + "x"), undefined, "a key that differs by one more character");
});

test("a sealed secret whose tag, data or iv was altered does not open", () => {
  const sealed = sealSecret("s3cret", "d1", KEY);
  const flip = (b64: string, at = 0): string => {
    const bytes = Buffer.from(b64, "base64");
    bytes[at] = bytes[at]! ^ 1;
    return bytes.toString("base64");
  };
  const altered: Array<[string, SealedSecret]> = [
    ["tag", { ...sealed, tag: flip(sealed.tag) }],
    ["tag's last byte", { ...sealed, tag: flip(sealed.tag, 15) }],
    ["data", { ...sealed, data: flip(sealed.data) }],
    ["iv", { ...sealed, iv: flip(sealed.iv) }],
    ["data swapped for another secret's", { ...sealed, data: sealSecret("other!", "d1", KEY).data }],
    ["empty tag", { ...sealed, tag: "" }],
    ["empty iv", { ...sealed, iv: "" }],
  ];
  for (const [what, s] of altered) assert.is(openSecret(s, "d1", KEY), undefined, what);
  assert.is(openSecret(sealed, "d1", KEY), "s3cret", "the unaltered one still opens");
});

test("a sealed secret whose tag was cut short does not open (the full 128-bit tag is required)", () => {
  const sealed = sealSecret("s3cret", "d1", KEY);
  const tag = Buffer.from(sealed.tag, "base64");
  for (const bytes of [4, 8, 12, 15])
    assert.is(openSecret({ ...sealed, tag: tag.subarray(0, bytes).toString("base64") }, "d1", KEY), undefined, `a ${bytes}-byte tag`);
});

test("two seals of the same secret differ (a random iv each time), and both open", () => {
  const a = sealSecret("same", "d1", KEY);
  const b = sealSecret("same", "d1", KEY);
  assert.is.not(a.iv, b.iv);
  assert.is.not(a.data + a.tag, b.data + b.tag);
  assert.is(openSecret(a, "d1", KEY), "same");
  assert.is(openSecret(b, "d1", KEY), "same");
});

test("sealSecret throws on a key shorter than SECRET_KEY_MIN_CHARS, and takes one of exactly that length", () => {
  assert.is(SECRET_KEY_MIN_CHARS, 32, "256 bits as characters");
  assert.throws(() => sealSecret("s", "d1", "k".repeat(SECRET_KEY_MIN_CHARS - 1)), /DESTINATIONS_SECRET_KEY/);
  assert.throws(() => sealSecret("s", "d1", ""), /at least 32/);
  const sealed = sealSecret("s", "d1", "k".repeat(SECRET_KEY_MIN_CHARS));
  assert.is(openSecret(sealed, "d1", "k".repeat(SECRET_KEY_MIN_CHARS)), "s");
});

test("signature is the hex HMAC-SHA1 of the body keyed by the secret (the RFC 2104 example vector)", () => {
  assert.is(signature("key", "The quick brown fox jumps over the lazy dog"), "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9");
  assert.is(signature("", ""), "fbdb1d1b18aa6c08324b7d64b71fb76370690e1d", "an empty key and body");
});

test("signature is over the exact bytes of the body", () => {
  const body = '{"batch":[{"type":"track","event":"Ordered","messageId":"m1"}]}';
  const reference = (b: Buffer) => createHmac("sha1", "s3cret").update(b).digest("hex");
  assert.is(signature("s3cret", body), reference(Buffer.from(body)));
  assert.is(signature("s3cret", Buffer.from(body)), signature("s3cret", body), "a Buffer and its ASCII string sign alike");
  const changed = Buffer.from(body);
  changed[changed.length - 3] = changed[changed.length - 3]! ^ 1;
  assert.is.not(signature("s3cret", changed), signature("s3cret", body), "one changed byte changes it");
  assert.is(signature("s3cret", changed), reference(changed));
  assert.is.not(signature("s3cret", body + " "), signature("s3cret", body), "a trailing space changes it");
  assert.is.not(signature("s3cret2", body), signature("s3cret", body), "another secret changes it");
  const unicode = '{"event":"Café ☕"}';
  assert.is(
    signature("s", unicode),
    createHmac("sha1", "s").update(Buffer.from(unicode, "utf8")).digest("hex"),
    "a string is signed as its UTF-8 bytes",
  );
  assert.is.not(signature("s", unicode), createHmac("sha1", "s").update(Buffer.from(unicode, "latin1")).digest("hex"));
  assert.match(signature("s", body), /^[0-9a-f]{40}$/);
});

test("listed shows whether a destination has a secret, never the secret", () => {
  const sealed = sealSecret("top-secret-value", "d1", KEY);
  const d = parse(entry({ destinationId: "d1", secret: sealed }))!;
  const shown = listed(d);
  assert.is(shown.secret, true);
  const text = JSON.stringify(shown);
  for (const part of [sealed.iv, sealed.tag, sealed.data, "top-secret-value"]) assert.not.ok(text.includes(part), part);
  assert.is(shown.destinationId, "d1");
  assert.equal(shown.headers, { Authorization: "Bearer abc" });
  assert.equal(d.secret, sealed, "the destination itself keeps its secret");
  const plain = parse(without("secret"))!;
  assert.is(listed(plain).secret, false);
  assert.equal(Object.keys(listed(plain)).sort(), [...Object.keys(plain), "secret"].sort());
});

test("headerProblem accepts an ordinary header, and a tab in a value", () => {
  assert.is(headerProblem("Authorization", "Bearer x"), undefined);
  assert.is(headerProblem("X-Api-Key", "a\tb"), undefined);
  assert.is(headerProblem("x!#$%&'*+.^_`|~-9", ""), undefined, "every token character");
  assert.is(headerProblem("X-Long", "v".repeat(8_192)), undefined, "8192 characters");
});

test("headerProblem refuses a name that is not an RFC 9110 token", () => {
  for (const name of ["X Api", "X:Api", "", "X-Api\n", "Ä", "X(1)", "a".repeat(101)])
    assert.type(headerProblem(name, "v"), "string", JSON.stringify(name));
  assert.is(headerProblem("a".repeat(100), "v"), undefined, "100 characters is a name");
});

test("headerProblem refuses the headers the delivery sets itself, in any case", () => {
  for (const name of [
    "Content-Type",
    "content-type",
    "CONTENT-LENGTH",
    "X-Signature",
    "x-SIGNATURE",
    "host",
    "Host",
    "Transfer-Encoding",
    "Connection",
  ])
    assert.type(headerProblem(name, "v"), "string", name);
});

test("headerProblem refuses a value with CR, LF, NUL or another control character, or over 8192 characters", () => {
  for (const value of ["a\rb", "a\nb", "x\r\nX-Injected: 1", "a\u0000b", "\u001f", "\u007f", "\u0008"])
    assert.type(headerProblem("X-Api", value), "string", JSON.stringify(value));
  assert.type(headerProblem("X-Api", "v".repeat(8_193)), "string", "8193 characters");
});

test("a delivery attempt's reports: one per message, workspaceId first, the event or the name, the user's ids, the attempt", () => {
  const messages = [
    { messageId: "m1", type: "track", event: "Signed Up", userId: "u1", receivedAt: "2026-11-29T10:00:00.000Z" },
    { messageId: "m2", type: "page", name: "Home", anonymousId: "a2", receivedAt: "2026-11-29T10:00:01.000Z" },
  ];
  const reports = deliveryReports(
    { workspaceId: "ws1", destinationId: "d-1" },
    messages,
    { outcome: "retry", status: 503, attempt: 2 },
    Date.UTC(2026, 10, 29, 10, 0, 5),
  );
  assert.equal(reports[1], {
    workspaceId: "ws1",
    destinationId: "d-1",
    messageId: "m2",
    type: "page",
    event: "Home",
    userId: "",
    anonymousId: "a2",
    receivedAt: "2026-11-29T10:00:01.000Z",
    outcome: "retry",
    status: 503,
    attempt: 2,
    at: "2026-11-29T10:00:05.000Z",
  });
  assert.is(reports[0]!.event, "Signed Up");
  assert.ok(JSON.stringify(reports[0]).startsWith('{"workspaceId":"ws1",'), "the live tail reads the workspace without parsing");
});

test.run();
