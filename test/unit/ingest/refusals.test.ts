/**
 * Whole-request and per-item refusals of the ingest app, in process (test/support/ingest-app.ts):
 * records bounded by the producer's limit, 400 answers of bounded size, and the rate a refused
 * request takes.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { basicAuth, inProcessIngest } from "../../support/ingest-app";
import { recordBytes } from "../../../schemas/kafka/limits";
import { MAX_LISTED_ISSUES, type ErrorBody } from "../../../ingest/errors";
import { gzipSync } from "node:zlib";

const limits = { maxRequestBytes: 512_000, maxMessageBytes: 57_344, maxBatchMessages: 2_500, maxJsonDepth: 64 };

const post = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basicAuth(), ...headers },
    body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
  });

test("a message whose record passes the producer's limit is 413 message_too_large; nothing of the request is produced", async () => {
  // KAFKA_MAX_MESSAGE_BYTES 65,536 (the config check allows it with MAX_MESSAGE_BYTES 57,344): records up to 64,512 bytes.
  const ingest = await inProcessIngest({ limits: { ...limits, maxRecordBytes: 64_512 } });
  try {
    const quotes = { type: "track", messageId: "q", userId: "u", event: "E", properties: { v: '"'.repeat(28_000) } };
    const valid = { type: "track", messageId: "v", userId: "u", event: "E" };
    const response = await post(ingest.base, "/v1/batch", { batch: [valid, quotes] });
    assert.is(response.status, 413);
    const body = (await response.json()) as { error: string; message: string };
    assert.is(body.error, "message_too_large");
    assert.match(body.message, /^message 1 makes a Kafka record of \d+ bytes .*the limit is 64512 bytes per record$/);
    assert.is(ingest.produced.length, 0);
    // The same batch with refused items of that size: each refused record fits the limit.
    const bad = { ...quotes, event: 5, note: "\u0001".repeat(20_000) };
    const mixed = await post(ingest.base, "/v1/batch", { batch: [valid, bad] });
    assert.is(mixed.status, 200);
    assert.ok(ingest.produced.every((r) => recordBytes(r) <= 64_512));
  } finally {
    await ingest.close();
  }
});

test("2,500 items failing 9 checks each: the 400 lists the first 100 issues and counts the other 22,400, in a few KB", async () => {
  const ingest = await inProcessIngest();
  try {
    // review-edge 1: 1,557 bytes of gzip, answered with 22,500 issues (2,217,615 bytes) before.
    const item = { type: "track", messageId: [], userId: [], anonymousId: [], timestamp: 0, sentAt: 0 };
    const bad = { ...item, originalTimestamp: 0, context: 0, event: 0, properties: 0 };
    const body = gzipSync(JSON.stringify({ batch: Array.from({ length: 2_500 }, () => bad) }));
    const response = await post(ingest.base, "/v1/batch", body, { "content-encoding": "gzip" });
    assert.is(response.status, 400);
    const text = await response.text();
    assert.ok(Buffer.byteLength(text) < 16_384, `answer ${Buffer.byteLength(text)} bytes`);
    const answer = JSON.parse(text) as ErrorBody;
    assert.is(answer.error, "invalid_body");
    assert.is(answer.issues!.length, MAX_LISTED_ISSUES);
    assert.is(answer.issuesNotListed, 22_400);
    assert.is(answer.message, "the body has 22500 invalid field(s); nothing was accepted");
    assert.is(answer.issues![0]!.path, "batch[0].event");
    assert.is(ingest.produced.length, 2_500, "each refused item is still stored");
    // A body with few issues lists them all, without the count.
    const few = (await (await post(ingest.base, "/v1/track", { messageId: "m", userId: "u" })).json()) as ErrorBody;
    assert.is(few.issues!.length, 1);
    assert.is(few.issuesNotListed, undefined);
  } finally {
    await ingest.close();
  }
});

test.run();
