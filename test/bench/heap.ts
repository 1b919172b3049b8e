/**
 * `npm run bench:heap`: the ingest's memory against its throughput, per V8 heap setting. One stack
 * with the sink paused (the accept path: the ingest at full load); for each setting in turn, a
 * fresh ingest run with those node flags gets a 5 s warm-up, then HEAP_SECONDS (default 20) of the
 * bench's batch load (100-message requests, 16 connections), and is stopped. Per run: accepted
 * events/s, the ingest's CPU µs per event, request p99, its peak RSS (VmHWM), and the peaks of
 * what its /metrics reports every 500 ms (V8's new and old spaces, the whole heap, the memory
 * outside the heap). Settings alternate for HEAP_ROUNDS rounds (default 2), so a drift of the
 * machine falls on all of them.
 * HEAP_SETTINGS: a JSON object of name -> node flags, where an entry `NAME=value` (upper case) is
 * set in the ingest's environment instead (`LD_PRELOAD=...` for another allocator); default: V8's
 * defaults against the settings docs/PERFORMANCE.md reports. Prints a table, then one JSON line
 * per run. Asserts no speed.
 */
import { LiveStack, basic, freePort, stopService } from "../support/harness";
import { LOAD_STACK_ENV, benchBodies, corpus } from "./corpus";
import { cpuSeconds, peakRssMb } from "./procstat";
import { runLoad } from "./child";

const SECONDS = Number(process.env.HEAP_SECONDS ?? 20);
const ROUNDS = Number(process.env.HEAP_ROUNDS ?? 2);
const WARMUP_SECONDS = Math.min(5, SECONDS);
const BATCH = 100;

/** The settings compared by default: name -> node flags. */
const DEFAULT_SETTINGS: Record<string, string[]> = {
  "V8 defaults": [],
  "heap growing 50%": ["--heap-growing-percent=50"],
  "semi-space 8 MB, growing 50%": ["--max-semi-space-size=8", "--heap-growing-percent=50"],
  "semi-space 16 MB, old space 96 MB": ["--max-semi-space-size=16", "--max-old-space-size=96"],
};

/** A setting's entry that is an environment variable of the ingest, not a node flag. */
const ENV_ENTRY = /^[A-Z][A-Z0-9_]*=/;

/** The /metrics gauges sampled (prom-client's defaults, the ingest's `ingest_` prefix), by the name the table gives them. */
const GAUGES: Record<string, RegExp> = {
  heap: /^ingest_nodejs_heap_size_total_bytes (\S+)/m,
  new: /^ingest_nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)/m,
  old: /^ingest_nodejs_heap_space_size_total_bytes\{space="old"\} (\S+)/m,
  external: /^ingest_nodejs_external_memory_bytes (\S+)/m,
};

/** One run's figures; memory in MB. */
interface Run {
  round: number;
  setting: string;
  flags: string;
  accepted_events_per_s: number;
  ingest_us_per_event: number;
  p99_ms: number;
  non2xx: number;
  peak_rss_mb: number;
  /** Peaks of the sampled gauges (GAUGES), MB. */
  heap_mb: number;
  new_mb: number;
  old_mb: number;
  external_mb: number;
}

/** Samples the ingest's /metrics every 500 ms until the returned stop is called; resolves with each gauge's peak, MB. */
function samplePeaks(metricsUrl: string): () => Promise<Record<string, number>> {
  const peaks: Record<string, number> = Object.fromEntries(Object.keys(GAUGES).map((k) => [k, 0]));
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const text = await (await fetch(metricsUrl)).text();
        for (const [name, pattern] of Object.entries(GAUGES)) {
          const match = pattern.exec(text);
          if (match) peaks[name] = Math.max(peaks[name]!, Number(match[1]) / 1048576);
        }
      } catch {
        // a scrape refused under load: the next one counts
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return async () => {
    running = false;
    await loop;
    return peaks;
  };
}

