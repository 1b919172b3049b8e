/**
 * Every kustomization under deploy/k8s (the base and each overlay), rendered by the real
 * kustomize and booted here: each Job's and each Deployment's containers run the image's
 * entrypoint (deploy/Dockerfile: ENTRYPOINT, CMD, ENV, WORKDIR) with exactly the environment the
 * render gives them - the image's ENV, then envFrom, then env - and their volumes materialised
 * in a scratch directory (a setting holding a path below a mountPath points there instead). Only
 * these are changed, and each run prints which:
 * - addresses: KAFKA_BROKERS and CLICKHOUSE_URL point at the local stack, listen hosts at
 *   127.0.0.1, and every container port (with the *_PORT setting holding it) at a free local
 *   port; CLICKHOUSE_CLUSTER is dropped, the local ClickHouse being one server;
 * - names: the topics, the consumer groups (the sink's, the delivery's prefix) and the database
 *   are this run's own;
 * - Secrets: their values are local test values (TEST_SECRETS), never the render's.
 * A Job must exit 0 (the Jobs run first: the Deployments need their topics and tables); each
 * Deployment container must answer its readiness and liveness paths with 200. Then one event
 * posted to each ingest lands in ClickHouse; a destination added with the CLI as the delivery
 * container would run it (its entrypoint and environment, DESTINATIONS_SECRET_KEY from its Secret)
 * receives, through the booted delivery process, a later event signed with its secret, and every
 * container stops on SIGTERM with exit 0
 * within its terminationGracePeriodSeconds. Each ingest is also loaded with batches of refused items: one
 * workspace's are held to the rendered rate limit, and those of many workspaces together must leave
 * it alive and under its container's memory limit with the rendered memory settings.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, createHmac, randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createClient } from "@clickhouse/client";
import autocannon from "autocannon";
import { Kafka, logLevel } from "kafkajs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { basic, freePort } from "../support/harness";
import { findRoot, kustomizations, mebibytes, render, type Manifest } from "../support/kustomize";
import { BUILD } from "../support/paths";

const ROOT = findRoot(__dirname);
/** The compiled tree these tests run from (dist/ or another outDir): the image's /app/dist. */
const LOCAL_KAFKA = process.env.KAFKA_BROKERS ?? "127.0.0.1:9092";
const LOCAL_CLICKHOUSE = process.env.CLICKHOUSE_URL ?? "http://127.0.0.1:8123";
const CH_USER = process.env.CLICKHOUSE_USER ?? "default";
const CH_PASSWORD = process.env.CLICKHOUSE_PASSWORD ?? "";
const WRITE_KEY = "k8s-boot-key";
const WORKSPACE = "ws-k8s-boot";
/**
 * Keys of other workspaces, for the memory load: the manifests' rate limit is per workspace, so
 * many workspaces within their limits together load a process as one key alone no longer can.
 */
const TENANT_KEYS = Array.from({ length: 64 }, (_, i) => `k8s-boot-tenant-${i}`);
const keyLine = (key: string, workspaceId: string) => `sha256:${createHash("sha256").update(key).digest("hex")}=${workspaceId}\n`;

/** Local values of every Secret the manifests reference, by name and key. */
const TEST_SECRETS: Record<string, Record<string, string>> = {
  "segment-ingest-clickhouse": { CLICKHOUSE_USER: CH_USER, CLICKHOUSE_PASSWORD: CH_PASSWORD },
  "segment-ingest-admin": { ADMIN_TOKEN: `k8s-boot-${randomUUID()}` },
  "segment-ingest-destinations": { DESTINATIONS_SECRET_KEY: `k8s-boot-${randomUUID()}` },
  "segment-ingest-write-keys": {
    "write-keys": [keyLine(WRITE_KEY, WORKSPACE), ...TENANT_KEYS.map((key, i) => keyLine(key, `ws-k8s-tenant-${i}`))].join(""),
  },
};
/** Settings that are addresses: pointed at the local stack. */
const LISTEN_HOSTS = ["INGEST_HOST", "INGEST_METRICS_HOST", "SINK_HTTP_HOST", "DELIVER_HTTP_HOST"];

