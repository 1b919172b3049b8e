/**
 * `npm run bench:deliveries`: what the delivery process (sink/deliver/) costs, on the local stack,
 * receivers on 127.0.0.1 answering 200 at once. Each phase has topics and a delivery process of
 * its own; its events (the bench corpus, as the ingest writes them) are written straight to Kafka
 * once its destinations run, and the phase lasts until every receiver got every event.
 *   single    one destination, one message per request (DELIVER_BENCH_SINGLE events, default 20,000)
 *   batched   one destination, `--batch-size 100` (DELIVER_BENCH_BATCHED, default 200,000)
 *   fanout    DELIVER_BENCH_DESTINATIONS destinations (default 100), one message per request, each
 *             with a receiver of its own (DELIVER_BENCH_FANOUT events each, default 500)
 *   backlog   one destination whose port is closed (connection refused) and DELIVER_BENCH_BACKLOG
 *             events (default 1,000,000) written while it waits; the process's RSS before, during
 *             DELIVER_BENCH_WAIT_S (default 30) and its peak, and the group's lag (the backlog in Kafka)
 * Deliveries/s count from the first write to the last arrival; CPU µs per delivery is the
 * delivery process's CPU (user + system, /proc) over the phase divided by the deliveries. The
 * receivers run in this process. Prints a table, then one JSON line of the figures (DELIVER_FIGURE_KEYS).
 */
import { randomUUID } from "node:crypto";
import { createClient } from "@clickhouse/client";
import type { Producer } from "kafkajs";
import { clickhouseConfig } from "../../schemas/config";
import { delivering, metricSum, Receiver, type Deliverer } from "../support/deliveries";
import { LiveStack, stopService } from "../support/harness";
import {
  addBenchDestination,
  benchProducer,
  DELIVER_FIGURE_KEYS,
  benchRecords,
  dropPhases,
  phaseDeliver,
  phaseTopics,
  produce,
  type Phase,
} from "./deliveries-setup";
import { cpuSeconds, peakRssMb, rssMb } from "./procstat";
import type { EventRecord } from "../../schemas/envelope";

const SINGLE = Number(process.env.DELIVER_BENCH_SINGLE ?? 20_000);
const BATCHED = Number(process.env.DELIVER_BENCH_BATCHED ?? 200_000);
const DESTINATIONS = Number(process.env.DELIVER_BENCH_DESTINATIONS ?? 100);
const FANOUT = Number(process.env.DELIVER_BENCH_FANOUT ?? 500);
const BACKLOG = Number(process.env.DELIVER_BENCH_BACKLOG ?? 1_000_000);
const WAIT_S = Number(process.env.DELIVER_BENCH_WAIT_S ?? 30);
const PARTITIONS = 3;

