/**
 * What the benchmarks share: the load generator run as its own process, the local stack's server
 * PIDs, the waits for rows to land and for the sink to catch up, and a bench script run to its
 * end (the smoke tests).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadJob, LoadResult } from "./load";
import type { LiveStack } from "../support/harness";

/** Runs test/bench/load.ts in its own process; the job goes through a temporary file (bodies exceed argv limits). Throws when it fails. */
export async function runLoad(job: LoadJob): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-"));
  const file = join(dir, "job.json");
  writeFileSync(file, JSON.stringify(job));
  try {
    const { code, out } = await runScript("load.js", {}, ["ignore", "pipe", "inherit"], [file]);
    if (code !== 0) throw new Error(`load generator exited ${code}`);
    return JSON.parse(out) as LoadResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs a script of this folder (compiled) with the environment plus `env`, to its end: its exit
 * code and what it wrote (stdout, and stderr unless `stdio` sends it elsewhere).
 */
export async function runScript(
  script: string,
  env: Record<string, string> = {},
  stdio: ["ignore", "pipe", "pipe" | "inherit"] = ["ignore", "pipe", "pipe"],
  args: string[] = [],
): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [join(__dirname, script), ...args], { env: { ...process.env, ...env }, stdio });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, out };
}

/** The JSON lines of a bench script's output (one object per line starting with `{`), parsed. */
export function jsonLines(out: string): Record<string, number | string>[] {
  return out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, number | string>);
}

/** PIDs of the local stack's servers, when this checkout's scripts started them (STACK_DIR, else .stack). */
export function stackPids(): { kafka?: number; clickhouse?: number } {
  const dir = process.env.STACK_DIR ?? join(__dirname, "..", "..", "..", ".stack");
  const read = (file: string) => {
    try {
      return Number(readFileSync(join(dir, file), "utf8").trim()) || undefined;
    } catch {
      return undefined;
    }
  };
  return { kafka: read("kafka/kafka.pid"), clickhouse: read("clickhouse/clickhouse.pid") };
}

/**
 * Rows landed since `before` (`count` gives the table's rows), polled every `pollMs` until
 * `expected` or `deadlineMs` from now.
 */
export async function landedSince(
  count: () => Promise<number>,
  before: number,
  expected: number,
  pollMs: number,
  deadlineMs: number,
): Promise<number> {
  const end = Date.now() + deadlineMs;
  let landed = (await count()) - before;
  while (landed < expected && Date.now() < end) {
    await new Promise((r) => setTimeout(r, pollMs));
    landed = (await count()) - before;
  }
  return landed;
}

/** Waits (at most `deadlineMs`) until the sink's group has committed every record of the stack's topic. */
export async function sinkCaughtUp(stack: LiveStack, deadlineMs: number): Promise<void> {
  const by = Date.now() + deadlineMs;
  for (let lag = await stack.groupLag(); lag.committed < lag.end && Date.now() < by; lag = await stack.groupLag())
    await new Promise((r) => setTimeout(r, 200));
}
