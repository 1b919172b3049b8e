/**
 * `npm run bench:profile -- <commit>`: where a single-event request's time goes, at another
 * commit and in this working tree, one after the other on the same stack and node. For each, the
 * real ingest and sink of that tree (its own harness: its LiveStack) run under `node --cpu-prof`,
 * the bench's load generator sends the single identify phase (16 connections, BENCH_SECONDS,
 * default 15, after 3 s of warm-up), and the ingest's profile is read: requests/s, the ingest's
 * CPU per request, and its top entries by self time, per function and per file. Profiles stay
 * in .stack/profiles/<side>/. With BENCH_PROFILE_PHASE=batch the phase is the batch endpoint's
 * instead (100 corpus messages per request, figures per event). 127.0.0.1 only; needs the local
 * stack (test/bench/run.sh starts it).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { runLoad } from "./child";
import { ROOT, checkout } from "./checkout";
import { corpus } from "./corpus";
import { cpuSeconds, peakRssMb } from "./procstat";
import { grouped, selfTimes } from "./profile-top";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const TOP = 15;
/** "single" (the identify endpoint, one event per request) or "batch" (100 events per request). */
const PHASE = process.env.BENCH_PROFILE_PHASE === "batch" ? "batch" : "single";
const BATCH = 100;

/** What the LiveStack of any commit's harness offers here. */
interface AnyStack {
  base: string;
  ingest?: { child: { pid?: number } };
  start(nodeArgs: string[]): Promise<void>;
  stop(): Promise<void>;
}

/** The LiveStack class of a tree's build (its test/support/harness.ts since 2026-11-26, a harness.ts directly under test/ before). */
function liveStackOf(root: string): new (env: Record<string, string>) => AnyStack {
  const path = [join(root, "dist/test/support/harness.js"), join(root, "dist/test/harness.js")].find((p) => existsSync(p));
  if (path === undefined) throw new Error(`no harness in ${root}/dist`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- another tree's build, chosen at run time
  return (require(path) as { LiveStack: new (env: Record<string, string>) => AnyStack }).LiveStack;
}

/** Runs the single phase against `root`'s services; prints its figures and top entries. */
async function profile(side: string, root: string): Promise<void> {
  const dir = join(ROOT, ".stack", "profiles", side);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const messages = corpus(1_000);
  const bodies =
    PHASE === "batch"
      ? Array.from({ length: 10 }, (_, i) => JSON.stringify({ batch: messages.slice(i * BATCH, (i + 1) * BATCH) }))
      : messages
          .filter((m) => m.type === "identify")
          .slice(0, 50)
          .map((m) => JSON.stringify({ ...m, type: undefined }));
  const perRequest = PHASE === "batch" ? BATCH : 1;
  const unit = PHASE === "batch" ? "event" : "request";
  const LiveStack = liveStackOf(root);
  const stack = new LiveStack({
    RATE_LIMIT_PER_SECOND: "0",
    LOG_LEVEL: "warn",
    PRODUCE_TIMEOUT_MS: "10000",
    SINK_SESSION_TIMEOUT_MS: "30000",
  });
  await stack.start(["--max-semi-space-size=16", "--cpu-prof", `--cpu-prof-dir=${dir}`]);
  const pid = stack.ingest!.child.pid!;
  let line: string;
  try {
    const headers = { authorization: `Basic ${Buffer.from("test-key:").toString("base64")}`, "content-type": "application/json" };
    const job = {
      url: `${stack.base}/v1/${PHASE === "batch" ? "batch" : "identify"}`,
      bodies,
      headers,
      connections: 16,
      seconds: SECONDS,
      rate: 0,
    };
    await runLoad({ ...job, seconds: 3 });
    const before = cpuSeconds(pid);
    const load = await runLoad(job);
    const micros = ((cpuSeconds(pid) - before) * 1e6) / Math.max(1, load.requests * perRequest);
    line = `${side} (${PHASE}): ${Math.round(load.reqPerSec * perRequest)} ${unit}s/s, p99 ${load.p99} ms, ingest CPU ${Math.round(micros)} µs/${unit}, non-2xx ${load.non2xx}, ingest peak RSS ${Math.round(peakRssMb(pid))} MB (under the profiler)`;
  } finally {
    await stack.stop();
  }
  const file = readdirSync(dir).find((f) => f.includes(`.${pid}.`));
  if (file === undefined) throw new Error(`the ingest (pid ${pid}) wrote no profile in ${dir}`);
  const frames = selfTimes([JSON.parse(readFileSync(join(dir, file), "utf8"))]).filter((t) => t.frame !== "(idle)");
  const busy = frames.reduce((sum, t) => sum + t.micros, 0);
  const rows = (list: { frame: string; micros: number }[]) =>
    list
      .slice(0, TOP)
      .map((t) => `| ${((t.micros / busy) * 100).toFixed(1)}% | ${t.frame.replace(/\S*\.stack\/compare\/[0-9a-f]+\//, "")} |`)
      .join("\n");
  process.stdout.write(`\n${line} (profile: ${join(dir, file)})\n\n| self | function |\n|---|---|\n${rows(frames)}\n`);
  process.stdout.write(`\n| self | file |\n|---|---|\n${rows(grouped(frames))}\n`);
}

async function main(): Promise<void> {
  const commit = process.argv[2];
  if (commit === undefined) throw new Error("usage: npm run bench:profile -- <commit> (-: this tree alone)");
  if (commit !== "-") await profile(`old-${commit}`, checkout(commit));
  await profile("new", ROOT);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:profile failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