/** What the phases share. */
interface Bench {
  stack: LiveStack;
  runId: string;
  producer: Producer;
  records: EventRecord[];
  phases: Phase[];
  receivers: Receiver[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Waits until `done`, polling every 20 ms; throws after `timeoutMs`. */
async function until(what: string, done: () => boolean, timeoutMs: number): Promise<void> {
  const by = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > by) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A phase's own topics and delivery process; `run` with them, then the process stopped. */
async function withPhase<T>(bench: Bench, name: string, run: (phase: Phase, d: Deliverer) => Promise<T>): Promise<T> {
  const phase = await phaseTopics(bench.stack, bench.runId, name, PARTITIONS);
  bench.phases.push(phase);
  const d = await phaseDeliver(bench.stack, bench.runId, phase);
  try {
    return await run(phase, d);
  } finally {
    await stopService(d.service);
  }
}

/** A delivery phase: `count` destinations with `options`, `events` written, until each receiver has them all. */
async function deliveryPhase(
  bench: Bench,
  name: string,
  count: number,
  events: number,
  options: string[],
): Promise<{ perSecond: number; cpuUs: number; perRequest: number; seconds: number }> {
  return withPhase(bench, name, async (phase, d) => {
    const receivers = await Promise.all(Array.from({ length: count }, () => new Receiver(false).start()));
    bench.receivers.push(...receivers);
    const ids: string[] = [];
    for (const r of receivers) ids.push(await addBenchDestination(bench.stack.kafka, phase, r.url, ...options));
    await Promise.all(ids.map((id) => delivering(d, id, 1, 180_000)));
    await sleep(1_000);
    const pid = d.service.child.pid!;
    const cpu = cpuSeconds(pid);
    const started = Date.now();
    await produce(bench.producer, phase.kafka.topic, bench.records, events);
    const total = () => receivers.reduce((sum, r) => sum + r.messages, 0);
    await until(`${name}: ${events * count} deliveries`, () => total() >= events * count, 600_000);
    const seconds = (Date.now() - started) / 1000;
    const deliveries = total();
    const requests = receivers.reduce((sum, r) => sum + r.requests, 0);
    return {
      perSecond: round(deliveries / seconds),
      cpuUs: round(((cpuSeconds(pid) - cpu) * 1e6) / deliveries),
      perRequest: round(deliveries / requests),
      seconds: round(seconds),
    };
  });
}

/** The backlog phase: one dead destination, BACKLOG events written while it waits; RSS and lag. */
async function backlogPhase(bench: Bench): Promise<Record<string, number>> {
  return withPhase(bench, "backlog", async (phase, d) => {
    const dead = await new Receiver(false).start();
    await dead.close();
    const id = await addBenchDestination(bench.stack.kafka, phase, dead.url);
    await delivering(d, id, 1, 120_000);
    await sleep(3_000);
    const pid = d.service.child.pid!;
    const before = rssMb(pid);
    const produceS = await produce(bench.producer, phase.kafka.topic, bench.records, BACKLOG);
    const samples: number[] = [];
    for (let s = 0; s < WAIT_S; s++) {
      await sleep(1_000);
      samples.push(rssMb(pid));
    }
    const lag = await bench.stack.groupLag(phase.kafka.topic, `bench-deliver-${bench.runId}-${id}`);
    const attempts = await metricSum(d.port, "deliver_requests_total", ['answer="none"']);
    console.log(
      `backlog: ${BACKLOG} events written in ${round(produceS)} s; RSS ${round(before)} MB before, ` +
        `${samples.map((s) => round(s, 0)).join(" ")} MB each second after; ${attempts} attempts refused`,
    );
    return {
      backlog_produce_msgs_per_s: round(BACKLOG / produceS, 0),
      backlog_rss_before_mb: round(before),
      backlog_rss_after_mb: round(samples.at(-1) ?? 0),
      backlog_peak_rss_mb: round(peakRssMb(pid)),
      backlog_lag_records: lag.end - lag.committed,
    };
  });
}

async function main(): Promise<void> {
  const stack = new LiveStack({ LOG_LEVEL: "warn" });
  await stack.run("deploy/setup/main.js");
  const c = clickhouseConfig(stack.env);
  stack.ch = createClient({ url: c.url, username: c.username, password: c.password }); // stack.stop() drops the database
  const producer = await benchProducer(stack.kafka);
  const bench: Bench = { stack, runId: randomUUID().slice(0, 8), producer, records: benchRecords(), phases: [], receivers: [] };
  const figures: Record<string, number> = {};
  try {
    const single = await deliveryPhase(bench, "single", 1, SINGLE, []);
    const batched = await deliveryPhase(bench, "batched", 1, BATCHED, ["--batch-size", "100", "--batch-wait-ms", "200"]);
    const fanout = await deliveryPhase(bench, "fanout", DESTINATIONS, FANOUT, []);
    Object.assign(figures, {
      single_deliveries_per_s: single.perSecond,
      single_cpu_us_per_delivery: single.cpuUs,
      batched_deliveries_per_s: batched.perSecond,
      batched_cpu_us_per_delivery: batched.cpuUs,
      batched_messages_per_request: batched.perRequest,
      fanout_deliveries_per_s: fanout.perSecond,
      fanout_cpu_us_per_delivery: fanout.cpuUs,
    });
    Object.assign(figures, await backlogPhase(bench));
    const n = (v: number) => v.toLocaleString("en-US");
    process.stdout.write(
      `\n| Phase | Deliveries | Seconds | Deliveries/s | Delivery process CPU per delivery | Messages per request |\n|---|---|---|---|---|---|\n` +
        `| one message per request | ${n(SINGLE)} | ${single.seconds} | ${n(single.perSecond)} | ${single.cpuUs} µs | ${single.perRequest} |\n` +
        `| batches of up to 100 | ${n(BATCHED)} | ${batched.seconds} | ${n(batched.perSecond)} | ${batched.cpuUs} µs | ${batched.perRequest} |\n` +
        `| ${DESTINATIONS} destinations, one message per request | ${n(DESTINATIONS * FANOUT)} | ${fanout.seconds} | ${n(fanout.perSecond)} | ${fanout.cpuUs} µs | ${fanout.perRequest} |\n\n`,
    );
  } finally {
    await producer.disconnect();
    await Promise.all(bench.receivers.map((r) => r.close()));
    await dropPhases(stack.kafka, bench.phases);
    await stack.stop();
  }
  console.log(JSON.stringify(Object.fromEntries(DELIVER_FIGURE_KEYS.map((k) => [k, figures[k]]))));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
