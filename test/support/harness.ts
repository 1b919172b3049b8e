/**
 * Harness of the live tests: spawns the real ingest and sink processes against the real Kafka
 * and ClickHouse of the local stack. Each LiveStack has its own topic, database and consumer
 * group, so test files do not see each other's rows.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:net";
import { join } from "node:path";
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import { Kafka, logLevel } from "kafkajs";
import { clusterSettings, onCluster } from "../../schemas/clickhouse/sql";
import { clickhouseConfig, kafkaConfig } from "../../schemas/config";
import { pollUntil } from "../../schemas/runtime/poll";
import { BUILD } from "./paths";

const dist = BUILD;

/** A spawned process and its output. */
export interface Service {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** An HTTP answer: status, headers, text and parsed JSON (when there is a body). */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json?: Record<string, unknown>;
}

/** Basic authorization as Segment SDKs send it: base64(writeKey + ':'). */
export const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString("base64")}`;

/** A set of running services on their own topic, database and group. */
export class LiveStack {
  readonly id = randomUUID().slice(0, 8);
  /** Picks the ingest's port (freePort); a test may hand out a taken one first. */
  pickPort: () => Promise<number> = freePort;
  /** A writeKey only this stack's ingest knows: its settings answer tells it from another process on the port. */
  readonly probeKey = `probe-${this.id}`;
  readonly env: Record<string, string>;
  readonly database: string;
  base = "";
  ch!: ClickHouseClient;
  ingest?: Service;
  sink?: Service;
  readonly kafka: Kafka;

  constructor(extraEnv: Record<string, string> = {}) {
    this.database = `test_${this.id}`;
    this.env = {
      ...(process.env as Record<string, string>),
      KAFKA_TOPIC: `test-events-${this.id}`,
      KAFKA_DLQ_TOPIC: `test-events-dlq-${this.id}`,
      KAFKA_SUPPRESSIONS_TOPIC: `test-suppressions-${this.id}`,
      KAFKA_DESTINATIONS_TOPIC: `test-destinations-${this.id}`,
      KAFKA_DELIVERIES_TOPIC: `test-deliveries-${this.id}`,
      KAFKA_PLANS_TOPIC: `test-plans-${this.id}`,
      KAFKA_ADMIN_TOPIC: `test-admin-${this.id}`,
      // Each stack's own: the sink reads a topic from its start, so a shared rejected topic
      // (events-rejected) made each test's sink insert every earlier run's refused items first.
      KAFKA_REJECTED_TOPIC: `test-rejected-${this.id}`,
      CLICKHOUSE_DATABASE: this.database,
      SINK_GROUP_ID: `test-sink-${this.id}`,
      SINK_BATCH_WAIT_MS: "200",
      SINK_SESSION_TIMEOUT_MS: "6000",
      SINK_HTTP_PORT: "0",
      INGEST_DRAIN_DELAY_MS: "0",
      INGEST_METRICS_PORT: "0",
      PRODUCE_TIMEOUT_MS: "5000",
      ...extraEnv,
      // test-key is always there: marker() posts with it; the probe key is this stack's alone (start())
      WRITE_KEYS: ["test-key=ws-test,other-key=ws-other", `${this.probeKey}=ws-test`, extraEnv.WRITE_KEYS].filter(Boolean).join(","),
    };
    this.kafka = new Kafka({ clientId: `test-${this.id}`, brokers: kafkaConfig(this.env).brokers, logLevel: logLevel.NOTHING });
  }

  /** The events table, qualified. */
  get table(): string {
    return `${this.database}.events`;
  }

  /** Runs setup, starts the ingest (node run with `nodeArgs`) and waits for it to be ready, then starts the sink. */
  async start(nodeArgs: string[] = []): Promise<void> {
    await this.run("deploy/setup/main.js");
    const c = clickhouseConfig(this.env);
    this.ch = createClient({
      url: c.url,
      username: c.username,
      password: c.password,
      database: this.database,
      clickhouse_settings: clusterSettings(c.cluster),
    });
    const { service, port } = await this.startIngest({}, nodeArgs);
    this.ingest = service;
    this.base = `http://127.0.0.1:${port}`;
    this.env.INGEST_PORT = String(port);
    // The sink starts once the ingest holds its port: the sink's own port 0 cannot take it.
    this.sink = this.spawn("sink/main.js", {}, [], nodeArgs);
  }

  /**
   * Starts an ingest of this stack (its env plus `extra`) on a port `pickPort` found, and returns
   * it once it answers ready there. The port is free only when it is picked: another process may
   * bind it before the ingest does and answer /readyz in its place, so readiness also asks for the
   * settings of this stack's probe key, which no other stack's ingest knows. An ingest that exits
   * on EADDRINUSE is started again on another port (3 tries); any other exit throws with its output.
   */
  async startIngest(
    extra: Record<string, string> = {},
    nodeArgs: string[] = [],
    build = dist,
  ): Promise<{ service: Service; port: number }> {
    for (let attempt = 1; ; attempt += 1) {
      const port = await this.pickPort();
      const service = this.spawn("deploy/cli.js", { ...extra, INGEST_PORT: String(port) }, ["ingest"], nodeArgs, build);
      if ((await this.ingestReady(service, port)) === "ready") return { service, port };
      await service.exited;
      if (!service.output().includes("EADDRINUSE") || attempt === 3)
        throw new Error(`the ingest exited before it was ready:\n${service.output()}`);
    }
  }

  /**
   * Waits until the ingest `service` answers ready on `port`: /readyz 200 and the settings of
   * this stack's probe key (another process on the port cannot answer both), or until it exits.
   * Throws when neither happens within waitFor's timeout.
   */
  async ingestReady(service: Service, port: number | string): Promise<"ready" | "exited"> {
    const base = `http://127.0.0.1:${port}`;
    const exited = () => service.child.exitCode !== null || service.child.signalCode !== null;
    const ours = async () => (await fetch(`${base}/v1/projects/${this.probeKey}/settings`)).status === 200;
    return waitFor(`ingest /readyz on ${port}`, async () => {
      if (exited()) return "exited";
      return (await ours()) && (await fetch(`${base}/readyz`)).status === 200 ? "ready" : undefined;
    });
  }

  /** Stops the services and drops this stack's topics and database. */
  async stop(): Promise<void> {
    await Promise.all([this.ingest && stopService(this.ingest), this.sink && stopService(this.sink)]);
    if (this.ch) {
      try {
        await this.ch.command({ query: `DROP DATABASE IF EXISTS ${this.database}${onCluster(clickhouseConfig(this.env).cluster)}` });
      } catch (error) {
        // housekeeping only, like the topics below: a slow server leaves a stray database, not a wrong result
        console.error(`stack ${this.id}: dropping ${this.database} failed: ${String(error)}`);
      } finally {
        await this.ch.close();
      }
    }
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const topics = [
        this.env.KAFKA_TOPIC!,
        this.env.KAFKA_DLQ_TOPIC!,
        this.env.KAFKA_SUPPRESSIONS_TOPIC!,
        this.env.KAFKA_REJECTED_TOPIC!,
        this.env.KAFKA_DESTINATIONS_TOPIC!,
        this.env.KAFKA_DELIVERIES_TOPIC!,
        this.env.KAFKA_PLANS_TOPIC!,
        this.env.KAFKA_ADMIN_TOPIC!,
      ];
      await admin.deleteTopics({ topics });
    } catch {
      // housekeeping only: a failure leaves a stray test topic, not a wrong result
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Runs `node ...nodeArgs dist/<script> ...args` with this stack's env plus `extra`, and the
   * young generation of deploy/Dockerfile's ENTRYPOINT (Node 20's size; Node 24's default is 4x).
   */
  spawn(script: string, extra: Record<string, string> = {}, args: string[] = [], nodeArgs: string[] = [], build = dist): Service {
    const child = spawn(process.execPath, ["--max-semi-space-size=16", ...nodeArgs, join(build, script), ...args], {
      env: { ...this.env, ...extra },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    child.stdout!.on("data", (d: Buffer) => (text += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (text += d.toString()));
    const exited = once(child, "exit").then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
    return { child, output: () => text, exited };
  }

  /** Runs a script to completion; throws with its output when it fails. */
  async run(script: string, extra: Record<string, string> = {}): Promise<void> {
    const service = this.spawn(script, extra);
    const { code } = await service.exited;
    if (code !== 0) throw new Error(`${script} exited ${code}:\n${service.output()}`);
  }

  /** POSTs a JSON body (or raw text/bytes) with the test key unless other headers are given. */
  async post(path: string, body: unknown, headers: Record<string, string> = { authorization: basic("test-key") }): Promise<Answer> {
    const raw = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    const response = await fetch(`${this.base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: raw,
    });
    return answer(response);
  }

  /** Rows of a SELECT as objects. Values must be literals: 18.16 has no query parameters. */
  async select<T>(query: string): Promise<T[]> {
    const result = await this.ch.query({ query, format: "JSONEachRow" });
    return result.json<T>();
  }

  /** Rows under FINAL for these message ids, ordered by message_id. */
  finalRows<T = Record<string, string>>(ids: string[]): Promise<T[]> {
    return this.select<T>(`SELECT * FROM ${this.table} FINAL WHERE message_id IN (${sqlList(ids)}) ORDER BY message_id`);
  }

  /** Waits until exactly `n` rows exist under FINAL for the ids, and returns them. */
  rowsLanded<T = Record<string, string>>(ids: string[], n = ids.length, timeoutMs = 20_000): Promise<T[]> {
    return waitFor(
      `${n} rows for ${ids.length} ids`,
      async () => {
        const rows = await this.finalRows<T>(ids);
        return rows.length === n ? rows : undefined;
      },
      timeoutMs,
    );
  }

  /** Waits until exactly `n` rows of a workspace exist under FINAL, and returns them. */
  waitRows<T>(workspace: string, n: number, timeoutMs = 20_000): Promise<T[]> {
    return waitFor(
      `${n} rows of ${workspace}`,
      async () => {
        const rows = await this.select<T>(`SELECT * FROM ${this.table} FINAL WHERE workspace_id = '${workspace}' ORDER BY message_id`);
        return rows.length === n ? rows : undefined;
      },
      timeoutMs,
    );
  }

  /** Posts one valid message and waits for its row: the sink has caught up with earlier posts. */
  async marker(): Promise<void> {
    const id = `marker-${randomUUID()}`;
    const posted = await this.post("/v1/track", { event: "marker", userId: "m", messageId: id });
    if (posted.status !== 200) throw new Error(`marker refused: ${posted.status} ${posted.text}`);
    await this.rowsLanded([id]);
  }

  /**
   * Committed offsets of a group vs its topic's end, summed over partitions; by default this
   * stack's sink group and events topic.
   */
  async groupLag(topic = this.env.KAFKA_TOPIC!, groupId = this.env.SINK_GROUP_ID!): Promise<{ committed: number; end: number }> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const ends = await admin.fetchTopicOffsets(topic);
      const [group] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const committed = (group?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
      return { committed, end: ends.reduce((sum, p) => sum + Number(p.high), 0) };
    } finally {
      await admin.disconnect();
    }
  }
}

/** Reads a fetch Response into an Answer. */
export async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** The service's exit, or undefined when it still runs `ms` after the call (a stop that hangs fails its test instead of holding it). */
export function exitWithin(service: Service, ms: number): Promise<Awaited<Service["exited"]> | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  return Promise.race([service.exited, late]).finally(() => clearTimeout(timer));
}

/** Sends SIGTERM and waits for the exit. */
export async function stopService(service: Service): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGTERM");
  return service.exited;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Polls `probe` (every 100 ms, pollUntil) until it returns a value other than undefined, or throws
 * after `timeoutMs` naming `what` and the probe's last error; a probe's error counts as no answer yet.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  let last: unknown;
  const answer = async () => {
    try {
      return await probe();
    } catch (error) {
      last = error;
      return undefined;
    }
  };
  const value = await pollUntil(answer, { intervalMs: 100, timeoutMs });
  if (value !== undefined) return value;
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

/** A number field of the first log line of `service` with message `msg`, waited for (waitFor). */
function loggedNumber(service: Service, msg: string, field: string): Promise<number> {
  return waitFor(`${field} of "${msg}"`, async () => {
    const line = service
      .output()
      .split("\n")
      .find((l) => l.includes(`"msg":${JSON.stringify(msg)}`));
    return line === undefined ? undefined : (JSON.parse(line) as Record<string, number>)[field];
  });
}

/** The ingest's admin port (INGEST_METRICS_PORT 0 picks one), from its "ingest listening" log line. */
export const adminPort = (ingest: Service): Promise<number> => loggedNumber(ingest, "ingest listening", "metricsPort");

/** The port a spawned sink's HTTP server listens on, from its "sink consuming" log line. */
export const sinkPort = (sink: Service): Promise<number> => loggedNumber(sink, "sink consuming", "port");

/** `'a','b'` for an IN list of test-made ids (quotes escaped). */
export function sqlList(values: string[]): string {
  return values.map((v) => `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`).join(",");
}
