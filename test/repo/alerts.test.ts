/**
 * The alerts, the scrape targets and the dashboard of deploy/k8s/monitoring, as the production
 * overlay renders them (kustomize), checked with the real promtool (Debian's prometheus 2.42,
 * test/support/tools.sh): `promtool check rules` on the rule groups, `promtool test rules` on
 * test/repo/alerts.test.yaml, which must hold a firing and a quiet case of every alert; a copy
 * with one threshold changed must fail those tests. Every runbook named has its section in
 * docs/RUNBOOKS.md; every metric the rules and the dashboard read is one the processes export
 * (or up, or the kubelet's volume statistics), and no series is split by workspace (the delivery's
 * are by destination id); the volume
 * rules select the PVC names the operators make from deploy/k8s/operators. The live run against the local stack is test/faults/node/alerts.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parse, stringify } from "yaml";
import { ingestMetrics } from "../../ingest/metrics";
import { sinkMetrics } from "../../sink/metrics";
import { deliverMetrics } from "../../sink/deliver/metrics";
import { findRoot, render, type Manifest } from "../support/kustomize";
import { alertRules, dashboardExprs, exprMetrics, promtool } from "../support/alerts";

const ROOT = findRoot(__dirname);
const production = render(ROOT, join(ROOT, "deploy", "k8s", "overlays", "production"));
const rule = production.find((m) => m.kind === "PrometheusRule");
const groups = (rule?.spec?.groups ?? []) as Manifest[];
const alerts = alertRules(groups);

/**
 * promtool's `test rules` on the test file, with `groups` as its rules.yaml; its exit code and
 * output. With `alert`, only the file's tests that check that alert (promtool evaluates every rule
 * at every step up to a test's last time: the whole file takes about 17 s).
 */
