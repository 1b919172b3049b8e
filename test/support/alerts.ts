/**
 * Reading the alert rules and the dashboard of deploy/k8s/monitoring, and the real promtool
 * (Debian's prometheus package, installed by test/support/tools.sh; env PROMTOOL names another).
 */
import { spawnSync } from "node:child_process";
import type { Manifest } from "./kustomize";

/** One alerting rule of a PrometheusRule's groups. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The alerting rules (not the recording ones) of a PrometheusRule's `spec.groups`. */
export function alertRules(groups: readonly Manifest[]): AlertRule[] {
  return groups.flatMap((g) => (g.rules as Manifest[]).filter((r) => typeof r.alert === "string")) as AlertRule[];
}

/** The PromQL of every panel target of every dashboard ConfigMap (label grafana_dashboard) in `manifests`. */
export function dashboardExprs(manifests: readonly Manifest[]): string[] {
  return manifests
    .filter((m) => m.kind === "ConfigMap" && m.metadata?.labels?.grafana_dashboard === "1")
    .flatMap((m) => Object.values(m.data as Record<string, string>))
    .flatMap((text) => (JSON.parse(text) as { panels: { targets?: { expr: string }[] }[] }).panels)
    .flatMap((p) => (p.targets ?? []).map((t) => t.expr));
}

const PROMQL_WORDS = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "and",
  "or",
  "unless",
  "offset",
  "bool",
  "inf",
  "nan",
]);

/**
 * The metric names a PromQL expression reads: identifiers that are not functions, keywords,
 * label names (inside braces or a by/on list), durations, strings or Grafana variables.
 */
export function exprMetrics(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "")
    .replace(/\$\w+/g, "");
  const names = [...bare.matchAll(/(?<![\w.])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()/g)].map((m) => m[1]!);
  return [...new Set(names.filter((n) => !PROMQL_WORDS.has(n.toLowerCase())))];
}

/** `promtool <args>`: its exit status and what it printed (stdout then stderr). */
export function promtool(args: string[]): { status: number | null; output: string } {
  // The whole test file takes 17 s on an idle machine, and over a minute on a busy one.
  const run = spawnSync(process.env.PROMTOOL ?? "/usr/bin/promtool", args, { encoding: "utf8", timeout: 300_000 });
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}
