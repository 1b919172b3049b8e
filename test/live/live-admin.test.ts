/**
 * The admin port is safe by default, and the live view does not cost the public API (issue 46
 * rows 5 and 6), on the real ingest process and the real Kafka:
 * - with INGEST_HOST=0.0.0.0 and no INGEST_METRICS_HOST, the admin port listens on 127.0.0.1
 *   only (a non-loopback address of this machine reaches the public port, not the admin port);
 * - with the admin port beyond loopback, the development token, the manifests' old placeholder
 *   and a short token stop the start with a message naming ADMIN_TOKEN;
 * - during a flood of refused records (the full parse of the live view) read by four viewers,
 *   the public port's /healthz latency and the ingest's event-loop delay stay near their values
 *   without viewers (the figures of both runs are printed);
 * - LIVE_MAX_RECENT, LIVE_MAX_VIEWERS, INGEST_METRICS_MAX_CONNECTIONS and the admin headers timeout.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminPort, freePort, LiveStack, stopService, waitFor } from "../support/harness";
import { findRoot } from "../support/paths";

const admin = suite("admin port (live)");
const TOKEN = `admin-test-${randomUUID()}`;
const WORKSPACE = `ws-admin-${randomUUID().slice(0, 8)}`;
const DEV_TOKEN = "dev-admin-token-change-me";
const stack = new LiveStack({
  ADMIN_TOKEN: TOKEN,
  LIVE_MAX_VIEWERS: "4",
  KAFKA_REJECTED_TOPIC: `test-rejected-admin-${randomUUID().slice(0, 8)}`,
});
admin.before(() => stack.start());
admin.after(async () => {
  await stack.stop();
  const kafkaAdmin = stack.kafka.admin();
  await kafkaAdmin.connect();
  await kafkaAdmin.deleteTopics({ topics: [stack.env.KAFKA_REJECTED_TOPIC!] }).catch(() => undefined);
  await kafkaAdmin.disconnect();
});

/** A non-loopback IPv4 address of this machine, if it has one. */
const outside = Object.values(networkInterfaces())
  .flat()
  .find((a) => a !== undefined && a.family === "IPv4" && !a.internal)?.address;

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

const loggedHost = (output: string): string | undefined =>
  output
    .split("\n")
    .filter((l) => l.includes('"ingest listening"'))
    .map((l) => (JSON.parse(l) as { metricsHost?: string }).metricsHost)[0];

admin("INGEST_HOST=0.0.0.0 alone: the public port is reachable from outside, the admin port only on 127.0.0.1", async () => {
  const { service, port: publicPort } = await stack.startIngest({ INGEST_HOST: "0.0.0.0", ADMIN_TOKEN: DEV_TOKEN });
  try {
    const port = await adminPort(service);
    console.log(`  logged admin address: ${loggedHost(service.output())}:${port}; outside address: ${outside ?? "none"}`);
    assert.ok(await accepts("127.0.0.1", port), "the admin port answers on loopback");
    if (outside !== undefined) {
      assert.ok(await accepts(outside, publicPort), `the public port answers on ${outside}`);
      assert.not.ok(await accepts(outside, port), `the admin port must not answer on ${outside}`);
    }
    assert.is(loggedHost(service.output()), "127.0.0.1");
  } finally {
    await stopService(service);
  }
});

admin("the admin port beyond loopback: a published or short token stops the start, naming ADMIN_TOKEN", async () => {
  for (const [token, why] of [
    [DEV_TOKEN, /ADMIN_TOKEN is a published development token.*INGEST_METRICS_HOST=0\.0\.0\.0/],
    ["replace-this-development-admin-token", /ADMIN_TOKEN is a published development token/],
    ["short-but-16-char", /ADMIN_TOKEN has 17 characters, fewer than 24/],
  ] as const) {
    const ingest = stack.spawn("ingest/main.js", {
      INGEST_METRICS_HOST: "0.0.0.0",
      ADMIN_TOKEN: token,
      INGEST_PORT: String(await freePort()),
    });
    const timeout = setTimeout(() => ingest.child.kill("SIGKILL"), 15_000);
    const { code } = await ingest.exited;
    clearTimeout(timeout);
    console.log(`  ${token}: exit ${code}`);
    assert.is(code, 1, `${token}: the ingest must refuse to start:\n${ingest.output().slice(-2000)}`);
    assert.match(ingest.output(), why);
  }
});