function runRuleTests(testGroups: Manifest[], alert?: string): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), "alerts-"));
  try {
    writeFileSync(join(dir, "rules.yaml"), stringify({ groups: testGroups }));
    const text = readFileSync(join(ROOT, "test", "repo", "alerts.test.yaml"), "utf8");
    const file = parse(text) as { tests: { alert_rule_test?: { alertname: string }[] }[] };
    if (alert !== undefined) file.tests = file.tests.filter((t) => (t.alert_rule_test ?? []).some((c) => c.alertname === alert));
    writeFileSync(join(dir, "alerts.test.yaml"), alert === undefined ? text : stringify(file));
    return promtool(["test", "rules", join(dir, "alerts.test.yaml")]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("the production overlay holds the PrometheusRule, a PodMonitor per process and the dashboard for Grafana's sidecar", () => {
  assert.ok(rule, "a PrometheusRule");
  assert.equal(
    production
      .filter((m) => m.kind === "PodMonitor")
      .map((m) => [m.spec.selector.matchLabels["app.kubernetes.io/component"], m.spec.podMetricsEndpoints[0].port])
      .sort(),
    [
      ["deliver", "http"],
      ["ingest", "metrics"],
      ["sink", "http"],
    ],
  );
  const dashboard = production.find((m) => m.kind === "ConfigMap" && m.metadata.labels?.grafana_dashboard === "1");
  assert.ok(dashboard, "a ConfigMap labelled grafana_dashboard");
  const json = JSON.parse(Object.values(dashboard!.data as Record<string, string>)[0]!) as { panels: unknown[] };
  assert.ok(json.panels.length >= 10, `${json.panels.length} panels`);
  assert.ok(alerts.length >= 9, `${alerts.length} alerts`);
});

test("promtool check rules accepts the rule groups", () => {
  const dir = mkdtempSync(join(tmpdir(), "alerts-"));
  try {
    writeFileSync(join(dir, "rules.yaml"), stringify({ groups }));
    const run = promtool(["check", "rules", join(dir, "rules.yaml")]);
    assert.is(run.status, 0, run.output);
    assert.match(run.output, new RegExp(`SUCCESS: ${alerts.length} rules found`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("promtool test rules: every alert has a firing case and a quiet case, and all pass", () => {
  const tests = parse(readFileSync(join(ROOT, "test", "repo", "alerts.test.yaml"), "utf8")) as {
    tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
  };
  const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
  for (const { alert } of alerts) {
    assert.ok(
      cases.some((c) => c.alertname === alert && (c.exp_alerts ?? []).length > 0),
      `${alert}: no case where it fires`,
    );
    assert.ok(
      cases.some((c) => c.alertname === alert && (c.exp_alerts ?? []).length === 0),
      `${alert}: no case where it stays quiet`,
    );
  }
  const run = runRuleTests(groups);
  assert.is(run.status, 0, run.output);
  assert.match(run.output, "SUCCESS");
});

test("a rule with its threshold changed fails the rule tests", () => {
  const changes: [alert: string, from: string, to: string][] = [
    ["SegmentSinkNotInserting", "> 60", "> 600"],
    ["SegmentIngestNotReady", "> 0.75", "> 1"],
    ["SegmentIngestNothingProduced", "> 3600", "> 3600000"],
    ["SegmentVolumeSpaceLow", "< 0.15", "< 0.1"],
    ["SegmentVolumeFillingUp", "24 * 3600", "3600"],
    ["SegmentDeliverBacklogOld", "> 3600", "> 4000"],
    ["SegmentDeliverDestinationFailing", "[10m] offset 10m", "[10m] offset 15m"],
    [
      "SegmentDeliverFailuresKept",
      '{job="segment-ingest-deliver",outcome="failed"} offset 10m',
      '{job="segment-ingest-deliver",outcome="failed"} offset 1m',
    ],
  ];
  for (const [alert, from, to] of changes) {
    const broken = structuredClone(groups);
    const changed = broken.flatMap((g) => g.rules as Manifest[]).find((r) => r.alert === alert)!;
    assert.ok(String(changed.expr).includes(from), `${alert}: ${from}`);
    changed.expr = String(changed.expr).replace(from, to);
    const run = runRuleTests(broken, alert);
    assert.is.not(run.status, 0, `${alert} with ${to}`);
    assert.match(run.output, alert);
  }
});

test("the volume rules select the PVCs the operators' manifests make, in their namespaces", () => {
  const operators = render(ROOT, join(ROOT, "deploy", "k8s", "operators"));
  const claims: [namespace: string, claim: string][] = [];
  // Strimzi: data-<JBOD volume id>-<cluster>-<pool>-<node> (a single persistent-claim: data-<cluster>-<pool>-<node>).
  for (const pool of operators.filter((m) => m.kind === "KafkaNodePool")) {
    const cluster = pool.metadata.labels["strimzi.io/cluster"] as string;
    for (const volume of pool.spec.storage.volumes as Manifest[]) {
      for (let node = 0; node < pool.spec.replicas; node++) {
        claims.push([pool.metadata.namespace, `data-${volume.id}-${cluster}-${pool.metadata.name}-${node}`]);
      }
    }
  }
  // Altinity: <volumeClaimTemplate>-<pod>, the pod chi-<installation>-<cluster>-<shard>-<replica>-0 (Keeper: chk-).
  for (const [kind, prefix] of [
    ["ClickHouseInstallation", "chi"],
    ["ClickHouseKeeperInstallation", "chk"],
  ] as const) {
    for (const installation of operators.filter((m) => m.kind === kind)) {
      const template = installation.spec.defaults.templates.volumeClaimTemplate as string;
      for (const cluster of installation.spec.configuration.clusters as Manifest[]) {
        const { shardsCount = 1, replicasCount = 1 } = cluster.layout;
        for (let shard = 0; shard < shardsCount; shard++) {
          for (let replica = 0; replica < replicasCount; replica++) {
            const pod = `${prefix}-${installation.metadata.name}-${cluster.name}-${shard}-${replica}-0`;
            claims.push([installation.metadata.namespace, `${template}-${pod}`]);
          }
        }
      }
    }
  }
  assert.is(claims.length, 3 + 4 + 3, claims.join(" "));
  for (const alert of alerts.filter((a) => a.alert.startsWith("SegmentVolume"))) {
    const selectors = [...alert.expr.matchAll(/kubelet_volume_stats_\w+\{([^}]*)\}/g)].map((m) => m[1]!);
    assert.ok(selectors.length >= 2, alert.alert);
    for (const selector of selectors) {
      const label = (name: string) => new RegExp(`^(?:${selector.match(new RegExp(`${name}=~"([^"]*)"`))![1]})$`);
      for (const [namespace, claim] of claims) {
        assert.ok(
          label("namespace").test(namespace) && label("persistentvolumeclaim").test(claim),
          `${alert.alert}: ${namespace}/${claim}`,
        );
      }
      assert.not.ok(label("persistentvolumeclaim").test("data-events-zookeeper-0"), alert.alert);
    }
  }
});

test("every runbook has its section in docs/RUNBOOKS.md", () => {
  const runbooks = readFileSync(join(ROOT, "docs", "RUNBOOKS.md"), "utf8");
  const anchors = new Set(
    [...runbooks.matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^\w\- ]/g, "")
        .replace(/ /g, "-"),
    ),
  );
  for (const { alert, annotations } of alerts) {
    const runbook = String(annotations.runbook ?? "");
    assert.is(runbook, `docs/RUNBOOKS.md#${alert.toLowerCase()}`, alert);
    assert.ok(anchors.has(alert.toLowerCase()), `docs/RUNBOOKS.md has no section ${alert}`);
  }
});

test("the rules and the dashboard read only metrics the processes export, none split by workspace", async () => {
  const exported = new Set<string>();
  for (const registry of [ingestMetrics().registry, sinkMetrics(["events"]).registry, deliverMetrics().registry]) {
    for (const metric of await registry.getMetricsAsJSON()) {
      const names = metric.type === ("histogram" as unknown) ? ["_bucket", "_sum", "_count"].map((s) => metric.name + s) : [metric.name];
      for (const name of names) exported.add(name);
      assert.not.ok(
        (metric.values as { labels: Record<string, unknown> }[]).some((v) =>
          Object.keys(v.labels).some((l) => /workspace|write_?key|user/i.test(l)),
        ),
        metric.name,
      );
    }
  }
  // Not the processes': Prometheus's own, and the kubelet's volume statistics (the storage group).
  for (const name of ["up", "kubelet_volume_stats_available_bytes", "kubelet_volume_stats_capacity_bytes"]) exported.add(name);
  const exprs = [...alerts.map((a) => a.expr), ...dashboardExprs(production)];
  assert.ok(exprs.length > 20, `${exprs.length} expressions`);
  for (const expr of exprs) {
    const metrics = exprMetrics(expr);
    assert.ok(metrics.length > 0, expr);
    for (const name of metrics) assert.ok(exported.has(name), `${name} (in ${expr.trim()}) is not exported`);
  }
});

test.run();
