/**
 * `npm run bench:curves`: how the whole path's cost grows with the shape of the traffic, the
 * figures users size by. One stack (ingest, sink, Kafka, ClickHouse), a warm-up, then one point
 * per shape, each CURVE_SECONDS (default 10) of closed-loop load over 16 connections followed by
 * the wait until every acknowledged message is a row:
 * - batch size: 1, 10, 100, 500 messages per request (the corpus's 400-600-byte messages);
 * - message size: 0.5, 4, 16 KB per message, 20 messages per request (16 KB x 100 would pass
 *   Segment's 500 KB request limit);
 * - write keys: 1, 1,000, 100,000 workspaces, one key per request in turn, 100 messages each.
 * Per point: events/s accepted and landed, request p99, CPU µs per event of each process (from
 * the load's start until its last row landed), the ingest's RSS at the end of the load and the
 * bytes of requests in flight. Then the sizing table derived from the 100-message point.
 * CURVE_ONLY names one curve to run. Prints tables, then one JSON line per point.
 */
import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LiveStack, freePort } from "../support/harness";
import { corpus } from "./corpus";
import { cpuSnapshot, rssMb } from "./procstat";
import type { LoadJob } from "./load";
import { landedSince, runLoad, sinkCaughtUp, stackPids } from "./child";

const SECONDS = Number(process.env.CURVE_SECONDS ?? 10);
const CONNECTIONS = 16;
const KEYS = 100_000;
const KEY_PREFIX = "curve-key-";

/** One point of a curve. */
interface Point {
  curve: "batch" | "message size" | "write keys";
  /** Messages per request. */
  batch: number;
  /** Target bytes of one message's JSON; undefined keeps the corpus's own (400-600 bytes). */
  messageBytes?: number;
  /** Write keys (workspaces) the requests take in turn. */
  keys: number;
}

/** CURVE_ONLY=batch (or "message size", "write keys") runs one curve. */
const ONLY = process.env.CURVE_ONLY;

const POINTS: Point[] = [
  ...[1, 10, 100, 500].map((batch): Point => ({ curve: "batch", batch, keys: 1 })),
  ...[512, 4096, 16384].map((messageBytes): Point => ({ curve: "message size", batch: 20, messageBytes, keys: 1 })),
  ...[1, 1_000, KEYS].map((keys): Point => ({ curve: "write keys", batch: 100, keys })),
].filter((p) => ONLY === undefined || p.curve === ONLY);

/** Seeded filler text (base-36 digits of a mulberry32 sequence): the same bytes every run. */
function filler(length: number, seed: number): string {
  let a = seed >>> 0;
  let text = "";
  while (text.length < length) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    text += ((t ^ (t >>> 14)) >>> 0).toString(36);
  }
  return text.slice(0, length);
}

/** A corpus message grown to about `bytes` of JSON by a `note` in its properties (traits for identify and group). */
function padded(message: Record<string, unknown>, bytes: number | undefined, seed: number): Record<string, unknown> {
  const missing = bytes === undefined ? 0 : bytes - JSON.stringify(message).length - 12;
  if (missing <= 0) return message;
  const field = "properties" in message ? "properties" : "traits" in message ? "traits" : "context";
  const holder = (message[field] ?? {}) as Record<string, unknown>;
  return { ...message, [field]: { ...holder, note: filler(missing, seed) } };
}

/** Request bodies of a point: 20 different ones, messages in turn from the corpus. */
function bodies(point: Point, messages: Record<string, unknown>[]): string[] {
  return Array.from({ length: 20 }, (_, b) => {
    const batch = Array.from({ length: point.batch }, (_, i) => {
      const at = (b * point.batch + i) % messages.length;
      return padded(messages[at]!, point.messageBytes, at + 1);
    });
    return JSON.stringify({ batch, sentAt: new Date().toISOString() });
  });
}

type Figures = Record<string, number>;

