/**
 * Live request-level tests of the API rules (Segment-compatible surface): routes, auth forms,
 * clock skew, limits, encodings, CORS, text/plain, context.ip. Real ingest, Kafka, sink and
 * ClickHouse (test/run.sh starts the stack).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { deflateSync, gzipSync } from "node:zlib";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { openapiDocument } from "../../ingest/http/openapi";
import { answer, basic, LiveStack, waitFor } from "../support/harness";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- package.json sits outside rootDir, so it cannot be imported
const version: string = (require("../../../package.json") as { version: string }).version;

const stack = new LiveStack({ TRUST_PROXY: "1", MAX_BATCH_MESSAGES: "50" });
const api = suite("API rules (live)");
const b64 = (text: string) => Buffer.from(text).toString("base64");

api.before(() => stack.start());
api.after(() => stack.stop());

api("every message type on every route of both prefixes lands as one typed row", async () => {
  const bodies = {
    identify: { traits: { plan: "pro" } },
    track: { event: "Clicked", properties: { button: "buy" } },
    page: { name: "Home", category: "Docs", properties: { url: "https://x.test/" } },
    screen: { name: "Settings" },
    group: { groupId: "g1", traits: { name: "Acme" } },
    alias: { previousId: "anon-9" },
  };
  const ids: string[] = [];
  for (const prefix of ["/api/public/apps", "/v1"]) {
    for (const [type, fields] of Object.entries(bodies)) {
      const messageId = randomUUID();
      ids.push(messageId);
      const response = await stack.post(`${prefix}/${type}`, { ...fields, userId: "u-routes", messageId });
      assert.is(response.status, 200, `${prefix}/${type}: ${response.text}`);
      assert.is(response.text, prefix === "/v1" ? '{"success":true}' : "", `${prefix}/${type}`);
    }
  }
  const rows = await stack.rowsLanded<{ type: string; name: string; category: string; group_id: string; previous_id: string }>(ids);
  assert.equal(rows.map((r) => r.type).sort(), [
    "alias",
    "alias",
    "group",
    "group",
    "identify",
    "identify",
    "page",
    "page",
    "screen",
    "screen",
    "track",
    "track",
  ]);
  const page = rows.find((r) => r.type === "page")!;
  assert.is(page.name, "Home");
  assert.is(page.category, "Docs");
  assert.is(rows.find((r) => r.type === "group")!.group_id, "g1");
  assert.is(rows.find((r) => r.type === "alias")!.previous_id, "anon-9");
});

api(
  "Segment's routes, aliases included, answer {success: true} as JSON; the spec's answer an empty body; X-Rejected-Messages stays",
  async () => {
    const track = () => ({ type: "track", event: "Answered", userId: "u-answer", messageId: randomUUID() });
    const bad = { type: "track", userId: "u-answer", messageId: randomUUID() }; // no event: refused, kept
    for (const [path, body] of [
      ["/v1/track", track()],
      ["/v1/t", track()],
      ["/v1/batch", { batch: [track(), bad] }],
      ["/v1/b", { batch: [track()] }],
      ["/v1/import", { batch: [track()] }],
      ["/v1/import/", { batch: [track()] }],
    ] as const) {
      const response = await stack.post(path, body);
      assert.is(response.status, 200, `${path}: ${response.text}`);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/, path);
      assert.equal(response.json, { success: true }, path);
    }
    const mixed = await stack.post("/v1/batch", { batch: [track(), bad] });
    assert.is(mixed.headers.get("x-rejected-messages"), "1");
    const spec = await stack.post("/api/public/apps/batch", { batch: [track(), bad] });
    assert.is(spec.status, 200);
    assert.is(spec.text, "", "the spec's empty success body");
    assert.is(spec.headers.get("x-rejected-messages"), "1");
  },
);

api("each auth form is accepted; conflicting keys and unknown keys are 401", async () => {
  const send = (headers: Record<string, string>, extra: Record<string, unknown> = {}) =>
    stack.post("/v1/track", { event: "Auth", userId: "u", messageId: randomUUID(), ...extra }, headers);
  assert.is((await send({ authorization: `Basic ${b64("test-key:")}` })).status, 200, "Segment Basic key:");
  assert.is((await send({ authorization: "Bearer test-key" })).status, 200, "Bearer");
  assert.is((await send({ publicwritekey: "test-key" })).status, 200, "PublicWriteKey");
  assert.is((await send({}, { writeKey: "test-key" })).status, 200, "writeKey in the body");
  assert.is((await send({ authorization: "Bearer test-key" }, { writeKey: "test-key" })).status, 200, "header and body agree");
  const conflict = await send({ authorization: "Bearer test-key" }, { writeKey: "other-key" });
  assert.is(conflict.status, 401);
  assert.match(String(conflict.json!.message), "more than one writeKey");
  assert.is((await send({ authorization: "Bearer test-key", publicwritekey: "other-key" })).status, 401);
  assert.is((await send({ authorization: "Basic !!!" })).status, 401);
  assert.is((await send({ authorization: "Bearer nope" })).status, 401);
});

api("Dittofeed's keyId:secret Basic form authenticates as the whole decoded text", async () => {
  const dittofeed = new LiveStack({ WRITE_KEYS: "key-id:s3cret=ws-ditto" });
  await dittofeed.start();
  try {
    const messageId = randomUUID();
    const ok = await dittofeed.post(
      "/api/public/apps/identify",
      { userId: "u", messageId },
      { authorization: `Basic ${b64("key-id:s3cret")}` },
    );
    assert.is(ok.status, 200);
    const [row] = await dittofeed.rowsLanded<{ workspace_id: string }>([messageId]);
    assert.is(row!.workspace_id, "ws-ditto");
  } finally {
    await dittofeed.stop();
  }
});

api("sentAt corrects client clock skew; original_timestamp, sent_at and received_at are kept", async () => {
  const messageId = randomUUID();
  // The client clock is 2 h ahead: it stamped the event 10 s before sending.
  const now = Date.now() + 2 * 3600_000;
  const sentAt = new Date(now).toISOString();
  const timestamp = new Date(now - 10_000).toISOString();
  const before = Date.now();
  assert.is(
    (await stack.post("/v1/batch", { sentAt, batch: [{ type: "track", event: "Skew", userId: "u", messageId, timestamp }] })).status,
    200,
  );
  const after = Date.now();
  const [row] = await stack.rowsLanded<{ timestamp: string; original_timestamp: string; sent_at: string; received_at: string }>([
    messageId,
  ]);
  const seconds = (text: string) => Date.parse(text.replace(" ", "T") + "Z") / 1000;
  const corrected = seconds(row!.timestamp);
  assert.ok(
    corrected >= Math.floor((before - 10_000) / 1000) - 1 && corrected <= Math.ceil((after - 10_000) / 1000) + 1,
    `corrected ${row!.timestamp}`,
  );
  assert.is(seconds(row!.original_timestamp), Math.floor(Date.parse(timestamp) / 1000));
  assert.is(seconds(row!.sent_at), Math.floor(Date.parse(sentAt) / 1000));
  assert.is(seconds(row!.received_at) - corrected, 10);
});

api(
  "context.ip comes from the client address (the X-Forwarded-For entry TRUST_PROXY hops from the right; a spoofed leftmost one is ignored) unless the message has one",
  async () => {
    const [forwarded, own] = [randomUUID(), randomUUID()];
    const headers = { authorization: basic("test-key"), "x-forwarded-for": "203.0.113.9, 198.51.100.7" };
    assert.is((await stack.post("/v1/track", { event: "Ip", userId: "u", messageId: forwarded }, headers)).status, 200);
    assert.is(
      (await stack.post("/v1/track", { event: "Ip", userId: "u", messageId: own, context: { ip: "192.0.2.1" } }, headers)).status,
      200,
    );
    const rows = await stack.rowsLanded<{ message_id: string; context: string }>([forwarded, own]);
    const ip = (id: string) => JSON.parse(rows.find((r) => r.message_id === id)!.context).ip;
    assert.is(ip(forwarded), "198.51.100.7");
    assert.is(ip(own), "192.0.2.1");
  },
);

api(
  "limits: a message over 32 KB is refused as an item and kept, the one beside it lands; a body over 500 KB -> 413, too many messages -> 400",
  async () => {
    const ids = [randomUUID(), randomUUID()];
    const bigMessage = await stack.post("/v1/batch", {
      batch: [
        { type: "track", event: "Small", userId: "u", messageId: ids[0] },
        { type: "track", event: "Big", userId: "u", messageId: ids[1], properties: { blob: "x".repeat(33 * 1024) } },
      ],
    });
    assert.is(bigMessage.status, 200);
    assert.is(bigMessage.headers.get("x-rejected-messages"), "1");
    assert.equal(
      (await stack.rowsLanded([ids[0]!])).map((r) => r.message_id),
      [ids[0]],
    );
    const [kept] = await waitFor("the big message in rejected_messages", async () => {
      const rows = await stack.select<{ reasons: string[]; raw: string }>(
        `SELECT reasons, raw FROM ${stack.database}.rejected_messages FINAL WHERE message_id = '${ids[1]}'`,
      );
      return rows.length === 1 ? rows : undefined;
    });
    assert.match(kept!.reasons[0]!, /^\$input: \d+ bytes, over the limit of 32768 bytes per message$/);
    assert.ok(kept!.raw.startsWith('{"userId":"u"'), kept!.raw.slice(0, 40));
    const bigBody = await stack.post("/v1/batch", {
      batch: [{ type: "track", event: "B", userId: "u", messageId: randomUUID(), properties: { blob: "y".repeat(501 * 1024) } }],
    });
    assert.is(bigBody.status, 413);
    assert.is(bigBody.json!.error, "payload_too_large");
    const many = await stack.post("/v1/batch", {
      batch: Array.from({ length: 51 }, () => ({ type: "track", event: "M", userId: "u", messageId: randomUUID() })),
    });
    assert.is(many.status, 400);
    assert.is(many.json!.error, "too_many_messages");
    assert.match(String(many.json!.message), "limit is 50");
    await stack.marker();
    assert.equal(
      (await stack.finalRows(ids)).map((r) => r.message_id),
      [ids[0]],
    );
  },
);

api("gzip and deflate bodies are accepted, limits counted after decompression; other encodings -> 415", async () => {
  const [gz, df] = [randomUUID(), randomUUID()];
  const body = (messageId: string) => JSON.stringify({ batch: [{ type: "track", event: "Zipped", userId: "u", messageId }] });
  const headers = (encoding: string) => ({ authorization: basic("test-key"), "content-encoding": encoding });
  assert.is((await stack.post("/v1/batch", gzipSync(body(gz)), headers("gzip"))).status, 200);
  assert.is((await stack.post("/v1/batch", deflateSync(body(df)), headers("deflate"))).status, 200);
  // Content codings are case-insensitive and x-gzip is gzip (RFC 9110 8.4.1.3).
  const [xg, upper] = [randomUUID(), randomUUID()];
  assert.is((await stack.post("/v1/batch", gzipSync(body(xg)), headers("x-gzip"))).status, 200);
  assert.is((await stack.post("/v1/batch", gzipSync(body(upper)), headers("GZIP"))).status, 200);
  await stack.rowsLanded([gz, df, xg, upper]);
  // 600 KB of JSON compresses to a few KB, but the limit counts what it expands to.
  const padded = JSON.stringify({
    batch: [{ type: "track", event: "Pad", userId: "u", messageId: randomUUID(), properties: { p: "z".repeat(600 * 1024) } }],
  });
  const bomb = await stack.post("/v1/batch", gzipSync(padded), headers("gzip"));
  assert.is(bomb.status, 413);
  const br = await stack.post("/v1/batch", body(randomUUID()), headers("br"));
  assert.is(br.status, 415);
  assert.is(br.json!.error, "unsupported_encoding");
});

api("a body that does not decompress as its Content-Encoding says -> 400 invalid_encoding, nothing stored, no error logged", async () => {
  const id = randomUUID();
  const body = JSON.stringify({ batch: [{ type: "track", event: "Broken", userId: "u", messageId: id }] });
  const headers = (encoding: string) => ({ authorization: basic("test-key"), "content-encoding": encoding });
  const zipped = gzipSync(body);
  const cases: [string, Uint8Array | string, string][] = [
    ["plain JSON labelled gzip", body, "gzip"],
    ["plain JSON labelled deflate", body, "deflate"],
    ["random bytes labelled gzip", new Uint8Array(randomBytes(2_000)), "gzip"],
    ["a gzip stream cut in half", new Uint8Array(zipped.subarray(0, Math.floor(zipped.length / 2))), "gzip"],
    ["a gzip stream without its trailer", new Uint8Array(zipped.subarray(0, zipped.length - 8)), "gzip"],
    ["a deflate stream cut short", new Uint8Array(deflateSync(body).subarray(0, 20)), "deflate"],
  ];
  for (const [what, raw, encoding] of cases) {
    const answer = await stack.post("/v1/batch", raw, headers(encoding));
    assert.is(answer.status, 400, `${what}: ${answer.status} ${answer.text}`);
    assert.is(answer.json!.error, "invalid_encoding", what);
    assert.match(String(answer.json!.message), `not valid ${encoding} data`, what);
  }
  await stack.marker();
  assert.equal(await stack.finalRows([id]), []);
  assert.not.match(stack.ingest!.output(), /unexpected error|"level":50/, "no error logged");
});

api("CORS: preflight answers for any route; responses carry the allow-origin header", async () => {
  for (const path of ["/v1/batch", "/api/public/apps/identify", "/v1/alias"]) {
    const preflight = await fetch(`${stack.base}${path}`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type",
      },
    });
    assert.is(preflight.status, 204, path);
    assert.is(preflight.headers.get("access-control-allow-origin"), "https://app.example");
    assert.match(preflight.headers.get("access-control-allow-headers") ?? "", "Authorization");
    assert.match(preflight.headers.get("access-control-allow-methods") ?? "", "POST");
  }
  const post = await stack.post(
    "/v1/track",
    { event: "Cors", userId: "u", messageId: randomUUID() },
    { authorization: basic("test-key"), origin: "https://app.example" },
  );
  assert.is(post.status, 200);
  assert.is(post.headers.get("access-control-allow-origin"), "https://app.example");
  const refused = await stack.post("/v1/track", { event: "Cors" }, { origin: "https://app.example" });
  assert.is(refused.status, 401);
  assert.is(refused.headers.get("access-control-allow-origin"), "https://app.example", "errors are readable by the page too");
});

api("text/plain JSON bodies (sendBeacon) are accepted with the writeKey in the body", async () => {
  const messageId = randomUUID();
  const response = await fetch(`${stack.base}/v1/page`, {
    method: "POST",
    headers: { "content-type": "text/plain;charset=UTF-8" },
    body: JSON.stringify({ writeKey: "test-key", anonymousId: "anon-beacon", name: "Pricing", messageId }),
  });
  const result = await answer(response);
  assert.is(result.status, 200, result.text);
  const [row] = await stack.rowsLanded<{ name: string; anonymous_id: string; extra: string }>([messageId]);
  assert.is(row!.name, "Pricing");
  assert.is(row!.anonymous_id, "anon-beacon");
  assert.not.match(row!.extra, "test-key", "the writeKey is not stored");
});

api("a body declared ISO-8859-1 lands decoded as such (Windows-1252, as browsers read the label)", async () => {
  const messageId = randomUUID();
  const response = await fetch(`${stack.base}/v1/track`, {
    method: "POST",
    headers: { "content-type": "application/json; charset=iso-8859-1", authorization: basic("test-key") },
    // "Café €" with é as 0xE9 and € as 0x80: read as UTF-8, both would be U+FFFD.
    body: Buffer.concat([
      Buffer.from(`{"messageId":"${messageId}","userId":"u-latin1","event":"Caf`),
      Buffer.from([0xe9, 0x20, 0x80]),
      Buffer.from('"}'),
    ]),
  });
  const result = await answer(response);
  assert.is(result.status, 200, result.text);
  const [row] = await stack.rowsLanded<{ event: string }>([messageId]);
  assert.is(row!.event, "Café €");
});

api("events keeps every other field the client sent in extra", async () => {
  const messageId = randomUUID();
  const body = {
    event: "Extra",
    userId: "u",
    messageId,
    integrations: { All: false },
    channel: "server",
    _metadata: { nodeVersion: "20" },
  };
  assert.is((await stack.post("/v1/track", body)).status, 200);
  const [row] = await stack.rowsLanded<{ extra: string }>([messageId]);
  assert.equal(JSON.parse(row!.extra), { integrations: { All: false }, channel: "server", _metadata: { nodeVersion: "20" } });
});

api("GET /openapi.json serves the document built from the types", async () => {
  const response = await fetch(`${stack.base}/openapi.json`);
  assert.is(response.status, 200);
  const served = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
  assert.is(served.openapi, "3.1.0");
  assert.ok(served.paths["/v1/batch"]);
  assert.equal(served, JSON.parse(JSON.stringify(openapiDocument(version))));
});

api.run();
