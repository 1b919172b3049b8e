/**
 * `npm run bench:compare -- <commit> [pairs]`: the bench (test/bench/main.ts) of another commit
 * and of this working tree, back to back on the same stack and the same node, alternating (old
 * then new, then new then old, ...: a drift of the machine during the sitting weighs on both),
 * `pairs` pairs (default 3). The commit is cloned into .stack/compare/<sha>, installed (npm ci)
 * and built once; later runs reuse it. Each side runs its own bench with its own harness; the
 * services get `--max-semi-space-size=16` on both (this tree's harness passes it; older ones
 * did not). Prints each run's figures, then the ratios new/old of each pair and their median.
 * 127.0.0.1 only; needs the local stack (test/bench/run.sh starts it).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { jsonLines } from "./child";
import { ROOT, checkout } from "./checkout";

/** The figures compared, with how each reads: higher is better, or lower is. */
export const COMPARED: readonly { key: string; better: "higher" | "lower" }[] = [
  { key: "single_req_per_s", better: "higher" },
  { key: "accept_events_per_s", better: "higher" },
  { key: "batch_events_per_s", better: "higher" },
  { key: "e2e_events_per_s", better: "higher" },
  { key: "ingest_cpu_us_per_event", better: "lower" },
  { key: "ingest_rss_mb", better: "lower" },
  { key: "single_p99_ms", better: "lower" },
  // The machine's own state during each run: equal ceilings say the two sides were measured alike.
  { key: "http_ceiling_events_per_s", better: "higher" },
  { key: "kafka_ceiling_msgs_per_s", better: "higher" },
];

/** The median of numbers (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Ratios new/old of each pair for each compared figure, and their median; NaN where a side lacks it. */
export function ratios(
  pairs: readonly { old: Record<string, number>; new: Record<string, number> }[],
): Record<string, { each: number[]; median: number }> {
  const out: Record<string, { each: number[]; median: number }> = {};
  for (const { key } of COMPARED) {
    const each = pairs.map((p) => (p.new[key] ?? Number.NaN) / (p.old[key] ?? Number.NaN));
    out[key] = { each, median: median(each) };
  }
  return out;
}

/** Runs one side's bench to its end; its figures (the last JSON line). Throws when it fails. */
async function bench(dir: string): Promise<Record<string, number>> {
  const child = spawn(process.execPath, [join(dir, "dist", "test", "bench", "main.js")], {
    cwd: dir,
    env: { ...process.env, STACK_DIR: join(ROOT, ".stack"), BENCH_NODE_ARGS: "--max-semi-space-size=16" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  const figures = jsonLines(out).at(-1) as Record<string, number> | undefined;
  if (code !== 0 || figures === undefined) throw new Error(`the bench of ${dir} exited ${code}:\n${out}`);
  // Older benches printed the ingest's CPU per event only in their first CPU table (the batch phase).
  const perEvent = /^\| ingest \| [\d.,]+ s \| [\d.,]+% \| ([\d.,]+) µs \|$/m.exec(out)?.[1];
  if (figures.ingest_cpu_us_per_event === undefined && perEvent !== undefined)
    figures.ingest_cpu_us_per_event = Number(perEvent.replaceAll(",", ""));
  return figures;
}

async function main(): Promise<void> {
  const [commit, pairsArg] = process.argv.slice(2);
  if (commit === undefined) throw new Error("usage: npm run bench:compare -- <commit> [pairs]");
  const pairCount = Number(pairsArg ?? 3);
  const oldDir = checkout(commit);
  const pairs: { old: Record<string, number>; new: Record<string, number> }[] = [];
  for (let i = 0; i < pairCount; i++) {
    const order = i % 2 === 0 ? (["old", "new"] as const) : (["new", "old"] as const);
    const pair: Partial<Record<"old" | "new", Record<string, number>>> = {};
    for (const side of order) {
      pair[side] = await bench(side === "old" ? oldDir : ROOT);
      const shown = COMPARED.map(({ key }) => `${key}=${pair[side]![key] ?? "n/a"}`).join(" ");
      process.stdout.write(`pair ${i + 1} ${side}: ${shown}\n`);
    }
    pairs.push(pair as { old: Record<string, number>; new: Record<string, number> });
  }
  const table = ratios(pairs);
  const rows = COMPARED.map(({ key, better }) => {
    const r = table[key]!;
    return `| ${key} (${better} is better) | ${r.each.map((x) => x.toFixed(2)).join(" / ")} | ${r.median.toFixed(2)}x |`;
  });
  process.stdout.write(`\n| new / ${commit} | each pair | median |\n|---|---|---|\n${rows.join("\n")}\n\n`);
  process.stdout.write(
    `${JSON.stringify({ commit, pairs: pairs.length, ratios: Object.fromEntries(Object.entries(table).map(([k, v]) => [k, Number(v.median.toFixed(3))])), runs: pairs })}\n`,
  );
}

// Run as a script only: bench:rss imports `median` from here.
if (require.main === module)
  main().catch((error: unknown) => {
    process.stderr.write(`bench:compare failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