async function main(): Promise<void> {
  const messages = corpus(1_000);
  const keysDir = mkdtempSync(join(tmpdir(), "curves-keys-"));
  const keysFile = join(keysDir, "keys");
  writeFileSync(keysFile, Array.from({ length: KEYS }, (_, i) => `${KEY_PREFIX}${i}=ws-curve-${i}`).join("\n") + "\n");
  const stack = new LiveStack({
    WRITE_KEYS_FILE: keysFile,
    SINK_SESSION_TIMEOUT_MS: "30000",
    SINK_BATCH_WAIT_MS: "1000",
    SINK_BATCH_RECORDS: "10000",
    // Limits high enough never to refuse, so each workspace's bucket is kept and charged.
    RATE_LIMIT_PER_SECOND: "1000000",
    RATE_LIMIT_BURST: "1000000",
    LOG_LEVEL: "warn",
    PRODUCE_TIMEOUT_MS: "10000",
    INGEST_METRICS_PORT: String(await freePort()),
  });
  await stack.start();
  const results: { point: Point; f: Figures }[] = [];
  try {
    const pids = { ingest: stack.ingest!.child.pid, sink: stack.sink!.child.pid, ...stackPids() };
    const idleRss = rssMb(pids.ingest!);
    const count = async () => Number((await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table}`))[0]!.n);
    const job = (point: Point, seconds: number): LoadJob => ({
      url: `${stack.base}/v1/batch`,
      bodies: bodies(point, messages),
      headers: { "content-type": "application/json" },
      connections: CONNECTIONS,
      seconds,
      rate: 0,
      keys: { prefix: KEY_PREFIX, count: point.keys },
    });
    const settled = () => sinkCaughtUp(stack, 180_000);
    // Warm-up: V8's and the broker's JIT, ClickHouse's first parts.
    await runLoad(job({ curve: "batch", batch: 100, keys: 1 }, SECONDS));
    await settled();
    for (const point of POINTS) {
      const j = job(point, SECONDS);
      const before = await count();
      const cpu0 = cpuSnapshot(pids);
      const started = Date.now();
      const result = await runLoad(j);
      const rss = rssMb(pids.ingest!);
      const accepted = (result.requests - result.non2xx) * point.batch;
      const landed = await landedSince(count, before, accepted, 200, 180_000);
      const elapsed = (Date.now() - started) / 1000;
      const cpu1 = cpuSnapshot(pids);
      const f: Figures = {
        accepted_events_per_s: accepted / SECONDS,
        landed_events_per_s: landed / elapsed,
        p99_ms: result.p99,
        non2xx: result.non2xx + result.errors,
        missing: Math.max(0, accepted - landed),
        request_kb: j.bodies.reduce((s, b) => s + b.length, 0) / j.bodies.length / 1024,
        ingest_rss_mb: rss,
        ingest_idle_rss_mb: idleRss,
      };
      f.in_flight_mb = (f.request_kb! * CONNECTIONS) / 1024;
      for (const name of Object.keys(cpu1)) f[`${name}_us_per_event`] = ((cpu1[name]! - cpu0[name]!) * 1e6) / Math.max(1, accepted);
      f.load_us_per_event = (result.cpuSeconds * 1e6) / Math.max(1, accepted);
      f.machine_us_per_event = ["ingest", "sink", "kafka", "clickhouse", "load"].reduce((s, k) => s + (f[`${k}_us_per_event`] ?? 0), 0);
      results.push({ point, f });
      await settled();
    }
  } finally {
    await stack.stop();
    rmSync(keysDir, { recursive: true, force: true });
  }
  report(results);
}

function report(results: { point: Point; f: Figures }[]): void {
  const n = (x: number | undefined, digits = 0) =>
    x === undefined || Number.isNaN(x) ? "n/a" : x.toLocaleString("en-US", { maximumFractionDigits: digits });
  const shape = (p: Point) =>
    p.curve === "batch"
      ? `${p.batch} per request`
      : p.curve === "message size"
        ? `${n((p.messageBytes ?? 0) / 1024, 1)} KB`
        : `${n(p.keys)} keys`;
  const lines = results.map(
    ({ point: p, f }) =>
      `| ${p.curve} | ${shape(p)} | ${n(f.accepted_events_per_s)} | ${n(f.landed_events_per_s)} | ${n(f.p99_ms)} ms | ` +
      ["ingest", "sink", "kafka", "clickhouse", "load", "machine"].map((k) => n(f[`${k}_us_per_event`], 1)).join(" | ") +
      ` | ${n(f.ingest_rss_mb)} MB | ${n(f.in_flight_mb, 1)} MB |`,
  );
  process.stdout.write(
    `\n| curve | point | accepted events/s | landed events/s | p99 | ingest µs | sink µs | Kafka µs | ClickHouse µs | load µs | machine µs | ingest RSS | in flight |\n` +
      `|---|---|---|---|---|---|---|---|---|---|---|---|---|\n${lines.join("\n")}\n\n`,
  );
  const base = results.find((r) => r.point.curve === "batch" && r.point.batch === 100)?.f;
  if (base) {
    const perCore = (us: number | undefined) => (us ? 1e6 / us : Number.NaN);
    const big = results.find((r) => r.point.messageBytes === 16384)?.f;
    const mbPerMb = big ? (big.ingest_rss_mb! - big.ingest_idle_rss_mb!) / big.in_flight_mb! : Number.NaN;
    process.stdout.write(
      `| sizing (100-message requests of 0.4-0.6 KB messages) | per core |\n|---|---|\n` +
        `| ingest | ${n(perCore(base.ingest_us_per_event))} events/s |\n| sink | ${n(perCore(base.sink_us_per_event))} events/s |\n` +
        `| Kafka broker | ${n(perCore(base.kafka_us_per_event))} events/s |\n| ClickHouse | ${n(perCore(base.clickhouse_us_per_event))} rows/s |\n` +
        `| ingest memory above idle per MB of requests in flight (16 KB point) | ${n(mbPerMb, 1)} MB |\n\n`,
    );
  }
  for (const { point, f } of results) {
    const rounded: Figures = {};
    for (const [k, v] of Object.entries(f)) rounded[k] = Math.round(v * 10) / 10;
    process.stdout.write(JSON.stringify({ ...point, ...rounded }) + "\n");
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:curves failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