const fixed = (value: number, digits = 0) => Number(value.toFixed(digits));

async function main(): Promise<void> {
  const settings = process.env.HEAP_SETTINGS ? (JSON.parse(process.env.HEAP_SETTINGS) as Record<string, string[]>) : DEFAULT_SETTINGS;
  const bodies = benchBodies(corpus(1_000)).batch;
  const headers = { authorization: basic("test-key"), "content-type": "application/json" };
  const stack = new LiveStack({ ...LOAD_STACK_ENV });
  await stack.start();
  const sinkPid = stack.sink!.child.pid!;
  // The ingest the stack started is replaced by one per run; the sink waits paused meanwhile.
  await stopService(stack.ingest!);
  stack.ingest = undefined;
  process.kill(sinkPid, "SIGSTOP");
  const runs: Run[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [setting, flags] of Object.entries(settings)) {
        const metricsPort = await freePort();
        const env = Object.fromEntries(
          flags.filter((f) => ENV_ENTRY.test(f)).map((f) => [f.slice(0, f.indexOf("=")), f.slice(f.indexOf("=") + 1)]),
        );
        const nodeFlags = flags.filter((f) => !ENV_ENTRY.test(f));
        const { service, port } = await stack.startIngest({ ...env, INGEST_METRICS_PORT: String(metricsPort) }, nodeFlags);
        try {
          const url = `http://127.0.0.1:${port}/v1/batch`;
          await runLoad({ url, bodies, headers, connections: 16, seconds: WARMUP_SECONDS, rate: 0 });
          const stopSampling = samplePeaks(`http://127.0.0.1:${metricsPort}/metrics`);
          const cpuBefore = cpuSeconds(service.child.pid!);
          const load = await runLoad({ url, bodies, headers, connections: 16, seconds: SECONDS, rate: 0 });
          const cpu = cpuSeconds(service.child.pid!) - cpuBefore;
          const peaks = await stopSampling();
          const events = (load.requests - load.non2xx) * BATCH;
          const run: Run = {
            round,
            setting,
            flags: flags.join(" "),
            accepted_events_per_s: fixed(events / SECONDS),
            ingest_us_per_event: fixed((cpu * 1e6) / Math.max(1, events), 1),
            p99_ms: load.p99,
            non2xx: load.non2xx,
            peak_rss_mb: fixed(peakRssMb(service.child.pid!)),
            heap_mb: fixed(peaks.heap!),
            new_mb: fixed(peaks.new!),
            old_mb: fixed(peaks.old!),
            external_mb: fixed(peaks.external!),
          };
          runs.push(run);
          process.stderr.write(`heap: round ${round}, ${setting}: ${run.accepted_events_per_s} events/s, peak RSS ${run.peak_rss_mb} MB\n`);
        } finally {
          await stopService(service);
        }
      }
    }
  } finally {
    process.kill(sinkPid, "SIGCONT");
    await stack.stop();
  }
  const n = (v: number) => v.toLocaleString("en-US");
  process.stdout.write(
    `The ingest's memory per V8 setting: accept path (sink paused), ${SECONDS} s of 100-message batches over 16 connections per run, ${ROUNDS} rounds\n\n` +
      "| round | setting | accepted events/s | ingest µs/event | p99 | peak RSS | heap (new / old) | outside the heap |\n|---|---|---|---|---|---|---|---|\n" +
      runs
        .map(
          (r) =>
            `| ${r.round} | ${r.setting} | ${n(r.accepted_events_per_s)} | ${r.ingest_us_per_event} | ${r.p99_ms} ms | ${r.peak_rss_mb} MB | ${r.heap_mb} MB (${r.new_mb} / ${r.old_mb}) | ${r.external_mb} MB |`,
        )
        .join("\n") +
      "\n\n",
  );
  for (const r of runs) process.stdout.write(`${JSON.stringify(r)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