/** Latencies of `count` GET /healthz on the public port, one every `gapMs`, ms, sorted. */
async function healthz(base: string, count: number, gapMs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const response = await fetch(`${base}/healthz`);
    await response.arrayBuffer();
    times.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  return times.sort((a, b) => a - b);
}
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** The ingest's event-loop delay since the last scrape (prom-client resets it at each), ms: max and p99. */
async function loopDelay(adminBase: string): Promise<{ max: number; p99: number }> {
  const text = await (await fetch(`${adminBase}/metrics`)).text();
  const read = (name: string) => 1_000 * Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1] ?? Number.NaN);
  return { max: read("ingest_nodejs_eventloop_lag_max_seconds"), p99: read("ingest_nodejs_eventloop_lag_p99_seconds") };
}

/**
 * Produces `count` refused records of `workspaceId` (each about 3 KB, its raw item a JSON text the
 * live view parses) to `topic` from a child process, so this process's loop only measures.
 */
function flood(brokers: string, topic: string, workspaceId: string, count: number): Promise<void> {
  const script = `
    const { Kafka, logLevel } = require("kafkajs");
    const [brokers, topic, workspaceId, count] = process.argv.slice(1);
    const item = { type: "track", userId: "u", event: 1, properties: Object.fromEntries(Array.from({ length: 60 }, (_, i) => ["key" + i, "value-" + i + "-" + "x".repeat(20)])) };
    (async () => {
      const producer = new Kafka({ clientId: "admin-flood", brokers: brokers.split(","), logLevel: logLevel.NOTHING }).producer();
      await producer.connect();
      for (let sent = 0; sent < Number(count); sent += 500) {
        const messages = Array.from({ length: 500 }, (_, i) => {
          const n = sent + i;
          const raw = JSON.stringify({ ...item, messageId: "flood-" + n });
          return { key: "k" + n, value: JSON.stringify({ workspaceId, receivedAt: new Date().toISOString(), rejectionId: "r" + n, messageId: "flood-" + n, type: "track", reasons: ["event: string"], raw }) };
        });
        await producer.send({ topic, acks: 1, messages });
      }
      await producer.disconnect();
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const child = spawn(process.execPath, ["-e", script, brokers, topic, workspaceId, String(count)], {
    cwd: findRoot(__dirname),
    stdio: "inherit",
  });
  return once(child, "exit").then(([code]) => {
    if (code !== 0) throw new Error(`flood exited ${String(code)}`);
  });
}

/** Opens a live stream and discards what it sends (counting bytes); resolves once the headers came. */
async function viewer(adminBase: string, workspaceId: string): Promise<{ bytes: () => number; close: () => void }> {
  const req = request(`${adminBase}/live/events?workspaceId=${workspaceId}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  req.end();
  const [response] = (await once(req, "response")) as [import("node:http").IncomingMessage];
  assert.is(response.statusCode, 200);
  let bytes = 0;
  response.on("data", (chunk: Buffer) => (bytes += chunk.length));
  response.on("error", () => undefined);
  return { bytes: () => bytes, close: () => req.destroy() };
}

