/**
 * CPU of the ingest app per single-message request, in-process: the app as the service wires it,
 * with a producer that does nothing (request-app.ts, its own process), under closed loops of the
 * load generator over loopback HTTP. Its CPU time (user + system, /proc) over the requests
 * answered: the edge's own work per request (HTTP, Koa, the checks, the record), with no kafkajs.
 * The bench's single phase gives the same figure for the real ingest, with Kafka. Figures of the
 * machine it runs on (two hyperthreads here: the load generator beside it moves them by 10-20%);
 * reported by `npm run bench`, never asserted.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { runLoad } from "./child";
import type { LoadJob } from "./load";
import { cpuSeconds, peakRssMb } from "./procstat";

/** CPU µs per request, requests answered per second, and the app's peak RSS (MB). */
export interface RequestCost {
  usPerRequest: number;
  reqPerSec: number;
  rssMb: number;
}

/**
 * Starts the app with the environment plus `env` (LOG_LEVEL warn), runs `job` against its port
 * (`job.url` is a path there, e.g. `/v1/identify`) after a warm-up of 3 s, and stops it. Throws if
 * the app does not start or refuses a request.
 */
export async function requestCost(job: LoadJob, env: Record<string, string>): Promise<RequestCost> {
  const profile = process.env.BENCH_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, ["--max-semi-space-size=16", ...profile, join(__dirname, "request-app.js")], {
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  try {
    const [portLine] = (await Promise.race([once(child.stdout!, "data"), exited.then(() => [])])) as [Buffer?];
    if (portLine === undefined) throw new Error("request-app exited before it listened");
    const loadJob = { ...job, url: `http://127.0.0.1:${portLine.toString().trim()}${job.url}` };
    await runLoad({ ...loadJob, seconds: Math.min(3, job.seconds) });
    const before = cpuSeconds(child.pid!);
    const load = await runLoad(loadJob);
    const cpu = cpuSeconds(child.pid!) - before;
    if (load.non2xx + load.errors > 0) throw new Error(`the app refused ${load.non2xx} requests (${load.errors} errors)`);
    return { usPerRequest: (cpu * 1e6) / Math.max(1, load.requests), reqPerSec: load.reqPerSec, rssMb: peakRssMb(child.pid!) };
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}
