/**
 * Smoke run of `npm run bench:queries` (test/bench/queries.ts) on 100,000 events, on the local
 * ClickHouse 18.16 and on current ClickHouse through chdb, so the benchmark cannot rot: it must
 * end well and time every query of docs/QUERIES.md on both engines and both layouts. It asserts no speed
 * (that is the benchmark's own output, read by people, never a pass/fail threshold).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ROOT } from "../support/paths";

const root = ROOT;
const ROWS = 100_000;

/**
 * The example query names of docs/QUERIES.md, read as the benchmark and test/live/analyst.test.ts
 * read them, but the tracking plan queries (`plan: ...`): their data is a plan's violations, which
 * the benchmark's rows do not have (test/live/plans.test.ts runs them on both engines).
 */
const names = [...readFileSync(join(root, "docs", "QUERIES.md"), "utf8").matchAll(/```sql\n([\s\S]*?)```/g)]
  .map((m) => m[1]!.split("\n")[0]!.replace(/^--\s*/, ""))
  .filter((name) => !name.startsWith("plan"));

type Timings = Record<string, { old_s: number; new_s: number }>;

test(`npm run bench:queries on ${ROWS} rows: every README query timed, old and new layout, both engines`, async () => {
  const child = spawn(process.execPath, [join(__dirname, "queries.js")], {
    env: { ...process.env, QUERY_BENCH_ROWS: String(ROWS) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  assert.is(code, 0, `${out}\n${err}`);
  const lines = out.trim().split("\n");
  const figures = JSON.parse(lines.at(-1)!) as { legacy: Timings; current: Timings; rows: number; order: string };
  assert.equal(Object.keys(figures).sort(), ["current", "legacy", "order", "rows"]);
  assert.is(figures.order, "arrival");
  assert.is(figures.rows, ROWS);
  assert.ok(names.length > 0, "docs/QUERIES.md has example queries");
  for (const engine of ["legacy", "current"] as const) {
    assert.equal(Object.keys(figures[engine]).sort(), [...names].sort(), `${engine}: one entry per query of docs/QUERIES.md`);
    for (const name of names) {
      const { old_s, new_s } = figures[engine][name]!;
      for (const s of [old_s, new_s]) assert.ok(Number.isFinite(s) && s >= 0, `${engine}, ${name}: ${old_s} / ${new_s}`);
    }
  }
  console.log(`  ${lines.filter((l) => l.startsWith("|")).join("\n  ")}`);
});

test.run();
