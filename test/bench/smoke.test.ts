/**
 * Smoke run of `npm run bench` (test/bench/main.ts) with 2-second phases against the real local
 * stack, so the benchmark cannot rot. It asserts that the run completes and reports every figure,
 * and that every event acknowledged during it became a row; it asserts no speed (that is the
 * benchmark's own output, read by people, never a pass/fail threshold).
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { runScript } from "./child";
import { FIGURE_KEYS } from "./figures";

test("npm run bench, 2 s phases: every figure reported, nothing acked missing", async () => {
  const { code, out } = await runScript("main.js", { BENCH_SECONDS: "2", BENCH_CONNECTIONS: "4" });
  assert.is(code, 0, out);
  const lines = out.trim().split("\n");
  const figures = JSON.parse(lines.at(-1)!) as Record<string, number>;
  assert.equal(Object.keys(figures), FIGURE_KEYS, "the last line has exactly the documented keys, in order");
  for (const key of FIGURE_KEYS) assert.ok(Number.isFinite(figures[key]) && figures[key]! > 0, `${key} = ${figures[key]}`);
  assert.equal(out.match(/acked rows missing: 0 \|/g)?.length, 2, "every acknowledged event became a row, in both batch phases");
  assert.match(out, /\| ingest \| [\d.]+ s \|/, "the CPU table names the ingest");
  console.log(`  ${lines.filter((l) => l.startsWith("| Batch") || l.startsWith("| End")).join("\n  ")}`);
});

test.run();
