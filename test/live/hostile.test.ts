/**
 * Hostile input against the live ingest: nothing crashes it, pollutes it or gets partly
 * written; each refusal is a clear 4xx. Real ingest, Kafka, sink and ClickHouse.
 */
import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, LiveStack, waitFor } from "../support/harness";

const stack = new LiveStack({
  INGEST_HEADERS_TIMEOUT_MS: "2000",
  INGEST_REQUEST_TIMEOUT_MS: "4000",
  INGEST_KEEPALIVE_TIMEOUT_MS: "1000",
  INGEST_BODY_TIMEOUT_MS: "2000",
  PRODUCE_TIMEOUT_MS: "3000", // below the request timeout, or the ingest refuses to start
});
const hostile = suite("hostile input (live)");

hostile.before(() => stack.start());
hostile.after(() => stack.stop());

/** VmRSS and VmHWM (peak) of a process, MB. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)![1]) / 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

hostile("invalid JSON, wrong types, missing ids: 400 naming the problem, nothing stored", async () => {
  const id = randomUUID();
  const bad = await stack.post("/v1/track", '{"event": "E", "userId": "u", "messageId": ');
  assert.is(bad.status, 400);
  assert.is(bad.json!.error, "invalid_json");
  const types = await stack.post("/v1/track", { event: 123, userId: ["u"], messageId: id, properties: "nope" });
  assert.is(types.status, 400);
  assert.equal((types.json!.issues as { path: string }[]).map((i) => i.path).sort(), ["event", "properties", "userId"]);
  const noIds = await stack.post("/v1/batch", { batch: [{ type: "track", event: "E" }] });
  assert.is(noIds.status, 400);
  assert.equal(
    (noIds.json!.issues as { path: string }[]).map((i) => i.path),
    ["batch[0].messageId"],
  );
  const scalar = await stack.post("/v1/batch", "42");
  assert.is(scalar.status, 400);
  await stack.marker();
  assert.equal(await stack.finalRows([id]), []);
});

hostile("deep nesting: a clear 400 at the depth limit, also past what JSON.parse survives", async () => {
  const deep = (n: number) =>
    `{"event":"E","userId":"u","messageId":"${randomUUID()}","properties":{"p":${"[".repeat(n)}${"]".repeat(n)}}}`;
  assert.is((await stack.post("/v1/track", deep(60))).status, 200, "62 levels in all is within the limit of 64");
  for (const n of [100, 200_000]) {
    const answer = await stack.post("/v1/track", deep(n));
    assert.is(answer.status, 400, `${n} levels`);
    assert.is(answer.json!.error, "too_deep");
    assert.match(String(answer.json!.message), "64 levels");
  }
});

hostile("huge arrays: over the message count (400) or the body size (413)", async () => {
  const many = await stack.post("/v1/batch", {
    batch: Array.from({ length: 3000 }, () => ({ type: "track", event: "E", userId: "u", messageId: "m" })),
  });
  assert.is(many.status, 400);
  assert.is(many.json!.error, "too_many_messages");
  const big = await stack.post("/v1/track", {
    event: "E",
    userId: "u",
    messageId: randomUUID(),
    properties: { list: Array.from({ length: 200_000 }, (_, i) => i) },
  });
  assert.is(big.status, 413);
});

hostile("a 500 KB body of empty objects (about 10 MB once parsed) -> 413 before it is parsed; a small one is read", async () => {
  const empties = (n: number) => `{"batch":[${Array(n).fill("{}").join(",")}]}`;
  const big = await stack.post("/v1/batch", empties(166_000));
  assert.is(big.status, 413);
  assert.is(big.json!.error, "payload_too_large");
  assert.match(String(big.json!.message), "once parsed");
  const small = await stack.post("/v1/batch", empties(3_000));
  assert.is(small.status, 400, "parsed, then refused for its count");
  assert.is(small.json!.error, "too_many_messages");
});

hostile("__proto__ and constructor keys are stored as plain data", async () => {
  const messageId = randomUUID();
  const body = `{"event":"E","userId":"u","messageId":"${messageId}","properties":{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}},"__proto__":{"isAdmin":true}}`;
  const answer = await stack.post("/v1/track", body);
  assert.is(answer.status, 200, answer.text);
  const [row] = await stack.rowsLanded<{ properties: string; extra: string }>([messageId]);
  assert.equal(Object.keys(JSON.parse(row!.properties)).sort(), ["__proto__", "constructor"]);
  assert.match(row!.properties, '"__proto__":{"polluted":true}');
  assert.match(row!.extra, '"__proto__":{"isAdmin":true}');
  // The process still validates as before: a body missing fields is refused, not passed by inherited keys.
  const after = await stack.post("/v1/track", { userId: "u", messageId: randomUUID() });
  assert.is(after.status, 400);
});

hostile("invalid UTF-8 is read as U+FFFD (WHATWG decoding) and stored, never crashing", async () => {
  const messageId = randomUUID();
  const raw = Buffer.concat([
    Buffer.from(`{"event":"Bad `),
    Buffer.from([0xff, 0xfe, 0xc3]),
    Buffer.from(`","userId":"u","messageId":"${messageId}"}`),
  ]);
  const answer = await stack.post("/v1/track", new Uint8Array(raw));
  assert.is(answer.status, 200, answer.text);
  const [row] = await stack.rowsLanded<{ event: string }>([messageId]);
  assert.ok(row!.event.startsWith("Bad \uFFFD"), row!.event);
});

hostile("an OS name cut at 100 characters through an emoji lands as a row, not as a lone surrogate ClickHouse refuses", async () => {
  const messageId = randomUUID();
  // No userAgent: the stored os column is context.os.name, cut at 100 characters (the pair sits on 100 and 101).
  const name = "a".repeat(99) + "\u{1F40E}";
  const answer = await stack.post("/v1/track", { event: "Cut", userId: "u", messageId, context: { os: { name } } });
  assert.is(answer.status, 200, answer.text);
  const [row] = await stack.rowsLanded<{ os: string }>([messageId]);
  assert.is(row!.os, "a".repeat(99));
});

hostile("an identify with a wrong sentAt (1970) does not pin the user's traits: a later identify is the latest", async () => {
  const userId = `pin-${randomUUID()}`;
  const now = Date.now();
  const first = { type: "identify", messageId: randomUUID(), userId, traits: { plan: "from-bad-clock" } };
  const later = { type: "identify", messageId: randomUUID(), userId, traits: { plan: "latest" } };
  // The later identify comes two seconds after: users ranks each by least(timestamp,
  // received_at) (a future timestamp cannot win), and 18.16 keeps whole seconds.
  const bad = { batch: [{ ...first, timestamp: new Date(now).toISOString(), sentAt: "1970-01-01T00:00:00.000Z" }] };
  assert.is((await stack.post("/v1/batch", bad)).status, 200);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  assert.is((await stack.post("/v1/batch", { batch: [{ ...later, timestamp: new Date().toISOString() }] })).status, 200);
  const rows = await stack.rowsLanded<{ message_id: string; received_at: string }>([first.messageId, later.messageId]);
  const firstReceived = rows.find((r) => r.message_id === first.messageId)!.received_at.slice(0, 19);
  // The users view is written after the events rows become visible (18.16 pushes a block to its
  // views after the table): wait until the later identify is in it (its last_seen, two seconds
  // after the first's receipt), then ask which traits are the latest.
  const user = await waitFor("the later identify in users", async () => {
    const [row] = await stack.select<{ traits: string; last_seen: string }>(
      `SELECT argMaxMerge(traits) AS traits, toString(maxMerge(last_seen)) AS last_seen FROM ${stack.database}.users WHERE workspace_id = 'ws-test' AND user_id = '${userId}'`,
    );
    return row !== undefined && row.last_seen > firstReceived ? row : undefined;
  });
  assert.equal(JSON.parse(user!.traits), { plan: "latest" });
  assert.ok(user!.last_seen.startsWith(new Date(now).toISOString().slice(0, 4)), `last_seen ${user!.last_seen}`);
});

hostile("a gzip bomb (a few hundred KB expanding to 200 MB) -> 413, memory growth under 50 MB", async () => {
  const pid = stack.ingest!.child.pid!;
  const padding = Buffer.alloc(200 * 1024 * 1024, 0x20); // spaces are valid JSON whitespace
  const bomb = gzipSync(Buffer.concat([Buffer.from('{"batch":['), padding, Buffer.from("]}")]), { level: 9 });
  const before = memory(pid);
  const answer = await stack.post("/v1/batch", new Uint8Array(bomb), { authorization: basic("test-key"), "content-encoding": "gzip" });
  const after = memory(pid);
  const growth = after.peak - before.rss;
  console.log(
    `\n  gzip bomb: ${Math.round(bomb.length / 1024)} KB gzip of 200 MB; ingest RSS ${before.rss.toFixed(1)} MB before, peak ${after.peak.toFixed(1)} MB after (growth ${growth.toFixed(1)} MB)`,
  );
  assert.is(answer.status, 413);
  assert.is(answer.json!.error, "payload_too_large");
  assert.ok(growth < 50, `peak memory grew ${growth.toFixed(1)} MB`);
});

hostile("slow clients trickling headers or body are cut off while other clients' latency holds", async () => {
  const { hostname, port } = new URL(stack.base);
  const opened: { socket: Socket; closedAfterMs: Promise<number> }[] = [];
  const trickle = (head: string, drip: string) => {
    const socket = connect(Number(port), hostname);
    const started = Date.now();
    const closedAfterMs = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now() - started)));
    socket.on("error", () => {});
    socket.write(head);
    let i = 0;
    const timer = setInterval(() => (socket.writable ? socket.write(drip[i++ % drip.length]!) : clearInterval(timer)), 100);
    socket.on("close", () => clearInterval(timer));
    opened.push({ socket, closedAfterMs });
  };
  for (let i = 0; i < 20; i++) trickle("POST /v1/track HTTP/1.1\r\nHost: x\r\n", "X-Slow: yyyyyyyyyyyyyyyyyyyyyyyyyy\r\n");
  for (let i = 0; i < 20; i++) {
    trickle(
      `POST /v1/track HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: ${basic("test-key")}\r\nContent-Length: 100000\r\n\r\n`,
      '{"a":1}',
    );
  }
  const latencies: number[] = [];
  for (let i = 0; i < 40; i++) {
    const started = performance.now();
    const answer = await stack.post("/v1/track", { event: "Fast", userId: "u", messageId: randomUUID() });
    latencies.push(performance.now() - started);
    assert.is(answer.status, 200);
    await new Promise((r) => setTimeout(r, 50));
  }
  const closed = await Promise.all(
    opened.map((o) => Promise.race([o.closedAfterMs, new Promise<number>((r) => setTimeout(() => r(-1), 15_000))])),
  );
  opened.forEach((o) => o.socket.destroy());
  latencies.sort((a, b) => a - b);
  const p99 = latencies[Math.floor(latencies.length * 0.99)]!;
  console.log(
    `\n  slow clients: 40 cut off after ${Math.min(...closed)}-${Math.max(...closed)} ms; 40 normal requests meanwhile, p99 ${p99.toFixed(0)} ms`,
  );
  assert.ok(
    closed.every((ms) => ms > 0 && ms <= 7_000),
    `every slow socket was closed by the server: ${closed.join(",")}`,
  );
  assert.ok(p99 < 1_000, `other clients' p99 ${p99.toFixed(0)} ms`);
});

hostile(
  "100 unauthenticated sockets announcing 500 KB and sending nothing hold no budget: keyed requests meanwhile get 200; each gets 408 after the body timeout",
  async () => {
    const { hostname, port } = new URL(stack.base);
    const idle: { socket: Socket; answer: Promise<{ ms: number; text: string }> }[] = [];
    for (let i = 0; i < 100; i++) {
      const socket = connect(Number(port), hostname);
      const started = Date.now();
      let text = "";
      socket.on("data", (d: Buffer) => (text += d.toString()));
      socket.on("error", () => {});
      const answer = new Promise<{ ms: number; text: string }>((resolve) =>
        socket.on("close", () => resolve({ ms: Date.now() - started, text })),
      );
      // Half trickle a byte now and then; the server never learns a writeKey from any of them.
      socket.write(`POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n`);
      if (i % 2 === 1) {
        const timer = setInterval(() => (socket.writable ? socket.write(" ") : clearInterval(timer)), 200);
        socket.on("close", () => clearInterval(timer));
      }
      idle.push({ socket, answer });
    }
    await new Promise((r) => setTimeout(r, 200));
    // 100 x 500,000 announced bytes would be 50 MB, past the 32 MiB budget; 110 KB keyed batches.
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const batch = Array.from({ length: 50 }, () => ({
        type: "track",
        event: "Keyed",
        userId: "u",
        messageId: randomUUID(),
        properties: { pad: "k".repeat(2_000) },
      }));
      statuses.push((await stack.post("/v1/batch", { batch })).status);
    }
    const answers = await Promise.all(
      idle.map((o) =>
        Promise.race([o.answer, new Promise<{ ms: number; text: string }>((r) => setTimeout(() => r({ ms: -1, text: "" }), 10_000))]),
      ),
    );
    idle.forEach((o) => o.socket.destroy());
    const ms = answers.map((a) => a.ms);
    console.log(
      `\n  100 idle unauthenticated bodies: keyed batches ${statuses.join(",")}; idle sockets answered and closed after ${Math.min(...ms)}-${Math.max(...ms)} ms`,
    );
    assert.equal(statuses, Array(10).fill(200));
    assert.ok(
      answers.every((a) => a.ms >= 1_900 && a.ms < 3_500),
      `closed after the 2,000 ms body timeout, before the 4,000 ms request timeout: ${ms.join(",")}`,
    );
    assert.ok(
      answers.every((a) => a.text.startsWith("HTTP/1.1 408") && a.text.includes('"body_timeout"')),
      answers.find((a) => !a.text.startsWith("HTTP/1.1 408"))?.text,
    );
  },
);

hostile("request bodies held past INGEST_MAX_INFLIGHT_BYTES -> 503 overloaded + Retry-After; freed when they end", async () => {
  const budget = new LiveStack({ INGEST_MAX_INFLIGHT_BYTES: "600000" });
  await budget.start();
  try {
    // A client that announces 400,000 bytes and sends all but 1,000 of them: they are held.
    const url = new URL(`${budget.base}/v1/batch`);
    const stalled = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      headers: { authorization: basic("test-key"), "content-type": "application/json", "content-length": "400000" },
    });
    stalled.on("error", () => {});
    stalled.write(`{"batch": [${" ".repeat(399_000 - 11)}`);
    await new Promise((r) => setTimeout(r, 300));
    const body = {
      batch: Array.from({ length: 10 }, () => ({
        type: "track",
        event: "Budget",
        userId: "u",
        messageId: randomUUID(),
        properties: { pad: "p".repeat(25_000) },
      })),
    };
    const refused = await budget.post("/v1/batch", body);
    assert.is(refused.status, 503, "399,000 held + 250,000 more is over 600,000");
    assert.is(refused.json!.error, "overloaded");
    assert.is(refused.headers.get("retry-after"), "5");
    stalled.destroy();
    await new Promise((r) => setTimeout(r, 300));
    assert.is((await budget.post("/v1/batch", body)).status, 200, "the stalled request's bytes were released");
    await budget.rowsLanded(body.batch.map((m) => m.messageId));
  } finally {
    await budget.stop();
  }
});

hostile("rate limit per writeKey: 429 with Retry-After to the key over its limit, other keys untouched", async () => {
  const limited = new LiveStack({ RATE_LIMIT_PER_SECOND: "100", RATE_LIMIT_BURST: "200", MAX_BATCH_MESSAGES: "200" });
  await limited.start();
  try {
    const batch = (n: number) => ({
      batch: Array.from({ length: n }, () => ({ type: "track", event: "Rate", userId: "u-rate", messageId: randomUUID() })),
    });
    const noisy = { authorization: basic("test-key") };
    const quiet = { authorization: basic("other-key") };
    assert.is((await limited.post("/v1/batch", batch(100), noisy)).status, 200);
    assert.is((await limited.post("/v1/batch", batch(100), noisy)).status, 200);
    const refusedBody = batch(100);
    const refused = await limited.post("/v1/batch", refusedBody, noisy);
    assert.is(refused.status, 429);
    assert.is(refused.json!.error, "rate_limited");
    const wait = Number(refused.headers.get("retry-after"));
    assert.ok(wait >= 1, `Retry-After ${wait}`);
    assert.is((await limited.post("/v1/batch", batch(100), quiet)).status, 200, "another key is untouched");
    await new Promise((r) => setTimeout(r, wait * 1000));
    assert.is((await limited.post("/v1/batch", refusedBody, noisy)).status, 200, "after Retry-After the same request passes");
    const ids = refusedBody.batch.map((m) => m.messageId);
    assert.is((await limited.rowsLanded(ids)).length, 100, "stored once, after the retry");
  } finally {
    await limited.stop();
  }
});

hostile.run();