const rel = (path: string) => relative(ROOT, path);

// ---------------------------------------------------------------------------------------------
// The image

interface Image {
  entrypoint: string[];
  cmd: string[];
  env: Record<string, string>;
  workdir: string;
}

/** ENTRYPOINT, CMD (exec form), ENV and WORKDIR of the Dockerfile's last stage. */
function imageOf(dockerfile: string): Image {
  // Docker drops comment lines, also inside a continued instruction, then joins continuations.
  const text = dockerfile
    .split("\n")
    .filter((l) => !l.trim().startsWith("#"))
    .join("\n")
    .replace(/\\\n/g, " ");
  const stages = text.split(/^FROM\s/im);
  const last = stages[stages.length - 1]!.split("\n").map((l) => l.trim());
  const image: Image = { entrypoint: [], cmd: [], env: {}, workdir: "/" };
  for (const line of last) {
    const [word, ...rest] = line.split(/\s+/);
    const argument = line.slice((word ?? "").length).trim();
    if (word === "ENTRYPOINT") image.entrypoint = JSON.parse(argument) as string[];
    else if (word === "CMD") image.cmd = JSON.parse(argument) as string[];
    else if (word === "WORKDIR") image.workdir = argument;
    else if (word === "ENV") {
      for (const pair of rest) {
        const at = pair.indexOf("=");
        if (at < 0) throw new Error(`ENV ${pair}: only the key=value form is understood here`);
        image.env[pair.slice(0, at)] = pair.slice(at + 1);
      }
    }
  }
  if (image.entrypoint.length === 0) throw new Error("deploy/Dockerfile: no exec-form ENTRYPOINT in the last stage");
  return image;
}

const IMAGE = imageOf(readFileSync(join(ROOT, "deploy", "Dockerfile"), "utf8"));

// ---------------------------------------------------------------------------------------------
// From a rendered container to a local process

/** One container, ready to start locally. */
interface Launch {
  /** `Deployment/name container` or `Job/name container`. */
  label: string;
  kind: "Deployment" | "Job";
  argv: string[];
  env: Record<string, string>;
  /** containerPort -> the local port standing in for it. */
  ports: Map<number, number>;
  /** Local ports by the container port's name. */
  named: Record<string, number>;
  readiness?: string;
  liveness?: string;
  /** The first argument after the entrypoint (`ingest`, `sink`, `migrate`). */
  command: string;
  graceSeconds: number;
  activeDeadlineSeconds: number;
  /** The container's memory limit, MiB. */
  memoryLimitMb?: number;
  /** What was changed from the render, for the log. */
  changed: string[];
}

/** This run's own names. */
interface Names {
  id: string;
  topics: Record<
    | "KAFKA_TOPIC"
    | "KAFKA_DLQ_TOPIC"
    | "KAFKA_REJECTED_TOPIC"
    | "KAFKA_SUPPRESSIONS_TOPIC"
    | "KAFKA_DESTINATIONS_TOPIC"
    | "KAFKA_DELIVERIES_TOPIC"
    | "KAFKA_PLANS_TOPIC"
    | "KAFKA_ADMIN_TOPIC",
    string
  >;
  database: string;
  group: string;
  /** DELIVER_GROUP_PREFIX: each destination's group is `<prefix>-<destinationId>`. */
  deliverPrefix: string;
}

