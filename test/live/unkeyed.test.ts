/**
 * Live: what a sender holding no valid key can make the ingest do (ingest/admission/networks.ts,
 * ingest/admission/budget.ts, the settings' Host). The attackers run in a process of their own, from
 * source addresses of other /24 networks of 127/8 (Linux answers the whole block on loopback);
 * the traffic measured here comes from 127.0.0.1. Prints each phase's figures (the closing
 * notes quote them); asserts what the answers were, not how fast they came.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { request, Agent } from "node:http";
import { gzipSync } from "node:zlib";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, LiveStack, type Service } from "../support/harness";
import { cpuSeconds } from "../bench/procstat";
import { keyedTraffic } from "../support/keyed-traffic";

// One failure refilled every 10 s (the default is 1 a second), so that a refusal's second of wait refills none.
const stack = new LiveStack({ INGEST_BODY_TIMEOUT_MS: "10000", UNKEYED_FAILURES_PER_SECOND: "0.1" });
const unkeyed = suite("requests without a valid key (live)");

unkeyed.before(() => stack.start());
unkeyed.after(() => stack.stop());

/**
 * The attacker's process. argv[1] is its plan as JSON:
 * - `post`: `connections` keep-alive connections, the i-th from `sources[i % sources.length]`,
 *   post `body` (base64) with `headers` to `url` back to back for `ms`; prints the statuses.
 * - `stall`: `bodies` requests, the i-th from `sources[i % ...]` with `forwarded[i]` as its
 *   X-Forwarded-For when given, announce `length` bytes, send `sent` of them and then nothing
 *   for `ms`; prints the statuses of the answers that came.
 */
const ATTACKER = `
const http = require("node:http");
const net = require("node:net");
const plan = JSON.parse(process.argv[1]);
const statuses = {};
const count = (status) => (statuses[status] = (statuses[status] || 0) + 1);
const url = new URL(plan.url);
if (plan.mode === "post") {
  const body = Buffer.from(plan.body, "base64");
  const until = Date.now() + plan.ms;
  const agents = plan.sources.map((localAddress) => new http.Agent({ keepAlive: true, maxSockets: 64, localAddress }));
  const one = (agent) => new Promise((resolve) => {
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent,
      headers: { ...plan.headers, "content-length": body.length } }, (res) => { res.resume(); res.on("end", () => resolve(res.statusCode)); });
    req.on("error", () => resolve("error"));
    req.end(body);
  });
  const loop = async (i) => { while (Date.now() < until) count(await one(agents[i % agents.length])); };
  Promise.all(Array.from({ length: plan.connections }, (_, i) => loop(i))).then(() => { console.log(JSON.stringify(statuses)); process.exit(0); });
} else {
  const chunk = Buffer.alloc(plan.sent, 0x20);
  let open = 0;
  for (let i = 0; i < plan.bodies; i++) {
    const socket = net.connect({ host: url.hostname, port: Number(url.port), localAddress: plan.sources[i % plan.sources.length] });
    open++;
    const forwarded = plan.forwarded ? "X-Forwarded-For: " + plan.forwarded[i] + "\\r\\n" : "";
    socket.on("connect", () => {
      socket.write("POST " + url.pathname + " HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n" + forwarded +
        "Content-Length: " + plan.length + "\\r\\n\\r\\n");
      socket.write(chunk);
    });
    let answer = "";
    socket.on("data", (d) => { answer += d.toString(); });
    socket.on("error", () => {});
    socket.on("close", () => { const m = /^HTTP\\/1.1 (\\d+)/.exec(answer); count(m ? m[1] : "closed"); });
  }
  setTimeout(() => { console.log(JSON.stringify(statuses)); process.exit(0); }, plan.ms);
}
`;

interface AttackPlan {
  mode: "post" | "stall";
  url: string;
  sources: string[];
  ms: number;
  connections?: number;
  body?: string;
  headers?: Record<string, string>;
  bodies?: number;
  length?: number;
  sent?: number;
  forwarded?: string[];
}

