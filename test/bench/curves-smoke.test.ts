/**
 * Smoke run of `npm run bench:curves` (test/bench/curves.ts) with 1-second points against the real
 * local stack, so the curves cannot rot: every point of the three curves is reported with its
 * figures, every acknowledged event became a row, and the requests with 1,000 and 100,000 write
 * keys were all accepted (each key a workspace of the keys file). It asserts no speed.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { jsonLines, runScript } from "./child";

test("npm run bench:curves, 1 s points: every point reported, nothing refused or missing", async () => {
  const { code, out } = await runScript("curves.js", { CURVE_SECONDS: "1" });
  assert.is(code, 0, out);
  const points = jsonLines(out);
  assert.equal(
    points.map((p) => `${p.curve}:${p.batch}:${p.messageBytes ?? "-"}:${p.keys}`),
    ["batch:1:-:1", "batch:10:-:1", "batch:100:-:1", "batch:500:-:1"]
      .concat(["message size:20:512:1", "message size:20:4096:1", "message size:20:16384:1"])
      .concat(["write keys:100:-:1", "write keys:100:-:1000", "write keys:100:-:100000"]),
  );
  for (const p of points) {
    const where = JSON.stringify(p);
    assert.ok((p.accepted_events_per_s as number) > 0, where);
    assert.is(p.non2xx, 0, where);
    assert.is(p.missing, 0, where);
    for (const k of ["ingest", "sink", "kafka", "clickhouse"]) assert.ok((p[`${k}_us_per_event`] as number) > 0, `${k}: ${where}`);
  }
  assert.match(out, /\| ingest \| [\d,]+ events\/s \|/, "the sizing table names the ingest's events/s per core");
});

test.run();