function newNames(): Names {
  const id = randomUUID().slice(0, 8);
  return {
    id,
    topics: {
      KAFKA_TOPIC: `k8s-boot-events-${id}`,
      KAFKA_DLQ_TOPIC: `k8s-boot-dlq-${id}`,
      KAFKA_REJECTED_TOPIC: `k8s-boot-rejected-${id}`,
      KAFKA_SUPPRESSIONS_TOPIC: `k8s-boot-suppressions-${id}`,
      KAFKA_DESTINATIONS_TOPIC: `k8s-boot-destinations-${id}`,
      // The delivery's reports of attempts for the live view (read by processes that know it).
      KAFKA_DELIVERIES_TOPIC: `k8s-boot-deliveries-${id}`,
      KAFKA_PLANS_TOPIC: `k8s-boot-plans-${id}`,
      KAFKA_ADMIN_TOPIC: `k8s-boot-admin-${id}`,
    },
    database: `k8s_boot_${id}`,
    group: `k8s-boot-sink-${id}`,
    deliverPrefix: `k8s-boot-deliver-${id}`,
  };
}

function find(objects: Manifest[], kind: string, name: string): Manifest | undefined {
  return objects.find((o) => o.kind === kind && o.metadata?.name === name);
}

/** Kubernetes' $(VAR) expansion of an env value: defined names are replaced, $$ escapes. */
function expand(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string | undefined) =>
    name === undefined ? "$" : (env[name] ?? whole),
  );
}

function secretValue(name: string, key: string, where: string): string {
  const value = TEST_SECRETS[name]?.[key];
  if (value === undefined) throw new Error(`${where}: Secret/${name} key ${key} has no local test value (TEST_SECRETS)`);
  return value;
}

/**
 * The local process of one container of a rendered workload: its environment as Kubernetes would
 * give it, its volumes written under `scratch`, and the changes described in the module comment.
 */