/** Starts the attacker's process; resolves with its statuses when it is done. */
function attack(plan: AttackPlan): Promise<Record<string, number>> {
  const child = spawn(process.execPath, ["-e", ATTACKER, JSON.stringify(plan)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  return once(child, "exit").then(() => JSON.parse(out || "{}") as Record<string, number>);
}

/** The first address of each of `n` /24 networks of 127/8 other than 127.0.0.0/24. */
function networks(n: number, from = 1): string[] {
  return Array.from({ length: n }, (_, i) => `127.${from + i}.0.1`);
}

/** Posts `body` from `localAddress` (a network of its own) with `headers`; the status. */
function postFrom(base: string, path: string, localAddress: string, body: Buffer | string, headers: Record<string, string>, agent?: Agent) {
  const url = new URL(path, base);
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  return new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress,
        ...(agent ? { agent } : {}),
        headers: { "content-type": "application/json", "content-length": String(bytes.length), ...headers },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      },
    );
    req.on("error", reject);
    req.end(bytes);
  });
}

/** GETs `path` from `localAddress` with `headers`; the status and body. */
function getFrom(base: string, path: string, localAddress: string, headers: Record<string, string> = {}) {
  const url = new URL(path, base);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, localAddress, headers }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Runs `load` beside keyed traffic; the ingest's CPU seconds per second over it, and the keyed figures. */
async function measured(ingest: Service, load: () => Promise<unknown>) {
  const pid = ingest.child.pid!;
  let stopTraffic!: () => void;
  const traffic = keyedTraffic(stack, { messages: 20, loops: 2, pauseMs: 20 }, new Promise<void>((resolve) => (stopTraffic = resolve)));
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const result = await load();
  const cores = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
  stopTraffic();
  return { result, cores, keyed: await traffic };
}

/** A 500 KB JSON body of `[1,1,...]` under a writeKey placed as `where` says, gzipped (about 600 bytes). */
function bomb(where: "first" | "last" | "escaped" | "none"): Buffer {
  const ones = Array(249_000).fill(1).join(",");
  const text = {
    first: `{"writeKey":"guess","batch":[${ones}]}`,
    last: `{"batch":[${ones}],"writeKey":"guess"}`,
    escaped: `{"write\\u004bey":"guess","batch":[${ones}]}`,
    none: `{"batch":[${ones}]}`,
  }[where];
  return gzipSync(text, { level: 9 });
}

unkeyed("no key: gzip bombs from one network, wherever the key sits, are refused 429 unread after a small burst", async () => {
  const quiet = await measured(stack.ingest!, () => new Promise((resolve) => setTimeout(resolve, 4_000)));
  console.log(`\n  quiet: ingest ${quiet.cores.toFixed(2)} cores, keyed p99 ${quiet.keyed.p99.toFixed(0)} ms`);
  for (const [i, where] of (["first", "last", "escaped", "none"] as const).entries()) {
    const body = bomb(where);
    const flood = await measured(stack.ingest!, () =>
      attack({
        mode: "post",
        url: `${stack.base}/v1/batch`,
        sources: [`127.${10 + i}.0.1`],
        connections: 8,
        ms: 5_000,
        body: body.toString("base64"),
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
      }),
    );
    const statuses = flood.result as Record<string, number>;
    const total = Object.values(statuses).reduce((a, b) => a + b, 0);
    console.log(
      `\n  key ${where} (${body.length} B gzip): ${JSON.stringify(statuses)}; ingest ${flood.cores.toFixed(2)} cores, keyed p99 ${flood.keyed.p99.toFixed(0)} ms (${flood.keyed.n} batches)`,
    );
    // The network's burst of bytes (8 MiB: 16 such bodies inflated) and failures is spent at once;
    // every later request is answered 429 unread, a second after it came.
    assert.ok((statuses["401"] ?? 0) <= 20, `${where}: ${JSON.stringify(statuses)}`);
    assert.is((statuses["401"] ?? 0) + (statuses["429"] ?? 0), total, `${where}: only 401 and 429`);
    assert.ok((statuses["429"] ?? 0) > 0, `${where}: throttled`);
    assert.equal(Object.keys(flood.keyed.statuses), ["200"], `${where}: keyed traffic served`);
  }
});

