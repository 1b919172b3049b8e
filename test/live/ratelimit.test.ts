/**
 * The rate limit's bytes bucket, live (real ingest, Kafka, sink, ClickHouse): bodies refused 429
 * by the items bucket after parsing pay their decoded bytes, and once a workspace's bytes are
 * spent a request keyed in its headers is answered 429 before its body is read (a review of
 * 2026-11-27: with the items bucket kept at a few tokens, 2,500-item gzip batches were read,
 * inflated and parsed and then refused for free). The SDK-retry case (a 429 takes no item token)
 * is test/unit/ingest/admission/ratelimit.test.ts's.
 */
import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { gzipSync } from "node:zlib";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { adminPort, basic, LiveStack } from "../support/harness";

const BYTES_PER_SECOND = 1_000_000;
const BYTES_BURST = 2_000_000;
const stack = new LiveStack({
  RATE_LIMIT_PER_SECOND: "10",
  RATE_LIMIT_BURST: "2500",
  RATE_LIMIT_BYTES_PER_SECOND: String(BYTES_PER_SECOND),
  RATE_LIMIT_BYTES_BURST: String(BYTES_BURST),
  INGEST_BODY_TIMEOUT_MS: "3000",
});

/** `ingest_requests_unread_total{bucket="bytes"}` of the stack's ingest. */
async function unreadBytes(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${await adminPort(stack.ingest!)}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith('ingest_requests_unread_total{bucket="bytes"}'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** The status of a POST whose headers announce `length` bytes of gzip and whose body is never sent; "none" after `ms`. */
function headersOnly(length: number, ms: number): Promise<number | "none"> {
  return new Promise((resolve) => {
    const url = new URL(`${stack.base}/v1/batch`);
    const req = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      agent: false,
      headers: {
        "content-type": "application/json",
        "content-encoding": "gzip",
        "content-length": length,
        authorization: basic("test-key"),
      },
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve("none");
    }, ms);
    req.on("response", (res) => {
      clearTimeout(timer);
      res.resume();
      req.destroy();
      resolve(res.statusCode!);
    });
    req.on("error", () => {});
    req.flushHeaders();
  });
}

test("parsed-then-429 bodies spend the bytes bucket; then a key header is refused before its body is read", async () => {
  await stack.start();
  try {
    // The items bucket left at 5 tokens (refilled at 10 a second): every batch of 2,500 below is refused 429 after parsing.
    const refused = { batch: Array.from({ length: 2_495 }, () => ({})) };
    assert.is((await stack.post("/v1/batch", refused)).status, 400, "2,495 refused items take 2,495 tokens");
    const item = (i: number) => ({ type: "track", event: "e", anonymousId: "a", messageId: `m${i}`, properties: { p: "x".repeat(110) } });
    const text = JSON.stringify({ batch: Array.from({ length: 2_500 }, (_, i) => item(i)) });
    const gzip = gzipSync(text);
    const headers = { authorization: basic("test-key"), "content-type": "application/json", "content-encoding": "gzip" };
    const started = performance.now();
    const statuses: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const response = await fetch(`${stack.base}/v1/batch`, { method: "POST", headers, body: gzip });
      const key = `${response.status} ${(((await response.json()) as { message: string }).message ?? "").includes("body bytes") ? "bytes" : "items"}`;
      statuses[key] = (statuses[key] ?? 0) + 1;
    }
    const seconds = (performance.now() - started) / 1000;
    const unread = await unreadBytes();
    const parsed = 30 - unread;
    console.log(
      `  30 batches of 2,500 (${gzip.length} bytes gzip, ${text.length} decoded) in ${seconds.toFixed(2)} s: ${JSON.stringify(statuses)}; ${unread} refused unread, ${parsed} parsed`,
    );
    assert.is(statuses["200"], undefined);
    assert.ok(unread >= 15, `${unread} of 30 refused before their body was read`);
    // What was parsed is bounded by the bucket: its burst, its rate over the run, and one body past zero.
    assert.ok(parsed * text.length <= BYTES_BURST + BYTES_PER_SECOND * seconds + text.length, `${parsed} bodies parsed in ${seconds} s`);
    // Refused unread: the answer comes though the body never does (the old code waited for it until the body timeout).
    assert.is(await headersOnly(gzip.length, 1_500), 429);
    // Bytes come back at the rate (the debt is at most one body: 0.5 s): then a small batch is served and stored.
    await new Promise((r) => setTimeout(r, 1_500));
    const small = { batch: [{ type: "track", event: "After", userId: "u-bytes", messageId: randomUUID() }] };
    assert.is((await stack.post("/v1/batch", small)).status, 200);
    await stack.rowsLanded(small.batch.map((m) => m.messageId));
  } finally {
    await stack.stop();
  }
});

test.run();