async function launchOf(objects: Manifest[], workload: Manifest, container: Manifest, names: Names, scratch: string): Promise<Launch> {
  const label = `${workload.kind}/${workload.metadata.name} container ${container.name}`;
  const pod = workload.spec.template.spec;
  const changed: string[] = [];

  // The environment: the image's ENV, then envFrom in order (later sources win), then env.
  const env: Record<string, string> = { ...IMAGE.env };
  for (const from of container.envFrom ?? []) {
    const prefix: string = from.prefix ?? "";
    if (from.configMapRef) {
      const map = find(objects, "ConfigMap", from.configMapRef.name);
      if (!map) {
        if (from.configMapRef.optional) continue;
        throw new Error(`${label}: envFrom ConfigMap/${from.configMapRef.name} is not in the render`);
      }
      for (const [k, v] of Object.entries(map.data ?? {})) env[prefix + k] = String(v);
    } else if (from.secretRef) {
      const values = TEST_SECRETS[from.secretRef.name];
      if (!values) throw new Error(`${label}: envFrom Secret/${from.secretRef.name} has no local test values (TEST_SECRETS)`);
      for (const [k, v] of Object.entries(values)) env[prefix + k] = v;
    } else throw new Error(`${label}: envFrom ${JSON.stringify(from)} is not understood here`);
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined || e.valueFrom === undefined) env[e.name] = expand(String(e.value ?? ""), env);
    else if (e.valueFrom.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const value = find(objects, "ConfigMap", ref.name)?.data?.[ref.key];
      if (value === undefined && !ref.optional) throw new Error(`${label}: env ${e.name}: ConfigMap/${ref.name} key ${ref.key} missing`);
      if (value !== undefined) env[e.name] = String(value);
    } else if (e.valueFrom.secretKeyRef) {
      env[e.name] = secretValue(e.valueFrom.secretKeyRef.name, e.valueFrom.secretKeyRef.key, label);
    } else throw new Error(`${label}: env ${e.name}: ${JSON.stringify(e.valueFrom)} is not understood here`);
  }

  // Volumes, written under scratch; a setting holding a path below a mount follows it.
  for (const mount of container.volumeMounts ?? []) {
    const volume = (pod.volumes ?? []).find((v: Manifest) => v.name === mount.name);
    if (!volume) throw new Error(`${label}: volumeMount ${mount.name} has no volume`);
    const dir = join(scratch, `${container.name}-${mount.name}`);
    mkdirSync(dir, { recursive: true });
    if (volume.secret) {
      const values = TEST_SECRETS[volume.secret.secretName];
      if (!values) throw new Error(`${label}: volume ${volume.name}: Secret/${volume.secret.secretName} has no local test values`);
      for (const [k, v] of Object.entries(values)) writeFileSync(join(dir, k), v);
    } else if (volume.configMap) {
      const map = find(objects, "ConfigMap", volume.configMap.name);
      if (!map) throw new Error(`${label}: volume ${volume.name}: ConfigMap/${volume.configMap.name} is not in the render`);
      for (const [k, v] of Object.entries(map.data ?? {})) writeFileSync(join(dir, k), String(v));
    } else if (!volume.emptyDir)
      throw new Error(`${label}: volume ${volume.name}: only secret, configMap and emptyDir are understood here`);
    const at = String(mount.mountPath).replace(/\/$/, "");
    for (const [k, v] of Object.entries(env)) {
      if (v === at || v.startsWith(`${at}/`)) {
        env[k] = dir + v.slice(at.length);
        changed.push(`${k}: ${v} -> scratch volume ${mount.name}`);
      }
    }
  }

  // Addresses.
  const set = (key: string, value: string) => {
    if (env[key] !== value) changed.push(`${key}: ${env[key] ?? "(unset)"} -> ${value}`);
    env[key] = value;
  };
  set("KAFKA_BROKERS", LOCAL_KAFKA);
  set("CLICKHOUSE_URL", LOCAL_CLICKHOUSE);
  for (const key of LISTEN_HOSTS) if (env[key] !== undefined) set(key, "127.0.0.1");
  if (env.CLICKHOUSE_CLUSTER !== undefined) {
    changed.push(`CLICKHOUSE_CLUSTER: ${env.CLICKHOUSE_CLUSTER} -> (unset: the local ClickHouse is one server)`);
    delete env.CLICKHOUSE_CLUSTER;
  }
  const ports = new Map<number, number>();
  const named: Record<string, number> = {};
  for (const p of container.ports ?? []) {
    const port = await freePort();
    ports.set(Number(p.containerPort), port);
    if (p.name) named[p.name] = port;
  }
  for (const [key, value] of Object.entries(env)) {
    const local = ports.get(Number(value));
    if (/_PORT$/.test(key) && local !== undefined) set(key, String(local));
  }
  // Names.
  Object.assign(env, names.topics, {
    CLICKHOUSE_DATABASE: names.database,
    SINK_GROUP_ID: names.group,
    DELIVER_GROUP_PREFIX: names.deliverPrefix,
  });
  changed.push(`topics, SINK_GROUP_ID, DELIVER_GROUP_PREFIX, CLICKHOUSE_DATABASE: this run's (${names.id})`);

  // The image's entrypoint and command, as Kubernetes combines them with command and args.
  const argv: string[] = container.command
    ? [...container.command, ...(container.args ?? [])]
    : [...IMAGE.entrypoint, ...(container.args ?? IMAGE.cmd)];
  const local = argv.map((a, i) => {
    if (i === 0 && a === "node") return process.execPath;
    if (/^dist\//.test(a) && IMAGE.workdir === "/app") return join(BUILD, a.slice("dist/".length));
    return a;
  });
  const probePath = (probe: Manifest | undefined) => {
    if (!probe) return undefined;
    if (!probe.httpGet) throw new Error(`${label}: only httpGet probes are understood here`);
    const port = probe.httpGet.port;
    const containerPort = typeof port === "number" ? port : (container.ports ?? []).find((p: Manifest) => p.name === port)?.containerPort;
    const localPort = ports.get(Number(containerPort));
    if (localPort === undefined) throw new Error(`${label}: probe port ${port} is not a port of the container`);
    return `http://127.0.0.1:${localPort}${probe.httpGet.path ?? "/"}`;
  };
  return {
    label,
    kind: workload.kind,
    argv: local,
    env,
    ports,
    named,
    readiness: probePath(container.readinessProbe),
    liveness: probePath(container.livenessProbe),
    command: argv[IMAGE.entrypoint.length] ?? "",
    graceSeconds: pod.terminationGracePeriodSeconds ?? 30,
    activeDeadlineSeconds: workload.spec.activeDeadlineSeconds ?? 600,
    memoryLimitMb: mebibytes(container.resources?.limits?.memory),
    changed,
  };
}