unkeyed(
  "key guesses: past a network's burst of failures every key is answered 429, the right one too; other networks untouched",
  async () => {
    const guesser = "127.30.0.1";
    const statuses: number[] = [];
    for (let i = 0; i < 64; i++) {
      statuses.push(await postFrom(stack.base, "/v1/track", guesser, "{}", { authorization: basic(`guess-${i}`) }));
    }
    assert.equal(statuses.slice(0, 60), Array(60).fill(401), "the burst: 401");
    // One failure refills every 10 s here, and each 429 waits a second: none gets through.
    assert.equal(statuses.slice(60), [429, 429, 429, 429], "then 429");
    const valid = { event: "E", userId: "u", messageId: randomUUID() };
    assert.is(
      await postFrom(stack.base, "/v1/track", guesser, JSON.stringify(valid), { authorization: basic("test-key") }),
      429,
      "a right guess is not told apart",
    );
    const settings = await getFrom(stack.base, "/v1/projects/test-key/settings", guesser);
    assert.is(settings.status, 429, "nor by the settings");
    // Settings lookups of unknown keys count as failures too.
    const lookups: number[] = [];
    for (let i = 0; i < 61; i++) lookups.push((await getFrom(stack.base, `/v1/projects/guess-${i}/settings`, "127.31.0.1")).status);
    assert.equal(lookups.slice(0, 60), Array(60).fill(404));
    assert.equal(lookups.slice(60), [429]);
    assert.is(
      await postFrom(stack.base, "/v1/track", "127.32.0.1", JSON.stringify(valid), { authorization: basic("test-key") }),
      200,
      "another network",
    );
  },
);

unkeyed("stalled bodies from 50 networks never hold room against another workspace's body-key batches", async () => {
  const figures = await stalledAttack(stack.base, { sources: networks(50, 100) }, "127.200.0.1");
  console.log(`\n  50 networks: ${figures}`);
});

unkeyed("stalled bodies under forged forwarded addresses (TRUST_PROXY=1) never hold room against body-key batches", async () => {
  const { service, port } = await stack.startIngest({ TRUST_PROXY: "1" });
  try {
    const forwarded = Array.from({ length: 100 }, (_, i) => `198.18.${i}.${i + 1}`);
    const figures = await stalledAttack(`http://127.0.0.1:${port}`, { sources: ["127.40.0.1"], forwarded }, "127.201.0.1");
    console.log(`\n  forged X-Forwarded-For: ${figures}`);
  } finally {
    service.child.kill("SIGTERM");
    await service.exited;
  }
});

/**
 * 100 bodies announcing 512,000 bytes, 490,000 of them sent, then nothing (from `attacker`'s
 * sources), while `victim` posts other-key batches with the key in the gzipped body, as
 * analytics-kotlin does, one after another; asserts every one is 200; returns the figures.
 */
async function stalledAttack(base: string, attacker: { sources: string[]; forwarded?: string[] }, victim: string): Promise<string> {
  const stalled = attack({ mode: "stall", url: `${base}/v1/b`, ...attacker, bodies: 100, length: 512_000, sent: 490_000, ms: 8_000 });
  await new Promise((resolve) => setTimeout(resolve, 1_500)); // every stalled body has sent its part
  const agent = new Agent({ keepAlive: true, localAddress: victim });
  const statuses: Record<string, number> = {};
  const until = Date.now() + 5_000;
  let n = 0;
  try {
    while (Date.now() < until) {
      const batch = Array.from({ length: 400 }, (_, i) => ({
        type: "track",
        event: "Body Key",
        userId: `u-${i}`,
        messageId: randomUUID(),
        properties: { padding: "x".repeat(1_000) },
      }));
      const body = gzipSync(JSON.stringify({ writeKey: "other-key", batch, sentAt: new Date().toISOString() }));
      const status = await postFrom(base, "/v1/b", victim, body, { "content-type": "text/plain", "content-encoding": "gzip" }, agent);
      statuses[status] = (statuses[status] ?? 0) + 1;
      n++;
    }
  } finally {
    agent.destroy();
  }
  const attackerStatuses = await stalled;
  assert.equal(statuses, { 200: n }, `every body-key batch accepted: ${JSON.stringify(statuses)}`);
  return `body-key batches (400 x 1 KB) ${JSON.stringify(statuses)}; the stalled bodies got ${JSON.stringify(attackerStatuses)}`;
}

unkeyed("the settings document names PUBLIC_URL or an allowed host, never a Host a client wrote", async () => {
  const own = await fetch(`${stack.base}/v1/projects/test-key/settings`);
  assert.is(own.status, 200);
  const doc = (await own.json()) as { integrations: Record<string, { apiHost: string }> };
  assert.is(doc.integrations["Segment.io"]!.apiHost, `${new URL(stack.base).host}/v1`, "an IP literal is allowed by default");
  const forged = await getFrom(stack.base, "/v1/projects/test-key/settings", "127.0.0.1", { host: "evil.example" });
  assert.is(forged.status, 421);
  assert.not.match(forged.body, "evil.example");
});

unkeyed.run();
