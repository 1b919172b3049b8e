/**
 * The real kubeconform (github.com/yannh/kubeconform), for the schema checks of deploy/k8s.
 * test/run.sh installs it from the Go module proxy into `.stack/kubeconform/<version>/` on its
 * first run; env KUBECONFORM names another binary.
 *
 * The schemas: kubeconform's default location (GitHub) is out of this machine's reach, so
 * test/run.sh takes them from PyPI's kubernetes-validate, which ships the Kubernetes API as JSON
 * Schemas, one file per kind and version (`deployment-apps-v1.json`, kubeconform's own naming),
 * with a strict variant that refuses unknown fields, for every Kubernetes release from 1.25 on.
 * It extracts the strict schemas of KUBERNETES_VERSIONS into
 * `.stack/kubernetes-json-schema/<package version>/v<kubernetes>-local-strict/`, their references
 * made relative to the file (env KUBECONFORM_SCHEMAS names another directory of that layout).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/** The kubeconform version test/run.sh installs (keep the two equal). */
export const KUBECONFORM_VERSION = "v0.8.0";
/** The kubernetes-validate release (PyPI) whose schemas test/run.sh installs (keep the two equal). */
export const SCHEMA_PACKAGE_VERSION = "1.37.0";
/**
 * The Kubernetes versions validated against, the oldest and the newest the package carries
 * (test/run.sh extracts these; keep the lists equal): a manifest must be valid on both.
 */
export const KUBERNETES_VERSIONS = ["1.25.0", "1.37.0"] as const;

/**
 * Kinds of the operators' CRDs (Prometheus Operator, Strimzi, Altinity) in deploy/k8s/monitoring
 * and deploy/k8s/operators. kubeconform skips them for now: their schemas are not installed yet
 * (issue 27: validate them against the operators' own CRDs).
 */
export const OPERATOR_KINDS = [
  "PrometheusRule",
  "PodMonitor",
  "Kafka",
  "KafkaNodePool",
  "KafkaTopic",
  "ClickHouseInstallation",
  "ClickHouseKeeperInstallation",
] as const;

/** One resource as kubeconform reports it (`-output json`). */
export interface Result {
  filename: string;
  kind: string;
  name: string;
  version: string;
  status: "statusValid" | "statusInvalid" | "statusError" | "statusSkipped" | "statusEmpty";
  msg: string;
}

/** kubeconform's report: every resource (`-verbose`) and the totals (`-summary`). */
export interface Report {
  resources: Result[];
  summary: { valid: number; invalid: number; errors: number; skipped: number };
}

const stack = (root: string) => process.env.STACK_DIR ?? join(root, ".stack");

/** Path of the kubeconform binary; throws, saying how to install it, when it is missing. */
export function kubeconformBinary(root: string): string {
  const path = process.env.KUBECONFORM ?? join(stack(root), "kubeconform", KUBECONFORM_VERSION, "kubeconform");
  if (!existsSync(path)) {
    throw new Error(
      `kubeconform is not installed at ${path}: run test/run.sh (npm test) once, or ` +
        `GOBIN=${dirname(path)} go install github.com/yannh/kubeconform/cmd/kubeconform@${KUBECONFORM_VERSION}`,
    );
  }
  return path;
}

/** The directory holding `v<kubernetes>-local-strict/` schema folders; throws when one is missing. */
export function schemaDirectory(root: string): string {
  const dir = process.env.KUBECONFORM_SCHEMAS ?? join(stack(root), "kubernetes-json-schema", SCHEMA_PACKAGE_VERSION);
  for (const version of KUBERNETES_VERSIONS) {
    if (!existsSync(join(dir, `v${version}-local-strict`, "_definitions.json"))) {
      throw new Error(`no Kubernetes ${version} schemas under ${dir}: run test/run.sh (npm test) once`);
    }
  }
  return dir;
}

/**
 * `kubeconform -strict -summary -verbose -output json` over `paths` (files or directories), against
 * the local schemas of Kubernetes `kubernetesVersion`. A kind without a schema is an error, not
 * skipped. Returns the report whether or not everything is valid; throws when kubeconform itself
 * fails to run or prints no report.
 */
export function kubeconform(root: string, paths: string[], kubernetesVersion: string): Report {
  const location = join(
    schemaDirectory(root),
    "{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}",
    "{{ .ResourceKind }}{{ .KindSuffix }}.json",
  );
  const args = [
    "-strict",
    "-summary",
    "-verbose",
    "-output",
    "json",
    "-kubernetes-version",
    kubernetesVersion,
    "-schema-location",
    location,
    "-skip",
    OPERATOR_KINDS.join(","),
  ];
  const run = spawnSync(kubeconformBinary(root), [...args, ...paths], { encoding: "utf8", timeout: 120_000 });
  if (run.error) throw run.error;
  try {
    const report = JSON.parse(run.stdout) as Report;
    report.resources ??= [];
    return report;
  } catch {
    throw new Error(`kubeconform exited ${run.status} without a report: ${run.stderr.trim() || run.stdout.trim()}`);
  }
}
