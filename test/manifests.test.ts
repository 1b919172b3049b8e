/**
 * The deployment files, checked offline:
 * - every Kubernetes manifest under deploy/k8s (resources and overlay patches) against the
 *   Kubernetes API schema (kubernetes-models' validators), plus a check for fields the schema
 *   does not know (a misspelt `readinesProbe` is otherwise silently ignored by the validator);
 * - the kustomizations: every path exists, every patch hits a resource, and what the real
 *   kustomize renders (test/kustomize.ts) validates too;
 * - the production rules (non-root, read-only root filesystem, probes, sink replicas versus
 *   partitions, grace periods, documented settings, the ConfigMap accepted by the typed config);
 *   test/k8s-boot.test.ts starts what the renders describe;
 * - deploy/compose.yaml against the Compose Specification's schema (test/fixtures) and its
 *   start order; deploy/Dockerfile and .dockerignore.
 * Every check also runs on a deliberately broken copy, which it must refuse.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import Ajv from "ajv";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseAllDocuments } from "yaml";
import { ingestConfig } from "../ingest/config";
import { setupConfig } from "../deploy/setup/config";
import { sinkConfig } from "../sink/config";
import { findRoot, render } from "./kustomize";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML of many kinds, checked by schemas, not by types
type Json = any;
/** A Kubernetes object as parsed from YAML. */
type Manifest = Record<string, Json>;

const ROOT = findRoot(__dirname);
const K8S = join(ROOT, "deploy", "k8s");
const BASE = join(K8S, "base");
const PRODUCTION = join(K8S, "overlays", "production");
const IMAGE = "ghcr.io/example/segment-ingest";

const rel = (path: string) => relative(ROOT, path);
const clone = <T>(value: T): T => structuredClone(value);
const isObject = (value: unknown): value is Record<string, Json> => typeof value === "object" && value !== null && !Array.isArray(value);
const id = (m: Manifest) => `${m.kind}/${m.metadata?.name}`;

// ---------------------------------------------------------------------------------------------
// YAML

/**
 * Every document of a YAML file, read as Kubernetes reads manifests (YAML 1.1: `yes` is a
 * boolean, `0440` is octal). Duplicate keys and any other error or warning throw.
 */
