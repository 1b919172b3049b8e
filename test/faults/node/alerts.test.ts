/**
 * The alert rules of deploy/k8s/monitoring/prometheusrule.yaml in the real Prometheus (Debian's
 * 2.42, test/support/tools.sh) scraping this stack's ingest and sink every second, as the
 * PodMonitors would (same job labels), with the rules as shipped. ClickHouse stopped under
 * traffic makes SegmentSinkNotInserting pending then firing, starting it resolves it; a record
 * ClickHouse refuses makes SegmentDlqRecords fire. Prints the timeline (seconds from the fault).
 * `npm run test:alerts` (about 4 minutes; not part of `npm test`, whose promtool tests cover every
 * alert: test/repo/alerts.test.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parse, stringify } from "yaml";
import { adminPort, basic, freePort, LiveStack, sinkPort, waitFor } from "../../support/harness";
import { ROOT } from "../../support/paths";
import { server, sleep } from "./scenarios";
import { Traffic } from "./traffic";

/** An alert's state as Prometheus's /api/v1/alerts reports it ("inactive" when absent). */
type AlertState = "inactive" | "pending" | "firing";

const stack = new LiveStack({ SINK_BATCH_WAIT_MS: "300", SINK_RETRY_MIN_MS: "200", SINK_RETRY_MAX_MS: "2000" });
const alerts = suite("alerts in the real Prometheus");
let prometheus: ChildProcess | undefined;
let promUrl = "";
let dir = "";
const timeline: string[] = [];

async function state(alert: string, labels: Record<string, string> = {}): Promise<AlertState> {
  const body = (await (await fetch(`${promUrl}/api/v1/alerts`)).json()) as {
    data: { alerts: { labels: Record<string, string>; state: AlertState }[] };
  };
  const found = body.data.alerts.find((a) => a.labels.alertname === alert && Object.entries(labels).every(([k, v]) => a.labels[k] === v));
  return found?.state ?? "inactive";
}

/** Waits until `alert` is in `wanted`, noting the time since `since` in the timeline. */
async function reach(
  alert: string,
  wanted: AlertState,
  since: number,
  timeoutMs: number,
  labels: Record<string, string> = {},
): Promise<number> {
  await waitFor(`${alert} ${wanted}`, async () => ((await state(alert, labels)) === wanted ? true : undefined), timeoutMs);
  const seconds = Math.round((Date.now() - since) / 100) / 10;
  timeline.push(`${alert} ${wanted} at +${seconds} s`);
  return seconds;
}

alerts.before(async () => {
  await stack.start();
  dir = mkdtempSync(join(tmpdir(), "prometheus-"));
  const rule = parse(readFileSync(join(ROOT, "deploy", "k8s", "monitoring", "prometheusrule.yaml"), "utf8")) as {
    spec: { groups: unknown[] };
  };
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups: rule.spec.groups }));
  const target = (job: string, port: number) => ({ job_name: job, static_configs: [{ targets: [`127.0.0.1:${port}`] }] });
  writeFileSync(
    join(dir, "prometheus.yml"),
    stringify({
      global: { scrape_interval: "1s", evaluation_interval: "1s" },
      rule_files: [join(dir, "rules.yaml")],
      scrape_configs: [
        target("segment-ingest", await adminPort(stack.ingest!)),
        target("segment-ingest-sink", await sinkPort(stack.sink!)),
      ],
    }),
  );
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    process.env.PROMETHEUS ?? "/usr/bin/prometheus",
    [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: "ignore" },
  );
  await waitFor(
    "Prometheus ready",
    async () => ((await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.ok ? true : undefined),
    30_000,
  );
  await waitFor(
    "both targets up",
    async () => {
      const body = (await (await fetch(`${promUrl}/api/v1/query?query=up`)).json()) as { data: { result: { value: [number, string] }[] } };
      return body.data.result.length === 2 && body.data.result.every((r) => r.value[1] === "1") ? true : undefined;
    },
    30_000,
  );
});

alerts.after(async () => {
  prometheus?.kill("SIGTERM");
  await stack.stop();
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
  console.log(`  alert timeline:\n    ${timeline.join("\n    ")}`);
});

alerts("ClickHouse stopped under traffic: SegmentSinkNotInserting pending, firing; resolved once it is back", async () => {
  const traffic = new Traffic(`${stack.base}/v1/batch`, basic("test-key"), {
    userId: "alerts",
    batchSize: 10,
    workers: 2,
    pauseMs: 100,
    maxRequests: 20_000,
  });
  traffic.start();
  await sleep(3_000);
  assert.is(await state("SegmentSinkNotInserting"), "inactive", "quiet while the sink inserts");
  const stoppingAt = Date.now();
  await server("clickhouse", "stop");
  const stoppedAt = Date.now();
  timeline.push(`ClickHouse stopped at +0 s (the stop took ${((stoppedAt - stoppingAt) / 1000).toFixed(1)} s)`);
  try {
    const pending = await reach("SegmentSinkNotInserting", "pending", stoppedAt, 120_000);
    const firing = await reach("SegmentSinkNotInserting", "firing", stoppedAt, 120_000);
    // The sink's last insert was at most a flush (SINK_BATCH_WAIT_MS, 300 ms here, and the insert) before the stop began.
    const sinceStopping = pending + (stoppedAt - stoppingAt) / 1000;
    assert.ok(sinceStopping >= 59, `pending after 60 s without an insert, not ${sinceStopping.toFixed(1)} s after the stop began`);
    assert.ok(firing - pending >= 59, `firing after its 1 minute 'for', not ${firing - pending} s after pending`);
  } finally {
    await server("clickhouse", "start");
  }
  const startedAt = Date.now();
  timeline.push(`ClickHouse started at +${Math.round((startedAt - stoppedAt) / 1000)} s`);
  await reach("SegmentSinkNotInserting", "inactive", stoppedAt, 60_000);
  await traffic.stop();
  await traffic.drain(30_000);
  assert.ok(Date.now() - startedAt < 60_000, "resolved within a minute of ClickHouse's return");
});

alerts("a record ClickHouse refuses: SegmentDlqRecords fires (step insert)", async () => {
  assert.is(await state("SegmentDlqRecords"), "inactive");
  const producer = stack.kafka.producer();
  await producer.connect();
  const value = JSON.stringify({
    workspaceId: "ws-test",
    receivedAt: new Date().toISOString(),
    // valid RFC 3339 for the envelope guard; ClickHouse refuses the lowercase 't'
    message: { type: "track", event: "Poison", userId: "alerts", messageId: randomUUID(), timestamp: "2026-11-22t10:00:00z" },
  });
  const sentAt = Date.now();
  timeline.push("poison record produced at +0 s");
  await producer.send({ topic: stack.env.KAFKA_TOPIC!, acks: -1, messages: [{ key: "poison", value }] });
  await producer.disconnect();
  await reach("SegmentDlqRecords", "firing", sentAt, 60_000, { step: "insert" });
});

alerts.run();