admin("a flood read by four viewers does not hold the public API's event loop (figures printed); a fifth viewer is refused", async () => {
  const adminBase = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
  const auth = { Authorization: `Bearer ${TOKEN}` };
  const brokers = stack.env.KAFKA_BROKERS ?? "127.0.0.1:9092";
  const topic = stack.env.KAFKA_REJECTED_TOPIC!;
  const RECORDS = 30_000;

  // Without a viewer: the flood costs the ingest nothing (the tail reads only while watched).
  await loopDelay(adminBase);
  const [quiet] = await Promise.all([healthz(stack.base, 300, 10), flood(brokers, topic, WORKSPACE, RECORDS)]);
  const quietLoop = await loopDelay(adminBase);

  // Four viewers of the flooded workspace (LIVE_MAX_VIEWERS); a fifth is refused.
  const viewers = await Promise.all([0, 1, 2, 3].map(() => viewer(adminBase, WORKSPACE)));
  const fifth = await fetch(`${adminBase}/live/events?workspaceId=${WORKSPACE}`, { headers: auth });
  assert.is(fifth.status, 503);
  assert.ok(Number(fifth.headers.get("retry-after")) > 0);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await loopDelay(adminBase);
  const [watched] = await Promise.all([healthz(stack.base, 300, 10), flood(brokers, topic, WORKSPACE, RECORDS)]);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const watchedLoop = await loopDelay(adminBase);
  const received = viewers.map((v) => v.bytes());
  for (const v of viewers) v.close();

  const line = (what: string, t: number[], loop: { max: number; p99: number }) =>
    `  ${what}: /healthz p50 ${pct(t, 0.5).toFixed(1)} ms, p99 ${pct(t, 0.99).toFixed(1)} ms, max ${t[t.length - 1]!.toFixed(1)} ms; ` +
    `ingest event-loop delay p99 ${loop.p99.toFixed(1)} ms, max ${loop.max.toFixed(1)} ms`;
  console.log(`  ${RECORDS} refused records of ~3 KB flooded to the rejected topic, twice:`);
  console.log(line("no viewer   ", quiet, quietLoop));
  console.log(line("four viewers", watched, watchedLoop));
  console.log(`  bytes each viewer received: ${received.join(", ")}`);
  assert.ok(Math.min(...received) > 1_000_000, "the viewers were sent the flood");
  // The aim: watching does not stall the public port (before the worker thread: p99 2,268 ms).
  // Bounds loose enough for a shared 2-core machine: 3x the quiet figure, or 100 ms over it. The
  // floor was 50 ms while the quiet p99 was 58-90 ms; since issue 47 it is 16-29 ms, and four
  // viewers' writes on the main thread still add 60-70 ms of p99 on this machine (85 ms in CI).
  const bound = Math.max(3 * pct(quiet, 0.99), pct(quiet, 0.99) + 100);
  assert.ok(pct(watched, 0.99) <= bound, `/healthz p99 with viewers ${pct(watched, 0.99).toFixed(1)} ms, bound ${bound.toFixed(1)} ms`);
  // The event loop's bound has the same floor: with a quiet p99 of 17.7 ms, a fresh-clone run of
  // c923201 saw 75 ms with the viewers (bound 67.7 ms); the stall it guards against was seconds.
  const loopBound = Math.max(3 * quietLoop.p99, quietLoop.p99 + 100);
  assert.ok(
    watchedLoop.p99 <= loopBound,
    `event-loop delay p99 with viewers ${watchedLoop.p99.toFixed(1)} ms, bound ${loopBound.toFixed(1)} ms`,
  );
});

admin("caps: LIVE_MAX_RECENT calls at once, INGEST_METRICS_MAX_CONNECTIONS, the admin headers timeout", async () => {
  const { service } = await stack.startIngest({ LIVE_MAX_RECENT: "2", LIVE_MAX_VIEWERS: "2", INGEST_METRICS_MAX_CONNECTIONS: "12" });
  try {
    const port = await adminPort(service);
    const adminBase = `http://127.0.0.1:${port}`;
    const auth = { Authorization: `Bearer ${TOKEN}` };
    // Three calls while the tail starts (seconds): two are served, the third refused at once.
    const calls = await Promise.all([0, 1, 2].map(() => fetch(`${adminBase}/live/recent?workspaceId=${WORKSPACE}`, { headers: auth })));
    const statuses = calls.map((r) => r.status).sort();
    console.log(`  three /live/recent at once (LIVE_MAX_RECENT=2): ${statuses.join(", ")}`);
    assert.equal(statuses, [200, 200, 503]);
    assert.is(calls.find((r) => r.status === 503)!.headers.get("retry-after"), "1");
    // INGEST_METRICS_MAX_CONNECTIONS (12): twelve idle connections, then the next is closed unanswered.
    const held: Socket[] = [];
    for (let i = 0; i < 12; i++) {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => undefined);
      await once(socket, "connect");
      held.push(socket);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const over = await new Promise<string>((resolve) => {
      const req = request(`${adminBase}/metrics`, { agent: false }, (res) => resolve(`answered ${res.statusCode}`));
      req.on("error", (error: NodeJS.ErrnoException) => resolve(`refused: ${error.code ?? error.message}`));
      req.end();
    });
    console.log(`  a 13th admin connection (INGEST_METRICS_MAX_CONNECTIONS=12): ${over}`);
    assert.match(over, /^refused/);
    for (const socket of held) socket.destroy();
    await waitFor("a free admin connection", async () => ((await fetch(`${adminBase}/metrics`)).status === 200 ? true : undefined));

    // The admin headers timeout: a client that never finishes its headers is cut within about 10 s.
    const slow = connect(port, "127.0.0.1");
    slow.on("error", () => undefined);
    slow.resume(); // read what comes (a 408), so the end and the close are seen
    await once(slow, "connect");
    slow.write("GET /metrics HTTP/1.1\r\nHost: x\r\n");
    const t0 = Date.now();
    const cut = await Promise.race([
      once(slow, "close").then(() => Date.now() - t0),
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 14_000)),
    ]);
    slow.destroy();
    console.log(`  unfinished headers: connection closed after ${cut === undefined ? "more than 14,000" : cut} ms`);
    assert.ok(cut !== undefined, "the admin port cut a client that never finished its headers");
  } finally {
    await stopService(service);
  }
});

admin.run();
