/**
 * `npm run bench:live-viewer`: the ingest's memory while a live viewer that reads nothing stays
 * connected under load (ingest/live/routes.ts skips its items past 1 MiB unsent). Posts batches of
 * the bench corpus at BENCH_LIVE_RATE events/s (default 2,000) for BENCH_LIVE_SECONDS (default
 * 300) with a viewer of the workspace that never reads, and prints the ingest's RSS every 30 s,
 * then the items skipped. Needs the local stack (`npm run stack:start`); 127.0.0.1 only.
 */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { request, type IncomingMessage } from "node:http";
import { freePort, LiveStack } from "../support/harness";
import { corpus } from "./corpus";

const SECONDS = Number(process.env.BENCH_LIVE_SECONDS ?? 300);
const RATE = Number(process.env.BENCH_LIVE_RATE ?? 2_000);
const BATCH = 100;

async function main(): Promise<void> {
  const token = `bench-live-${randomUUID()}`;
  const stack = new LiveStack({
    ADMIN_TOKEN: token,
    INGEST_METRICS_PORT: String(await freePort()),
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_SECOND: "0",
  });
  await stack.start();
  const admin = `http://127.0.0.1:${stack.env.INGEST_METRICS_PORT}`;
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${stack.ingest!.child.pid}/status`, "utf8"))![1]) / 1024;
  try {
    const messages = corpus(1_000);
    const bodies = Array.from({ length: 10 }, (_, i) => messages.slice(i * BATCH, (i + 1) * BATCH));
    const before = rss();
    const req = request(`${admin}/live/events?workspaceId=ws-test`, { headers: { Authorization: `Bearer ${token}` } });
    req.end();
    const [response] = (await once(req, "response")) as [IncomingMessage];
    if (response.statusCode !== 200) throw new Error(`live view answered ${response.statusCode}`);
    response.pause(); // a viewer that never reads
    console.log(`paused viewer connected; ingest RSS ${before.toFixed(0)} MB; ${RATE} events/s for ${SECONDS} s`);
    const started = Date.now();
    let sent = 0;
    let peak = before;
    let nextReport = 30;
    while (Date.now() - started < SECONDS * 1000) {
      const due = ((Date.now() - started) / 1000) * RATE;
      if (sent < due) {
        const batch = bodies[(sent / BATCH) % bodies.length]!.map((m) => ({ ...m, messageId: randomUUID() }));
        const answer = await stack.post("/v1/batch", { batch });
        if (answer.status !== 200) throw new Error(`batch answered ${answer.status}`);
        sent += BATCH;
      } else await new Promise((resolve) => setTimeout(resolve, 5));
      peak = Math.max(peak, rss());
      if ((Date.now() - started) / 1000 >= nextReport) {
        console.log(`  ${nextReport} s: ${sent} events sent, ingest RSS ${rss().toFixed(0)} MB (peak ${peak.toFixed(0)} MB)`);
        nextReport += 30;
      }
    }
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    const dropped = Number(/^ingest_live_dropped_total (\d+)/m.exec(metrics)?.[1] ?? 0);
    console.log(
      `after ${SECONDS} s: ${sent} events, ingest RSS ${before.toFixed(0)} -> ${rss().toFixed(0)} MB (peak ${peak.toFixed(0)} MB); items skipped for the paused viewer ${dropped}`,
    );
    req.destroy();
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
