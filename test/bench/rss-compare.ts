/**
 * `npm run bench:rss -- <commit> [rounds]`: the ingest's peak RSS at the same offered load, another
 * commit's ingest against this tree's. bench:compare runs each side as fast as it answers, so a
 * faster side also turns over more memory in the same seconds; here both get the same paced load.
 * One local stack with its sink running; per round, each side's ingest in turn (alternating which
 * goes first), started fresh with `--max-semi-space-size=16` and the stack's settings: its RSS at
 * rest, then RSS_SECONDS (default 15) of the bench's 100-message batches at RSS_BATCH_RATE requests/s
 * (default 140: 14,000 events/s, about what 4864cad's ingest reached at full load here) and its
 * peak RSS (VmHWM), then as long of single identify requests at RSS_SINGLE_RATE (default 1,800/s)
 * and its peak again. A side that answered any request with other than 2xx did not keep up with
 * the rate, and its round says so. Prints a table, the median ratios new/old, and one JSON line.
 * The commit is built by checkout.ts (as bench:compare does). 127.0.0.1 only. Asserts no figure.
 */
import { join } from "node:path";
import { LiveStack, basic, stopService } from "../support/harness";
import { ROOT, checkout } from "./checkout";
import { runLoad } from "./child";
import { median } from "./compare";
import { LOAD_STACK_ENV, benchBodies, corpus } from "./corpus";
import { peakRssMb, rssMb } from "./procstat";

const SECONDS = Number(process.env.RSS_SECONDS ?? 15);
const BATCH_RATE = Number(process.env.RSS_BATCH_RATE ?? 140);
const SINGLE_RATE = Number(process.env.RSS_SINGLE_RATE ?? 1_800);
const BATCH = 100;

/** One side's figures in one round; memory in MB. */
interface Side {
  round: number;
  side: "old" | "new";
  idle_mb: number;
  batch_peak_mb: number;
  peak_mb: number;
  non2xx: number;
}

async function main(): Promise<void> {
  const commit = process.argv[2];
  if (commit === undefined) throw new Error("usage: npm run bench:rss -- <commit> [rounds]");
  const rounds = Number(process.argv[3] ?? 3);
  const dirs = { old: checkout(commit), new: ROOT };
  const { batch: batchBodies, identify: identifyBodies } = benchBodies(corpus(1_000));
  const headers = { authorization: basic("test-key"), "content-type": "application/json" };
  const stack = new LiveStack({ ...LOAD_STACK_ENV });
  await stack.start();
  // The stack's own ingest gives way to one per side and round; the sink keeps inserting.
  await stopService(stack.ingest!);
  stack.ingest = undefined;
  const sides: Side[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const side of round % 2 === 1 ? (["old", "new"] as const) : (["new", "old"] as const)) {
        const { service, port } = await stack.startIngest({}, [], join(dirs[side], "dist"));
        const base = `http://127.0.0.1:${port}`;
        try {
          await new Promise((r) => setTimeout(r, 2_000));
          const pid = service.child.pid!;
          const idle = rssMb(pid);
          const batch = await runLoad({
            url: `${base}/v1/batch`,
            bodies: batchBodies,
            headers,
            connections: 16,
            seconds: SECONDS,
            rate: BATCH_RATE,
          });
          const batchPeak = peakRssMb(pid);
          const single = await runLoad({
            url: `${base}/v1/identify`,
            bodies: identifyBodies,
            headers,
            connections: 16,
            seconds: SECONDS,
            rate: SINGLE_RATE,
          });
          const figures: Side = {
            round,
            side,
            idle_mb: Math.round(idle),
            batch_peak_mb: Math.round(batchPeak),
            peak_mb: Math.round(peakRssMb(pid)),
            non2xx: batch.non2xx + batch.errors + single.non2xx + single.errors,
          };
          sides.push(figures);
          process.stderr.write(`rss: round ${round} ${side}: ${JSON.stringify(figures)}\n`);
        } finally {
          await stopService(service);
        }
      }
    }
  } finally {
    await stack.stop();
  }
  const of = (round: number, side: "old" | "new") => sides.find((s) => s.round === round && s.side === side)!;
  const keys = ["idle_mb", "batch_peak_mb", "peak_mb"] as const;
  const each = Object.fromEntries(
    keys.map((k) => [k, Array.from({ length: rounds }, (_, i) => of(i + 1, "new")[k] / of(i + 1, "old")[k])]),
  );
  const n = (v: number) => v.toFixed(2);
  process.stdout.write(
    `ingest RSS at ${BATCH_RATE * BATCH} events/s of batches, then ${SINGLE_RATE} single requests/s, ${SECONDS} s each; ${commit} (old) against this tree (new)\n\n` +
      `| round | side | at rest | peak, batches | peak, after single requests | answers not 2xx |\n|---|---|---|---|---|---|\n` +
      sides.map((s) => `| ${s.round} | ${s.side} | ${s.idle_mb} MB | ${s.batch_peak_mb} MB | ${s.peak_mb} MB | ${s.non2xx} |`).join("\n") +
      `\n\n| new / ${commit} | each round | median |\n|---|---|---|\n` +
      keys.map((k) => `| ${k} | ${each[k]!.map(n).join(" / ")} | ${n(median(each[k]!))}x |`).join("\n") +
      "\n" +
      JSON.stringify({ commit, rounds, batch_rate: BATCH_RATE, single_rate: SINGLE_RATE, seconds: SECONDS, sides }) +
      "\n",
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