function readDocuments(path: string, version: "1.1" | "1.2" = "1.1"): Json[] {
  const docs = parseAllDocuments(readFileSync(path, "utf8"), { version, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const out: Json[] = [];
  for (const doc of list) {
    const problems = [...doc.errors, ...doc.warnings];
    if (problems.length > 0) throw new Error(`${rel(path)}: ${problems.map((p) => p.message).join("; ")}`);
    const value: Json = doc.toJS({ maxAliasCount: 100 });
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

function yamlFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...yamlFilesUnder(path));
    else if (/\.ya?ml$/.test(name)) out.push(path);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Kubernetes schema validation

interface ModelClass {
  prototype: { validate(this: unknown): void };
}

/** The kubernetes-models class of an apiVersion and kind, or undefined for an unknown pair. */
function modelClass(apiVersion: string, kind: string): ModelClass | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module path is computed from apiVersion
    const group = require(`kubernetes-models/${apiVersion}`) as Record<string, ModelClass | undefined>;
    return group[kind];
  } catch {
    return undefined;
  }
}

/**
 * Problems of one manifest against the API schema; empty when valid. `partial` (a strategic
 * merge patch) forgives missing required fields but nothing else.
 *
 * The validators accept unknown fields, as the API server does without strict field
 * validation; kubectl apply, however, refuses them. To find them, the manifest is handed to the
 * validator through proxies that record which properties it reads: in an object whose
 * properties the schema lists, a property it never reads is one the schema does not know.
 * (Objects the validator enumerates are maps, such as labels or data, and are skipped.)
 */
function schemaProblems(manifest: Manifest, partial = false): string[] {
  if (!isObject(manifest)) return ["not an object"];
  const { $patch: _directive, ...doc } = manifest;
  if (typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") return ["apiVersion and kind are required"];
  const model = modelClass(doc.apiVersion, doc.kind);
  if (!model) return [`unknown apiVersion/kind ${doc.apiVersion} ${doc.kind}`];
  const problems: string[] = [];
  if (!partial && !(typeof doc.metadata?.name === "string" && doc.metadata.name.length > 0)) problems.push("/metadata/name: required");

  interface Seen {
    target: Json;
    read: Set<string>;
    enumerated: boolean;
  }
  const seen = new Map<string, Seen>();
  const wrap = (value: Json, path: string): Json => {
    if (value === null || typeof value !== "object") return value;
    const record: Seen = { target: value, read: new Set(), enumerated: false };
    seen.set(path, record);
    return new Proxy(value, {
      get(target, key, receiver) {
        const inner = Reflect.get(target, key, receiver);
        if (typeof key !== "string") return inner;
        record.read.add(key);
        return Object.prototype.hasOwnProperty.call(target, key) ? wrap(inner, `${path}/${key}`) : inner;
      },
      has(target, key) {
        if (typeof key === "string") record.read.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        record.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
  };
  try {
    model.prototype.validate.call(wrap(doc, ""));
  } catch (error) {
    const errors = (error as { errors?: Array<{ instancePath: string; message?: string; keyword: string; params: unknown }> }).errors;
    if (!errors) throw error;
    for (const e of errors) {
      if (partial && e.keyword === "required") continue;
      problems.push(`${e.instancePath || "/"}: ${e.message ?? `${e.keyword} ${JSON.stringify(e.params)}`}`);
    }
  }
  for (const [path, record] of seen) {
    if (Array.isArray(record.target) || record.enumerated || record.read.size === 0) continue;
    for (const key of Object.keys(record.target)) {
      if (!record.read.has(key)) problems.push(`${path}/${key}: unknown field`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Kustomize: the real one renders (test/kustomize.ts); this reads the files it is given

interface Kustomization {
  resources?: string[];
  patches?: Array<{ path?: string; patch?: string; target?: unknown }>;
  [field: string]: unknown;
}

function readKustomization(dir: string): Kustomization {
  const path = join(dir, "kustomization.yaml");
  if (!existsSync(path)) throw new Error(`${rel(dir)}: no kustomization.yaml`);
  const [k] = readDocuments(path) as Kustomization[];
  if (k.kind !== "Kustomization") throw new Error(`${rel(path)}: kind must be Kustomization`);
  return k;
}

/** The pod specs of a workload (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod). */
function podSpecs(m: Manifest): Json[] {
  if (m.kind === "Pod") return m.spec ? [m.spec] : [];
  if (m.kind === "CronJob") return m.spec?.jobTemplate?.spec?.template?.spec ? [m.spec.jobTemplate.spec.template.spec] : [];
  return m.spec?.template?.spec ? [m.spec.template.spec] : [];
}

function podTemplates(m: Manifest): Json[] {
  if (m.kind === "CronJob") return m.spec?.jobTemplate?.spec?.template ? [m.spec.jobTemplate.spec.template] : [];
  return m.spec?.template ? [m.spec.template] : [];
}

const containersOf = (spec: Json): Json[] => [...(spec.initContainers ?? []), ...(spec.containers ?? [])];

function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const [withoutDigest, digest] = image.split("@");
  const slash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  return colon > slash
    ? { name: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1), digest }
    : { name: withoutDigest, digest };
}

/** `kustomize build dir` with the real kustomize; throws with its message when the build fails. */
const kustomize = (dir: string): Manifest[] => render(ROOT, dir);

/** Every kustomization directory under deploy/k8s. */
const kustomizationDirs = () =>
  yamlFilesUnder(K8S)
    .filter((p) => /kustomization\.ya?ml$/.test(p))
    .map(dirname);

/** Every patch file the kustomizations name (validated as partial objects). */
function patchFiles(): Set<string> {
  const out = new Set<string>();
  for (const dir of kustomizationDirs()) {
    for (const p of readKustomization(dir).patches ?? []) if (p.path) out.add(resolve(dir, p.path));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Production rules

/** The settings documented in docs/OPERATIONS.md's Settings table. */
function documentedSettings(): Set<string> {
  const readme = readFileSync(join(ROOT, "docs", "OPERATIONS.md"), "utf8");
  const start = readme.indexOf("\n## Settings");
  assert.ok(start >= 0, "docs/OPERATIONS.md has a Settings section");
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const names = new Set<string>();
  for (const line of section.split("\n")) {
    if (!line.startsWith("| `")) continue;
    for (const m of line.split("|")[1].matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(m[1]);
  }
  return names;
}

const DOCUMENTED = documentedSettings();

function cliCommands(): Set<string> {
  const source = readFileSync(join(ROOT, "deploy", "cli.ts"), "utf8");
  return new Set([...source.matchAll(/case\s+"([a-z][a-z-]*)"\s*:/g)].map((m) => m[1]));
}

const seconds = (ms: unknown, fallback: number) => (ms === undefined ? fallback : Number(ms)) / 1000;

function probePath(probe: Json): string | undefined {
  return probe?.httpGet?.path;
}

/**
 * Violations of the production rules in a set of built resources; empty when all hold.
 * `external` names Secrets that exist outside the manifests (production creates them).
 */
function ruleViolations(resources: Manifest[], external = new Set<string>()): string[] {
  const out: string[] = [];
  const find = (kind: string, name: string) => resources.find((r) => r.kind === kind && r.metadata?.name === name);
  const config = find("ConfigMap", "segment-ingest-config");
  if (!config) return ["ConfigMap/segment-ingest-config is missing"];
  const data: Record<string, string> = config.data ?? {};
  const commands = cliCommands();

  for (const key of Object.keys(data)) {
    if (!DOCUMENTED.has(key)) out.push(`ConfigMap/${config.metadata.name}: ${key} is not a setting documented in docs/OPERATIONS.md`);
  }
  if (!(Number(data.INGEST_HEADERS_TIMEOUT_MS ?? 10_000) > Number(data.INGEST_KEEPALIVE_TIMEOUT_MS ?? 5_000))) {
    out.push(`ConfigMap/${config.metadata.name}: INGEST_HEADERS_TIMEOUT_MS must exceed INGEST_KEEPALIVE_TIMEOUT_MS`);
  }
  // Each process's typed config accepts the ConfigMap (the Secrets add only credentials).
  for (const [what, parse] of [
    ["ingest", ingestConfig],
    ["sink", sinkConfig],
    ["setup", setupConfig],
  ] as const) {
    try {
      parse(data);
    } catch (error) {
      out.push(`ConfigMap/${config.metadata.name}: the ${what} refuses it: ${(error as Error).message}`);
    }
  }

  for (const r of resources) {
    for (const spec of podSpecs(r)) {
      const pod = spec.securityContext ?? {};
      for (const c of containersOf(spec)) {
        const where = `${id(r)} container ${c.name}`;
        const sc = c.securityContext ?? {};
        const runAsNonRoot = sc.runAsNonRoot ?? pod.runAsNonRoot;
        const runAsUser = sc.runAsUser ?? pod.runAsUser;
        if (runAsNonRoot !== true) out.push(`${where}: runAsNonRoot is not true`);
        if (runAsUser === undefined || runAsUser === 0) out.push(`${where}: runAsUser must be a non-zero uid`);
        if (sc.readOnlyRootFilesystem !== true) out.push(`${where}: readOnlyRootFilesystem is not true`);
        if (sc.allowPrivilegeEscalation !== false) out.push(`${where}: allowPrivilegeEscalation is not false`);
        if (!(sc.capabilities?.drop ?? []).includes("ALL")) out.push(`${where}: capabilities do not drop ALL`);
        if ((sc.seccompProfile ?? pod.seccompProfile)?.type !== "RuntimeDefault")
          out.push(`${where}: seccompProfile is not RuntimeDefault`);
        if (!c.resources?.limits?.memory || !c.resources?.requests?.cpu) out.push(`${where}: needs a memory limit and a cpu request`);
        if (!splitImage(c.image ?? "").tag && !splitImage(c.image ?? "").digest) out.push(`${where}: image ${c.image} has no tag`);
        if (splitImage(c.image ?? "").tag === "latest") out.push(`${where}: image tag latest`);
        const command = c.args?.[0];
        if (!commands.has(command)) out.push(`${where}: args[0] ${JSON.stringify(command)} is not a command of deploy/cli.ts`);
        for (const from of c.envFrom ?? []) {
          const ref = from.configMapRef?.name ?? from.secretRef?.name;
          const kind = from.configMapRef ? "ConfigMap" : "Secret";
          if (!find(kind, ref) && !(kind === "Secret" && external.has(ref))) out.push(`${where}: envFrom ${kind}/${ref} does not exist`);
        }
        for (const mount of c.volumeMounts ?? []) {
          if (!(spec.volumes ?? []).some((v: Json) => v.name === mount.name)) out.push(`${where}: volumeMount ${mount.name} has no volume`);
        }
      }
      for (const v of spec.volumes ?? []) {
        const name = v.secret?.secretName;
        if (name && !find("Secret", name) && !external.has(name)) out.push(`${id(r)}: volume ${v.name}: Secret/${name} does not exist`);
      }
    }
  }

  const ingest = find("Deployment", "segment-ingest");
  if (!ingest) out.push("Deployment/segment-ingest is missing");
  else {
    const spec = ingest.spec.template.spec;
    const c = spec.containers.find((x: Json) => x.name === "ingest");
    if (!c) out.push("Deployment/segment-ingest: no container ingest");
    else {
      if (c.args?.[0] !== "ingest") out.push("Deployment/segment-ingest: args must be [ingest]");
      if (probePath(c.readinessProbe) !== "/readyz") out.push("Deployment/segment-ingest: readinessProbe must GET /readyz");
      if (probePath(c.livenessProbe) !== "/healthz") out.push("Deployment/segment-ingest: livenessProbe must GET /healthz");
      if (!(c.ports ?? []).some((p: Json) => p.containerPort === Number(data.INGEST_PORT ?? 3000) && p.name === "http")) {
        out.push("Deployment/segment-ingest: port http must be INGEST_PORT");
      }
      const metricsPort = Number(data.INGEST_METRICS_PORT ?? 3002);
      if (!(c.ports ?? []).some((p: Json) => p.containerPort === metricsPort && p.name === "metrics")) {
        out.push("Deployment/segment-ingest: port metrics must be INGEST_METRICS_PORT");
      }
      if (String(ingest.spec.template.metadata?.annotations?.["prometheus.io/port"]) !== String(metricsPort)) {
        out.push("Deployment/segment-ingest: prometheus.io/port must be INGEST_METRICS_PORT, not the public port");
      }
      const preStop = c.lifecycle?.preStop;
      const sleep = Number(preStop?.sleep?.seconds ?? (preStop?.exec?.command?.[0] === "sleep" ? preStop.exec.command[1] : 0));
      if (!(sleep > 0)) out.push("Deployment/segment-ingest: preStop must sleep so endpoints are removed before SIGTERM");
      const grace = spec.terminationGracePeriodSeconds ?? 30;
      const needed =
        sleep +
        seconds(data.INGEST_DRAIN_DELAY_MS, 1_000) +
        seconds(data.INGEST_REQUEST_TIMEOUT_MS, 30_000) +
        seconds(data.PRODUCE_TIMEOUT_MS, 10_000);
      if (!(grace > needed)) {
        out.push(
          `Deployment/segment-ingest: terminationGracePeriodSeconds ${grace} must exceed preStop + INGEST_DRAIN_DELAY_MS + INGEST_REQUEST_TIMEOUT_MS + PRODUCE_TIMEOUT_MS (${needed} s)`,
        );
      }
    }
    const hpa = resources.find((r) => r.kind === "HorizontalPodAutoscaler" && r.spec?.scaleTargetRef?.name === "segment-ingest");
    if (!hpa) out.push("no HorizontalPodAutoscaler targets Deployment/segment-ingest");
    else if (ingest.spec.replicas !== undefined && ingest.spec.replicas < hpa.spec.minReplicas) {
      out.push("Deployment/segment-ingest: replicas below the HPA's minReplicas");
    }
  }

  const sink = find("Deployment", "segment-ingest-sink");
  if (!sink) out.push("Deployment/segment-ingest-sink is missing");
  else {
    const partitions = Number(data.KAFKA_TOPIC_PARTITIONS ?? 3);
    const replicas = sink.spec.replicas ?? 1;
    if (replicas > partitions)
      out.push(`Deployment/segment-ingest-sink: ${replicas} replicas exceed KAFKA_TOPIC_PARTITIONS (${partitions})`);
    const surge = sink.spec.strategy?.rollingUpdate?.maxSurge;
    if (surge !== undefined && surge !== 0 && replicas >= partitions)
      out.push("Deployment/segment-ingest-sink: a surge would exceed the partitions");
    const spec = sink.spec.template.spec;
    const grace = spec.terminationGracePeriodSeconds ?? 30;
    const needed = seconds(data.SINK_STOP_TIMEOUT_MS, 20_000) + seconds(data.SINK_BATCH_WAIT_MS, 1_000);
    if (!(grace > needed))
      out.push(
        `Deployment/segment-ingest-sink: terminationGracePeriodSeconds ${grace} must exceed SINK_STOP_TIMEOUT_MS + SINK_BATCH_WAIT_MS (${needed} s)`,
      );
    const c = spec.containers.find((x: Json) => x.name === "sink");
    if (!c || c.args?.[0] !== "sink") out.push("Deployment/segment-ingest-sink: container sink with args [sink] required");
    else {
      if (probePath(c.readinessProbe) !== "/readyz") out.push("Deployment/segment-ingest-sink: readinessProbe must GET /readyz");
      if (probePath(c.livenessProbe) !== "/healthz") out.push("Deployment/segment-ingest-sink: livenessProbe must GET /healthz");
      if (!(c.ports ?? []).some((p: Json) => p.containerPort === Number(data.SINK_HTTP_PORT ?? 3001)))
        out.push("Deployment/segment-ingest-sink: port must be SINK_HTTP_PORT");
    }
    if (resources.some((r) => r.kind === "HorizontalPodAutoscaler" && r.spec?.scaleTargetRef?.name === "segment-ingest-sink")) {
      out.push("Deployment/segment-ingest-sink must not be autoscaled past the partitions");
    }
  }

  const job = resources.find((r) => r.kind === "Job");
  if (!job || job.spec.template.spec.containers[0]?.args?.[0] !== "migrate") out.push("a Job running migrate is required");
  else if (!["OnFailure", "Never"].includes(job.spec.template.spec.restartPolicy))
    out.push(`${id(job)}: restartPolicy must be OnFailure or Never`);

  // Selectors of Services, PDBs and NetworkPolicies must select some pod template.
  const templates = resources.flatMap((r) => podTemplates(r).map((t) => t.metadata?.labels ?? {}));
  const selects = (selector: Record<string, string>) =>
    templates.some((labels) => Object.entries(selector).every(([k, v]) => labels[k] === v));
  for (const r of resources) {
    const selector =
      r.kind === "Service"
        ? r.spec?.selector
        : ["PodDisruptionBudget", "NetworkPolicy"].includes(r.kind)
          ? (r.spec?.podSelector?.matchLabels ?? r.spec?.selector?.matchLabels)
          : undefined;
    if (selector && !selects(selector)) out.push(`${id(r)}: selector ${JSON.stringify(selector)} matches no pod`);
  }
  for (const r of resources.filter((x) => x.kind === "Deployment")) {
    const labels = r.spec.template.metadata?.labels ?? {};
    if (!Object.entries(r.spec.selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v))
      out.push(`${id(r)}: selector does not match its template`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Compose

const composeSchema = (() => {
  const schema = JSON.parse(readFileSync(join(ROOT, "test", "fixtures", "compose-spec.json"), "utf8"));
  delete schema.$schema; // draft-07 under an https address, which Ajv does not know by that name
  return new Ajv({ strict: false, allErrors: true }).compile(schema);
})();

function composeProblems(compose: Json): string[] {
  if (composeSchema(compose)) return [];
  return (composeSchema.errors ?? []).map((e) => `${e.instancePath || "/"}: ${e.message} ${JSON.stringify(e.params)}`);
}

/** Violations of the start order and of the image's use in the compose file. */
function composeRuleViolations(compose: Json): string[] {
  const out: string[] = [];
  const services: Record<string, Json> = compose.services ?? {};
  const condition = (from: string, to: string) => services[from]?.depends_on?.[to]?.condition;
  for (const [name, image] of [
    ["kafka", "apache/kafka:3.9.1"],
    ["clickhouse", "clickhouse/clickhouse-server:24.8"],
  ]) {
    if (services[name]?.image !== image) out.push(`${name}: image must be ${image}`);
    if (!services[name]?.healthcheck?.test) out.push(`${name}: needs a healthcheck`);
    if (condition("migrate", name) !== "service_healthy") out.push(`migrate must wait for ${name} to be healthy`);
  }
  for (const name of ["ingest", "sink"]) {
    if (condition(name, "migrate") !== "service_completed_successfully") out.push(`${name} must wait for migrate to complete successfully`);
  }
  const commands = cliCommands();
  for (const name of ["migrate", "ingest", "sink"]) {
    const s = services[name];
    if (!s) {
      out.push(`service ${name} is missing`);
      continue;
    }
    const build = typeof s.build === "string" ? { context: s.build } : (s.build ?? {});
    const context = resolve(ROOT, "deploy", build.context ?? ".");
    if (context !== ROOT) out.push(`${name}: build context must be the repository root`);
    if (
      !existsSync(resolve(context, build.dockerfile ?? "Dockerfile")) ||
      resolve(context, build.dockerfile ?? "") !== join(ROOT, "deploy", "Dockerfile")
    ) {
      out.push(`${name}: dockerfile must be deploy/Dockerfile`);
    }
    const command = Array.isArray(s.command) ? s.command[0] : String(s.command ?? "").split(" ")[0];
    if (command !== name || !commands.has(command)) out.push(`${name}: command must be [${name}], a command of deploy/cli.ts`);
    for (const key of Object.keys(s.environment ?? {})) if (!DOCUMENTED.has(key)) out.push(`${name}: ${key} is not a documented setting`);
  }
  if (!String(services.ingest?.ports ?? "").includes("3000:3000")) out.push("ingest must publish 3000:3000");
  if (!String(services.clickhouse?.ports ?? "").includes("8123")) out.push("clickhouse must publish 8123");
  if (!/PLAINTEXT:\/\/kafka:9092/.test(services.kafka?.environment?.KAFKA_ADVERTISED_LISTENERS ?? ""))
    out.push("kafka must advertise kafka:9092");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Dockerfile

function dockerfileViolations(text: string, ignore: string): string[] {
  const out: string[] = [];
  const lines = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const args = new Map<string, string>();
  for (const l of lines) {
    const m = /^ARG\s+(\w+)=(\S+)/.exec(l);
    if (m) args.set(m[1], m[2]);
  }
  const stages: string[][] = [];
  for (const l of lines) {
    if (/^FROM\s/i.test(l)) stages.push([]);
    stages[stages.length - 1]?.push(l);
  }
  if (stages.length < 2) out.push("must have a build stage and a runtime stage");
  for (const stage of stages) {
    const from = stage[0].split(/\s+/)[1].replace(/^\$\{(\w+)\}$/, (_, n: string) => args.get(n) ?? "");
    if (!/^node:(22|24)[.\d]*-[a-z0-9.-]+$/.test(from) && !stages.some((s) => s[0].includes(` AS ${from}`))) {
      out.push(`FROM ${from}: must be a pinned node 22 or 24 image`);
    }
  }
  const build = stages[0] ?? [];
  const runtime = stages[stages.length - 1] ?? [];
  if (!build.some((l) => /npm ci(?!.*--omit=dev)/.test(l))) out.push("the build stage must npm ci with devDependencies");
  if (!build.some((l) => /npm run build/.test(l))) out.push("the build stage must npm run build");
  if (!runtime.some((l) => /npm ci .*--omit=dev/.test(l))) out.push("the runtime stage must npm ci --omit=dev");
  if (!runtime.some((l) => /COPY --from=\S+ \/app\/dist/.test(l))) out.push("the runtime stage must copy dist/ from the build");
  if (!runtime.some((l) => /NODE_ENV=production/.test(l))) out.push("the runtime stage must set NODE_ENV=production");
  const user = [...runtime].reverse().find((l) => /^USER\s/.test(l));
  const uid = user?.split(/\s+/)[1].split(":")[0];
  if (uid !== "10001") out.push(`the runtime stage must run as uid 10001 (the manifests' runAsUser), not ${uid ?? "root"}`);
  if (!runtime.includes('ENTRYPOINT ["node", "dist/deploy/cli.js"]')) out.push('ENTRYPOINT must be ["node", "dist/deploy/cli.js"]');
  if (!runtime.includes('CMD ["ingest"]')) out.push('CMD must be ["ingest"]');
  const ignored = new Set(
    ignore
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#")),
  );
  for (const path of ["node_modules", "dist", ".stack", ".git"]) if (!ignored.has(path)) out.push(`.dockerignore must exclude ${path}`);
  for (const l of build.filter((x) => /^COPY\s/.test(x) && !x.includes("--from"))) {
    const sources = l.split(/\s+/).slice(1, -1);
    for (const s of sources) {
      if (!existsSync(join(ROOT, s))) out.push(`COPY ${s}: not in the repository`);
      if (ignored.has(s)) out.push(`COPY ${s}: excluded by .dockerignore`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tests

const show = (line: string) => console.log(`  ${line}`);

test("every manifest under deploy/k8s validates against the Kubernetes API schema", () => {
  const patches = patchFiles();
  const failures: string[] = [];
  let count = 0;
  console.log("\nKubernetes manifests (API schema, unknown fields):");
  for (const path of yamlFilesUnder(K8S)) {
    if (/kustomization\.ya?ml$/.test(path)) continue;
    const partial = patches.has(path);
    for (const doc of readDocuments(path)) {
      count++;
      const problems = schemaProblems(doc, partial);
      const label = `${rel(path).replace("deploy/k8s/", "")}  ${id(doc)}${partial ? (doc.$patch ? " (delete patch)" : " (patch)") : ""}`;
      show(`${problems.length === 0 ? "OK  " : "FAIL"} ${label}`);
      for (const p of problems) failures.push(`${label}: ${p}`);
    }
  }
  assert.ok(count >= 14, `only ${count} manifests found`);
  assert.equal(failures, []);
});

test("the schema check refuses broken manifests", () => {
  const [deployment] = readDocuments(join(BASE, "ingest-deployment.yaml"));
  assert.equal(schemaProblems(deployment), [], "the original is valid");
  const broken: Array<[string, (d: Manifest) => void, RegExp]> = [
    [
      "containerPort as a string",
      (d) => (d.spec.template.spec.containers[0].ports[0].containerPort = "3000"),
      /containerPort: must be integer/,
    ],
    [
      "a misspelt field",
      (d) => (d.spec.template.spec.containers[0].readinesProbe = d.spec.template.spec.containers[0].readinessProbe),
      /readinesProbe: unknown field/,
    ],
    ["no selector", (d) => delete d.spec.selector, /must have required property '?selector'?/],
    ["replicas as a string", (d) => (d.spec.replicas = "2"), /replicas: must be integer/],
    [
      "a bad quantity",
      (d) => (d.spec.template.spec.containers[0].resources.limits.memory = "512 MB"),
      /memory: must match format "quantity"/,
    ],
    ["an unknown kind", (d) => (d.kind = "Deploymnet"), /unknown apiVersion\/kind/],
  ];
  for (const [what, mutate, expected] of broken) {
    const copy = clone(deployment);
    mutate(copy);
    const problems = schemaProblems(copy);
    show(`refused as expected (${what}): ${problems.join("; ")}`);
    assert.ok(
      problems.some((p) => expected.test(p)),
      `${what}: ${JSON.stringify(problems)}`,
    );
  }
  // A patch may leave out required fields, but not misspell them.
  assert.equal(schemaProblems({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" }, spec: { replicas: 3 } }, true), []);
  assert.ok(schemaProblems({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" }, spec: { replica: 3 } }, true).length > 0);
});

test("kustomizations: every path exists and every patch targets a resource", () => {
  const dirs = kustomizationDirs();
  assert.ok(dirs.includes(BASE) && dirs.includes(PRODUCTION), "base and overlays/production");
  console.log("\nKustomizations:");
  for (const dir of dirs) {
    const k = readKustomization(dir);
    for (const entry of [...(k.resources ?? []), ...(k.patches ?? []).map((p) => p.path ?? "")]) {
      assert.ok(existsSync(resolve(dir, entry)), `${rel(dir)}: ${entry} does not exist`);
    }
    const built = kustomize(dir); // kustomize refuses a patch without a target
    show(`OK   ${rel(dir)}: ${(k.resources ?? []).length} resources, ${(k.patches ?? []).length} patches -> ${built.length} objects`);
  }
  assert.not.ok(readKustomization(BASE).namespace, "the base sets no namespace");

  // A patch of a resource the base lacks, and a missing resource file, are refused.
  const overlay = readKustomization(PRODUCTION);
  const orphan = { ...overlay, patches: [{ path: "orphan.yaml" }] };
  assert.throws(
    () => buildWith(PRODUCTION, orphan, { "orphan.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nope\n" }),
    /no resource matches strategic merge patch "Deployment.v1.apps\/nope/,
  );
  assert.throws(() => buildWith(PRODUCTION, { ...overlay, resources: ["../../bse"] }, {}), /no such file or directory/);
  show("refused as expected: a patch of Deployment/nope, a resource ../../bse");
});

test("the production overlay builds, and what it builds validates", () => {
  const built = kustomize(PRODUCTION);
  const failures: string[] = [];
  console.log("\nProduction overlay, rendered by kustomize (API schema, unknown fields):");
  for (const r of built) {
    const problems = schemaProblems(r);
    show(`${problems.length === 0 ? "OK  " : "FAIL"} ${id(r)}${r.metadata.namespace ? ` (namespace ${r.metadata.namespace})` : ""}`);
    for (const p of problems) failures.push(`${id(r)}: ${p}`);
  }
  assert.equal(failures, []);
  const get = (kind: string, name: string) => built.find((r) => r.kind === kind && r.metadata.name === name)!;
  for (const r of built) if (r.kind !== "Namespace") assert.is(r.metadata.namespace, "segment-ingest", id(r));
  for (const r of built)
    for (const spec of podSpecs(r))
      for (const c of containersOf(spec)) assert.is(c.image, "registry.example.com/segment-ingest:0.1.0", id(r));
  assert.not.ok(
    built.some((r) => r.kind === "Secret"),
    "production creates its Secrets out of band",
  );
  assert.is(get("Deployment", "segment-ingest").spec.replicas, 3);
  assert.is(get("Deployment", "segment-ingest").spec.template.spec.containers[0].resources.limits.cpu, "2");
  assert.is(
    get("Deployment", "segment-ingest").spec.template.spec.containers[0].readinessProbe.httpGet.path,
    "/readyz",
    "merged, not replaced",
  );
  assert.is(get("HorizontalPodAutoscaler", "segment-ingest").spec.maxReplicas, 20);
  assert.is(get("HorizontalPodAutoscaler", "segment-ingest").spec.metrics[0].resource.target.averageUtilization, 70);
  const data = get("ConfigMap", "segment-ingest-config").data;
  assert.is(data.KAFKA_BROKERS, "events-kafka-bootstrap.kafka.svc:9092");
  assert.is(data.SINK_STOP_TIMEOUT_MS, "20000", "base keys kept");
  assert.is(get("Deployment", "segment-ingest").metadata.labels["app.kubernetes.io/part-of"], "segment-ingest");
  // The base keeps the placeholder image and no namespace.
  for (const r of kustomize(BASE)) {
    assert.is(r.metadata.namespace, undefined, id(r));
    for (const spec of podSpecs(r)) for (const c of containersOf(spec)) assert.ok(c.image.startsWith(`${IMAGE}:`), id(r));
  }
});

test("production rules hold in the base and in the production overlay", () => {
  const base = kustomize(BASE);
  const production = kustomize(PRODUCTION);
  const external = new Set(["segment-ingest-write-keys", "segment-ingest-clickhouse"]);
  assert.equal(ruleViolations(base), [], "base");
  assert.equal(ruleViolations(production, external), [], "production");
  console.log("\nProduction rules:");
  show("OK   every container: runAsNonRoot, uid 10001, readOnlyRootFilesystem, no privilege escalation, drop ALL, RuntimeDefault, limits");
  const ingest = production.find((r) => r.metadata.name === "segment-ingest" && r.kind === "Deployment")!;
  const sink = production.find((r) => r.metadata.name === "segment-ingest-sink")!;
  const data = production.find((r) => r.kind === "ConfigMap")!.data;
  show(
    `OK   ingest: readiness ${ingest.spec.template.spec.containers[0].readinessProbe.httpGet.path}, liveness ${ingest.spec.template.spec.containers[0].livenessProbe.httpGet.path}, grace ${ingest.spec.template.spec.terminationGracePeriodSeconds} s`,
  );
  show(
    `OK   sink: ${sink.spec.replicas} replicas <= ${data.KAFKA_TOPIC_PARTITIONS} partitions, grace ${sink.spec.template.spec.terminationGracePeriodSeconds} s > ${Number(data.SINK_STOP_TIMEOUT_MS) / 1000} + ${Number(data.SINK_BATCH_WAIT_MS) / 1000} s`,
  );
  show(`OK   ConfigMap keys are documented settings (${Object.keys(data).length} keys)`);

  // Broken copies: each must be reported.
  const broken: Array<[string, (rs: Manifest[]) => void, RegExp]> = [
    [
      "root filesystem writable",
      (rs) => (deploymentOf(rs, "segment-ingest").spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem = false),
      /readOnlyRootFilesystem/,
    ],
    [
      "runs as root",
      (rs) => {
        const spec = deploymentOf(rs, "segment-ingest-sink").spec.template.spec;
        spec.securityContext.runAsUser = 0;
        delete spec.containers[0].securityContext.runAsUser;
      },
      /non-zero uid/,
    ],
    [
      "no runAsNonRoot",
      (rs) => {
        const spec = deploymentOf(rs, "segment-ingest").spec.template.spec;
        delete spec.securityContext.runAsNonRoot;
        delete spec.containers[0].securityContext.runAsNonRoot;
      },
      /runAsNonRoot/,
    ],
    [
      "readiness on /healthz",
      (rs) => (deploymentOf(rs, "segment-ingest").spec.template.spec.containers[0].readinessProbe.httpGet.path = "/healthz"),
      /readinessProbe must GET \/readyz/,
    ],
    [
      "no liveness probe",
      (rs) => delete deploymentOf(rs, "segment-ingest").spec.template.spec.containers[0].livenessProbe,
      /livenessProbe must GET \/healthz/,
    ],
    ["more sinks than partitions", (rs) => (deploymentOf(rs, "segment-ingest-sink").spec.replicas = 4), /exceed KAFKA_TOPIC_PARTITIONS/],
    [
      "short ingest grace period",
      (rs) => (deploymentOf(rs, "segment-ingest").spec.template.spec.terminationGracePeriodSeconds = 30),
      /must exceed preStop \+ INGEST_DRAIN_DELAY_MS/,
    ],
    [
      "short sink grace period",
      (rs) => (deploymentOf(rs, "segment-ingest-sink").spec.template.spec.terminationGracePeriodSeconds = 21),
      /must exceed SINK_STOP_TIMEOUT_MS/,
    ],
    [
      "headers timeout below keep-alive",
      (rs) => (rs.find((r) => r.kind === "ConfigMap")!.data.INGEST_KEEPALIVE_TIMEOUT_MS = "65000"),
      /INGEST_HEADERS_TIMEOUT_MS must exceed/,
    ],
    [
      "headers timeout above the request timeout (Node refuses to create the server)",
      (rs) => (rs.find((r) => r.kind === "ConfigMap")!.data.INGEST_HEADERS_TIMEOUT_MS = "66000"),
      /the ingest refuses it: INGEST_HEADERS_TIMEOUT_MS \(66000\) is above INGEST_REQUEST_TIMEOUT_MS \(30000\)/,
    ],
    [
      "a value the typed config refuses",
      (rs) => (rs.find((r) => r.kind === "ConfigMap")!.data.SINK_BATCH_WAIT_MS = "1s"),
      /the sink refuses it: .*batchWaitMs/,
    ],
    [
      "undocumented setting",
      (rs) => (rs.find((r) => r.kind === "ConfigMap")!.data.KAFKA_BROKER = "x:9092"),
      /KAFKA_BROKER is not a setting documented/,
    ],
    [
      "unknown command",
      (rs) => (deploymentOf(rs, "segment-ingest-sink").spec.template.spec.containers[0].args = ["consume"]),
      /not a command of deploy\/cli.ts/,
    ],
    [
      "missing Secret",
      (rs) =>
        rs.splice(
          rs.findIndex((r) => r.kind === "Secret" && r.metadata.name === "segment-ingest-clickhouse"),
          1,
        ),
      /Secret\/segment-ingest-clickhouse does not exist/,
    ],
    [
      "selector matches nothing",
      (rs) => (rs.find((r) => r.kind === "PodDisruptionBudget")!.spec.selector.matchLabels["app.kubernetes.io/component"] = "ingester"),
      /matches no pod/,
    ],
  ];
  for (const [what, mutate, expected] of broken) {
    const copy = clone(base);
    mutate(copy);
    const violations = ruleViolations(copy);
    show(`refused as expected (${what}): ${violations.join("; ")}`);
    assert.ok(
      violations.some((v) => expected.test(v)),
      `${what}: ${JSON.stringify(violations)}`,
    );
  }
});

test("deploy/compose.yaml validates against the Compose Specification and starts in order", () => {
  const path = join(ROOT, "deploy", "compose.yaml");
  const [compose] = readDocuments(path, "1.2");
  const problems = composeProblems(compose);
  console.log("\nCompose (compose-spec schema, start order):");
  for (const [name, s] of Object.entries(compose.services as Record<string, Json>)) {
    const after = Object.entries(s.depends_on ?? {}).map(([dep, d]) => `${dep} ${(d as Json).condition}`);
    show(
      `${problems.length === 0 ? "OK  " : "FAIL"} service ${name} (${s.image}${s.build ? ", built from deploy/Dockerfile" : ""})${after.length ? ` after ${after.join(", ")}` : ""}`,
    );
  }
  assert.equal(problems, []);
  assert.equal(composeRuleViolations(compose), []);
  // Nothing published beyond this machine, and no usable password shipped in the file.
  for (const [name, s] of Object.entries(compose.services as Record<string, Json>)) {
    for (const port of (s.ports ?? []) as string[])
      assert.ok(String(port).startsWith("127.0.0.1:"), `${name} publishes ${port} beyond 127.0.0.1`);
  }
  const passwords = [compose["x-app-environment"]?.CLICKHOUSE_PASSWORD, compose.services.clickhouse.environment.CLICKHOUSE_PASSWORD];
  for (const password of passwords)
    assert.match(String(password), /^\$\{CLICKHOUSE_PASSWORD:\?/, "the password must come from the environment");

  const broken: Array<[string, (c: Json) => void, (c: Json) => string[], RegExp]> = [
    [
      "an unknown condition",
      (c) => (c.services.ingest.depends_on.migrate.condition = "service_done"),
      composeProblems,
      /must be equal to one of the allowed values/,
    ],
    ["a misspelt key", (c) => (c.services.kafka.healthcheck.intervall = "10s"), composeProblems, /must NOT have additional properties/],
    ["ports as a map", (c) => (c.services.ingest.ports = { "3000": 3000 }), composeProblems, /must be array/],
    [
      "ingest before migrate",
      (c) => (c.services.ingest.depends_on.migrate.condition = "service_started"),
      composeRuleViolations,
      /ingest must wait for migrate/,
    ],
    ["no kafka healthcheck", (c) => delete c.services.kafka.healthcheck, composeRuleViolations, /kafka: needs a healthcheck/],
    ["wrong build context", (c) => (c.services.sink.build.context = "."), composeRuleViolations, /build context/],
  ];
  for (const [what, mutate, check, expected] of broken) {
    const copy = clone(compose);
    mutate(copy);
    const found = check(copy);
    show(`refused as expected (${what}): ${found.slice(0, 3).join("; ")}`);
    assert.ok(
      found.some((p) => expected.test(p)),
      `${what}: ${JSON.stringify(found)}`,
    );
  }
});

test("deploy/Dockerfile: two stages, production dependencies, uid 10001, the CLI entrypoint", () => {
  const dockerfile = readFileSync(join(ROOT, "deploy", "Dockerfile"), "utf8");
  const ignore = readFileSync(join(ROOT, ".dockerignore"), "utf8");
  assert.equal(dockerfileViolations(dockerfile, ignore), []);
  console.log("\nDockerfile:");
  show("OK   pinned node image, npm ci + build, npm ci --omit=dev, dist/, USER 10001, ENTRYPOINT node dist/deploy/cli.js, CMD ingest");
  const cases: Array<[string, string, string, RegExp]> = [
    ["runs as root", dockerfile.replace("USER 10001:10001", "USER root"), ignore, /uid 10001/],
    ["unpinned base", dockerfile.replace(/ARG NODE_IMAGE=\S+/, "ARG NODE_IMAGE=node:latest"), ignore, /pinned node/],
    ["dev dependencies shipped", dockerfile.replace("npm ci --omit=dev", "npm ci"), ignore, /--omit=dev/],
    ["node_modules sent", dockerfile, ignore.replace(/^node_modules$/m, ""), /exclude node_modules/],
  ];
  for (const [what, text, ign, expected] of cases) {
    const violations = dockerfileViolations(text, ign);
    show(`refused as expected (${what}): ${violations.join("; ")}`);
    assert.ok(
      violations.some((v) => expected.test(v)),
      `${what}: ${JSON.stringify(violations)}`,
    );
  }
});

// ---------------------------------------------------------------------------------------------

function deploymentOf(resources: Manifest[], name: string): Manifest {
  const found = resources.find((r) => r.kind === "Deployment" && r.metadata.name === name);
  if (!found) throw new Error(`no Deployment/${name}`);
  return found;
}

/**
 * Builds `dir` with another kustomization and extra files, in a scratch copy of deploy/k8s (so
 * that relative paths such as ../../base still resolve).
 */
function buildWith(dir: string, kustomization: Kustomization, files: Record<string, string>): Manifest[] {
  const scratch = mkdtempSync(join(tmpdir(), "manifests-"));
  try {
    cpSync(K8S, join(scratch, "k8s"), { recursive: true });
    const target = join(scratch, "k8s", relative(K8S, dir));
    writeFileSync(join(target, "kustomization.yaml"), JSON.stringify(kustomization));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(target, name), text);
    return kustomize(target);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

test.run();