// ---------------------------------------------------------------------------------------------
// Running them

interface Running {
  launch: Launch;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(launch: Launch): Running {
  const [file, ...args] = launch.argv;
  const child = spawn(file!, args, { cwd: ROOT, env: launch.env, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  child.stdout!.on("data", (d: Buffer) => (text += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (text += d.toString()));
  const exited = once(child, "exit").then(([code]) => code as number | null);
  return { launch, child, output: () => text, exited };
}

const tail = (text: string, lines = 30) => text.trim().split("\n").slice(-lines).join("\n");

/** Resolves when `url` answers 200; throws with the process's output if it exits or `ms` pass first. */
async function answers200(run: Running, url: string, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let exit: number | null | undefined;
  void run.exited.then((code) => (exit = code));
  let last = "no answer";
  while (Date.now() < deadline) {
    if (exit !== undefined) throw new Error(`${run.launch.label} exited ${exit} before its ${what} answered 200:\n${tail(run.output())}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.status === 200) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${run.launch.label}: ${what} ${url} did not answer 200 within ${ms} ms (${last}):\n${tail(run.output())}`);
}

async function cleanUp(names: Names, running: Running[]): Promise<void> {
  for (const run of running) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill("SIGKILL");
  await Promise.all(running.map((r) => r.exited));
  const kafka = new Kafka({ clientId: "k8s-boot-cleanup", brokers: LOCAL_KAFKA.split(","), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const existing = new Set(await admin.listTopics());
    const topics = Object.values(names.topics).filter((t) => existing.has(t));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(`${names.deliverPrefix}-`));
    if (groups.length > 0) await admin.deleteGroups(groups);
  } catch {
    // housekeeping only: a failure leaves a stray test topic, not a wrong result
  } finally {
    await admin.disconnect();
  }
  const ch = createClient({ url: LOCAL_CLICKHOUSE, username: CH_USER, password: CH_PASSWORD });
  try {
    await ch.command({ query: `DROP DATABASE IF EXISTS ${names.database}` });
  } finally {
    await ch.close();
  }
}

/** Posts one track message with the test key; resolves with the messageId once its row is stored. */
async function oneEventLands(ingest: Running, database: string, table: string): Promise<void> {
  const port = ingest.launch.named.http;
  assert.ok(port, `${ingest.launch.label} has a port named http`);
  const messageId = randomUUID();
  const response = await fetch(`http://127.0.0.1:${port}/v1/track`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(WRITE_KEY) },
    body: JSON.stringify({ messageId, userId: "k8s-boot-user", event: "Booted" }),
  });
  assert.is(response.status, 200, `${ingest.launch.label}: POST /v1/track answered ${response.status}: ${await response.text()}`);
  const ch = createClient({ url: LOCAL_CLICKHOUSE, username: CH_USER, password: CH_PASSWORD });
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const result = await ch.query({
        query: `SELECT count() AS n FROM ${database}.${table} FINAL WHERE message_id = '${messageId}' AND workspace_id = '${WORKSPACE}'`,
        format: "JSONEachRow",
      });
      const [row] = await result.json<{ n: string }>();
      if (Number(row?.n) === 1) return;
      if (Date.now() > deadline) throw new Error(`the event posted to ${ingest.launch.label} did not land in ${database}.${table}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await ch.close();
  }
}

const show = (line: string) => console.log(`  ${line}`);

/**
 * The admin API of the rendered ingest, with the Secrets it renders (ADMIN_TOKEN, ClickHouse's
 * user): a key created through it is accepted, and the change is in the audit trail.
 */
async function adminApiWorks(ingest: Running): Promise<void> {
  const admin = `http://127.0.0.1:${ingest.launch.named.metrics}/admin/v1`;
  const headers = { authorization: `Bearer ${TEST_SECRETS["segment-ingest-admin"]!.ADMIN_TOKEN}` };
  const made = await fetch(`${admin}/workspaces/${WORKSPACE}/keys`, { method: "POST", headers });
  assert.is(made.status, 201, `${ingest.launch.label}: POST .../keys answered ${made.status}: ${await made.clone().text()}`);
  const { writeKey } = (await made.json()) as { writeKey: string };
  const track = () =>
    fetch(`http://127.0.0.1:${ingest.launch.named.http}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(writeKey) },
      body: JSON.stringify({ messageId: randomUUID(), userId: "k8s-boot-user", event: "Keyed by the API" }),
    });
  await until("the API's key accepted", 15_000, async () => ((await track()).status === 200 ? true : undefined));
  await until("the key's creation audited", 15_000, async () => {
    const audit = await fetch(`${admin}/audit?action=keys.create`, { headers });
    const { entries } = (await audit.json()) as { entries?: { workspace_id: string }[] };
    return entries?.some((e) => e.workspace_id === WORKSPACE) ? true : undefined;
  });
}

/** Runs `argv` with `env` to its end; resolves with its exit code and output. */
function runToEnd(argv: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  return once(child, "exit").then(([code]) => ({ code: code as number | null, output }));
}

/** Polls `check` every 250 ms until it returns a value; throws `what` after `ms`. */
async function until<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A destination of the test workspace, added by `cli destinations add` with the delivery
 * container's entrypoint and environment (its topics, DESTINATIONS_SECRET_KEY of its Secret) and a
 * shared secret, posting to a receiver on 127.0.0.1. The booted delivery process must start it
 * (deliver_destination_running 1 on its /metrics), then deliver an event posted to the ingest
 * after that, signed (X-Signature, HMAC-SHA1 of the body) with the secret it opened with the key,
 * and count it as delivered.
 */
async function deliveryArrives(deliver: Running, ingest: Running, names: Names): Promise<void> {
  const received: { body: string; signature?: string }[] = [];
  const receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      received.push({ body, signature: req.headers["x-signature"] as string | undefined });
      res.writeHead(200).end("ok");
    });
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  const destinationId = `d-k8s-boot-${names.id}`;
  const secret = randomUUID();
  const metricsUrl = `http://127.0.0.1:${deliver.launch.named.http}/metrics`;
  const metrics = async () => (await fetch(metricsUrl, { signal: AbortSignal.timeout(2_000) })).text();
  try {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const cli = [...deliver.launch.argv.slice(0, IMAGE.entrypoint.length), "destinations", "add", WORKSPACE, "webhook", url];
    const add = await runToEnd([...cli, "--id", destinationId, "--secret-env", "K8S_BOOT_HOOK_SECRET"], {
      ...deliver.launch.env,
      K8S_BOOT_HOOK_SECRET: secret,
    });
    assert.is(add.code, 0, `destinations add exited ${add.code}:\n${tail(add.output)}`);
    await until(`${deliver.launch.label} did not start ${destinationId}`, 60_000, async () =>
      (await metrics()).includes(`deliver_destination_running{destination="${destinationId}"} 1`) ? true : undefined,
    );
    const messageId = randomUUID();
    const response = await fetch(`http://127.0.0.1:${ingest.launch.named.http}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(WRITE_KEY) },
      body: JSON.stringify({ messageId, userId: "k8s-boot-user", event: "Delivered" }),
    });
    assert.is(response.status, 200, `POST /v1/track answered ${response.status}`);
    const got = await until(`the event did not reach the destination's receiver through ${deliver.launch.label}`, 60_000, async () =>
      received.find((r) => (JSON.parse(r.body) as { messageId?: string }).messageId === messageId),
    );
    assert.is(got.signature, createHmac("sha1", secret).update(got.body).digest("hex"), "X-Signature with the secret the key opened");
    const delivered = new RegExp(`deliver_messages_total\\{destination="${destinationId}",outcome="delivered"\\} (\\d+)`);
    assert.ok(Number(delivered.exec(await metrics())?.[1]) >= 1, "deliver_messages_total counts it as delivered");
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
}

/** VmRSS, or VmHWM (the peak since the last reset), of a process, MiB. */
function memoryMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

/**
 * Hostile but keyed load on a booted ingest, with its rendered memory and rate-limit settings
 * (NODE_OPTIONS, the image's node flags, RATE_LIMIT_*): 32 connections post batches of 2,500 empty
 * objects (7.5 KB each; every item is refused and stored, about 900 KB of records a request) for
 * `seconds`, each request with the next of `keys`. Resolves with the peak RSS (MiB) and the
 * answers; the caller checks the process is alive and under its memory limit.
 */
async function refusedItemsLoad(
  ingest: Running,
  keys: string[],
  seconds: number,
): Promise<{ peakMb: number; statuses: Record<string, number> }> {
  const pid = ingest.child.pid!;
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
  let peak = memoryMb(pid, "VmRSS");
  const timer = setInterval(() => (peak = Math.max(peak, memoryMb(pid, "VmRSS"))), 20);
  const body = JSON.stringify({ batch: Array.from({ length: 2_500 }, () => ({})) });
  try {
    const result = await autocannon({
      url: `http://127.0.0.1:${ingest.launch.named.http}/v1/batch`,
      method: "POST",
      connections: 32,
      duration: seconds,
      body,
      requests: keys.map((key) => ({ headers: { "content-type": "application/json", authorization: basic(key) } })),
    });
    const statuses: Record<string, number> = {};
    for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = stat?.count ?? 0;
    return { peakMb: Math.max(peak, memoryMb(pid, "VmHWM")), statuses };
  } finally {
    clearInterval(timer);
  }
}

// Only the kustomizations with workloads: deploy/k8s/monitoring and operators describe none of ours.
for (const dir of kustomizations(ROOT).filter((d) => render(ROOT, d).some((o) => o.kind === "Deployment"))) {
  test(`${rel(dir)}: every Job exits 0 and every Deployment becomes ready, as rendered`, async () => {
    const objects = render(ROOT, dir);
    const names = newNames();
    const scratch = mkdtempSync(join(tmpdir(), "k8s-boot-"));
    const running: Running[] = [];
    console.log(`\n${rel(dir)} (kustomize build: ${objects.length} objects; names ${names.id}):`);
    try {
      const launches: Launch[] = [];
      for (const workload of objects.filter((o) => o.kind === "Deployment" || o.kind === "Job")) {
        const pod = workload.spec.template.spec;
        assert.not.ok(pod.initContainers?.length, `${workload.kind}/${workload.metadata.name}: initContainers are not run by this test`);
        for (const container of pod.containers) launches.push(await launchOf(objects, workload, container, names, scratch));
      }
      assert.ok(launches.some((l) => l.kind === "Job") && launches.some((l) => l.kind === "Deployment"), "a Job and Deployments to run");
      for (const launch of launches)
        show(
          `${launch.label}: ${launch.argv
            .slice(1)
            .map((a) => relative(ROOT, a) || a)
            .join(" ")}; changed ${launch.changed.join(", ")}`,
        );

      // Jobs first, to completion: they create what the Deployments need.
      for (const launch of launches.filter((l) => l.kind === "Job")) {
        const run = start(launch);
        running.push(run);
        const timeout = new Promise<"timeout">((r) =>
          setTimeout(() => r("timeout"), Math.min(launch.activeDeadlineSeconds, 180) * 1000).unref(),
        );
        const code = await Promise.race([run.exited, timeout]);
        assert.is(code, 0, `${launch.label} exited ${code}:\n${tail(run.output())}`);
        show(`OK   ${launch.label} exited 0`);
      }
      const services = launches.filter((l) => l.kind === "Deployment").map((l) => start(l));
      running.push(...services);
      for (const run of services) {
        assert.ok(run.launch.readiness, `${run.launch.label} has a readiness probe`);
        await answers200(run, run.launch.readiness!, "readiness probe", 60_000);
        if (run.launch.liveness) await answers200(run, run.launch.liveness, "liveness probe", 10_000);
        show(`OK   ${run.launch.label} ready (${new URL(run.launch.readiness!).pathname} 200)`);
      }
      for (const ingest of services.filter((r) => r.launch.command === "ingest")) {
        await oneEventLands(ingest, names.database, ingest.launch.env.CLICKHOUSE_TABLE ?? "events");
        show(`OK   an event posted to ${ingest.launch.label} landed in ClickHouse`);
        await adminApiWorks(ingest);
        show(`OK   a key created through ${ingest.launch.label}'s admin API was accepted, and audited`);
        // Its memory settings hold under refused-item batches: alive, under its limit, still serving.
        const limit = ingest.launch.memoryLimitMb;
        assert.ok(limit, `${ingest.launch.label} has a memory limit`);
        // One workspace is held to its rate limit: a 400 takes 2,500 item tokens, the 429s none.
        const env = ingest.launch.env;
        const one = await refusedItemsLoad(ingest, [WRITE_KEY], 4);
        const most = (Number(env.RATE_LIMIT_BURST) + Number(env.RATE_LIMIT_PER_SECOND) * 5) / 2_500;
        show(`${ingest.launch.label}: one workspace's refused-item batches (4 s): ${JSON.stringify(one.statuses)}, at most ${most} 400s`);
        assert.ok((one.statuses["400"] ?? 0) > 0 && (one.statuses["400"] ?? 0) <= most, `400s within the rate limit (${most})`);
        assert.ok((one.statuses["429"] ?? 0) > 0, "the rest answered 429");
        const { peakMb, statuses } = await refusedItemsLoad(ingest, TENANT_KEYS, 8);
        show(
          `${ingest.launch.label}: refused-item batches of ${TENANT_KEYS.length} workspaces (2,500 x {}, 32 connections, 8 s): ${JSON.stringify(statuses)}, peak RSS ${peakMb.toFixed(0)} of ${limit} MiB`,
        );
        assert.is(ingest.child.exitCode, null, `${ingest.launch.label} exited under the load:\n${tail(ingest.output())}`);
        assert.ok((statuses["400"] ?? 0) > 0, "the refused-item batches were answered 400 (429 past a workspace's limit)");
        assert.ok(peakMb < limit, `peak RSS ${peakMb.toFixed(0)} MiB is over the memory limit ${limit} MiB`);
        await oneEventLands(ingest, names.database, ingest.launch.env.CLICKHOUSE_TABLE ?? "events");
        show(`OK   ${ingest.launch.label} stayed under its memory limit and an event posted after landed`);
      }
      // The delivery process, as rendered, delivers to a destination added as the docs say.
      const delivers = services.filter((r) => r.launch.command === "deliver");
      assert.ok(delivers.length > 0, "the render runs a delivery process");
      for (const deliver of delivers) {
        for (const ingest of services.filter((r) => r.launch.command === "ingest")) {
          await deliveryArrives(deliver, ingest, names);
          show(`OK   an event posted to ${ingest.launch.label} reached a destination through ${deliver.launch.label}, signed`);
        }
      }
      // A stop within the grace period, exit 0.
      for (const run of services) run.child.kill("SIGTERM");
      for (const run of services) {
        const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), run.launch.graceSeconds * 1000).unref());
        const code = await Promise.race([run.exited, timeout]);
        assert.is(code, 0, `${run.launch.label} after SIGTERM: ${code} (grace ${run.launch.graceSeconds} s):\n${tail(run.output())}`);
      }
      show(`OK   every Deployment container stopped on SIGTERM with exit 0 within its grace period`);
    } finally {
      await cleanUp(names, running);
      rmSync(scratch, { recursive: true, force: true });
    }
  });
}

test.run();
