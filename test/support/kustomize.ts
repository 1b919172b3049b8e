/**
 * The real kustomize (sigs.k8s.io/kustomize/kustomize/v5), for the tests of deploy/k8s. test/run.sh
 * installs it from the Go module proxy into `.stack/kustomize/<version>/` on its first run; env
 * KUSTOMIZE names another binary.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseAllDocuments } from "yaml";
import { findRoot } from "./paths";

export { findRoot };

/** The version test/run.sh installs (keep the two equal). */
export const KUSTOMIZE_VERSION = "v5.5.0";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rendered objects of many kinds, checked by the tests, not by types
export type Manifest = Record<string, any>;

/** Path of the kustomize binary; throws, saying how to install it, when it is missing. */
export function kustomizeBinary(root: string): string {
  const path = process.env.KUSTOMIZE ?? join(process.env.STACK_DIR ?? join(root, ".stack"), "kustomize", KUSTOMIZE_VERSION, "kustomize");
  if (!existsSync(path)) {
    throw new Error(
      `kustomize is not installed at ${path}: run test/run.sh (npm test) once, or ` +
        `GOBIN=${dirname(path)} go install sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}`,
    );
  }
  return path;
}

/**
 * `kustomize build <dir>`: the YAML stream kustomize prints. Throws an Error carrying kustomize's
 * message when the build fails.
 */
export function build(root: string, dir: string): string {
  const run = spawnSync(kustomizeBinary(root), ["build", dir], { encoding: "utf8", timeout: 60_000 });
  if (run.error) throw run.error;
  if (run.status !== 0) throw new Error(`kustomize build ${dir} failed: ${run.stderr.trim()}`);
  return run.stdout;
}

/** The objects of a YAML stream such as kustomize prints, parsed as Kubernetes reads manifests (YAML 1.1). */
export function parseManifests(yaml: string): Manifest[] {
  const docs = parseAllDocuments(yaml, { version: "1.1" });
  return (Array.isArray(docs) ? docs : [docs]).map((d) => d.toJS() as Manifest).filter((m) => m !== null && m !== undefined);
}

/** `kustomize build <dir>`, parsed by parseManifests(); throws as build() does. */
export function render(root: string, dir: string): Manifest[] {
  return parseManifests(build(root, dir));
}

/**
 * The kustomizations to render: deploy/k8s/base, the other folders of deploy/k8s (monitoring,
 * operators), then every deploy/k8s/overlays/<name>, each group sorted.
 */
export function kustomizations(root: string): string[] {
  const k8s = join(root, "deploy", "k8s");
  const overlays = join(k8s, "overlays");
  const names = existsSync(overlays) ? readdirSync(overlays).sort() : [];
  const others = readdirSync(k8s)
    .filter((n) => n !== "base" && n !== "overlays")
    .sort();
  return [join(k8s, "base"), ...others.map((n) => join(k8s, n)), ...names.map((n) => join(overlays, n))].filter((d) =>
    existsSync(join(d, "kustomization.yaml")),
  );
}

/** A Kubernetes memory quantity in MiB (Mi, Gi, M, G or bytes); undefined when absent or not understood. */
export function mebibytes(quantity: unknown): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(String(quantity ?? ""));
  if (!m) return undefined;
  const bytes = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, K: 1e3, M: 1e6, G: 1e9, "": 1 }[m[2] ?? ""]!;
  return (Number(m[1]) * bytes) / 1024 ** 2;
}
