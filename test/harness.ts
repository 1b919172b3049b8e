/**
 * Test harness for the live tests: spawns the real ingest and sink processes against the real
 * Kafka and ClickHouse of the local stack, each test run on its own topic, table and group.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:net";
import { join } from "node:path";
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import { Kafka, logLevel } from "kafkajs";
import { clickhouseConfig, kafkaConfig } from "../schemas/config";

const dist = join(__dirname, "..");

/** A unique name suffix for this run's topic, table and group. */
export const runId = randomUUID().slice(0, 8);

/** Environment shared by every process of this run. */
export const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  KAFKA_TOPIC: `test-events-${runId}`,
  KAFKA_DLQ_TOPIC: `test-events-dlq-${runId}`,
  CLICKHOUSE_TABLE: `events_test_${runId}`,
  SINK_GROUP_ID: `test-sink-${runId}`,
  SINK_BATCH_WAIT_MS: "200",
  SINK_SESSION_TIMEOUT_MS: "6000",
  WRITE_KEYS: "test-key=ws-test,other-key=ws-other",
  PRODUCE_TIMEOUT_MS: "5000",
};

export const kafkaSettings = kafkaConfig(env);
export const clickhouseSettings = clickhouseConfig(env);

/** A ClickHouse client for assertions. */
export function clickhouse(): ClickHouseClient {
  const c = clickhouseSettings;
  return createClient({ url: c.url, username: c.username, password: c.password, database: c.database });
}

/** A kafkajs client for assertions (offsets, cleanup). */
export const kafka = new Kafka({ clientId: `test-${runId}`, brokers: kafkaSettings.brokers, logLevel: logLevel.NOTHING });

/** A spawned service and its output. */
export interface Service {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `dist/<script>` with the run's env plus `extra`. */
export function spawnService(script: string, extra: Record<string, string> = {}): Service {
  const child = spawn(process.execPath, [join(dist, script)], { env: { ...env, ...extra }, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  child.stdout!.on("data", (d: Buffer) => (text += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (text += d.toString()));
  const exited = once(child, "exit").then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  return { child, output: () => text, exited };
}

/** Runs a script to completion; throws with its output when it fails. */
export async function runScript(script: string, extra: Record<string, string> = {}): Promise<void> {
  const service = spawnService(script, extra);
  const { code } = await service.exited;
  if (code !== 0) throw new Error(`${script} exited ${code}:\n${service.output()}`);
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

/** Polls `probe` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

/** Rows of a SELECT as objects. Values must be literals: ClickHouse 18.16 has no query parameters. */
export async function select<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  const result = await client.query({ query, format: "JSONEachRow" });
  return result.json<T>();
}

/** `'a','b'` for an IN list of test-made ids (quotes escaped). */
export function sqlList(values: string[]): string {
  return values.map((v) => `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`).join(",");
}

/** Committed offsets of the run's group vs the topic's end, summed over partitions. */
export async function groupLag(): Promise<{ committed: number; end: number }> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(kafkaSettings.topic);
    const [group] = await admin.fetchOffsets({ groupId: env.SINK_GROUP_ID!, topics: [kafkaSettings.topic] });
    const committed = (group?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
    const end = ends.reduce((sum, p) => sum + Number(p.high), 0);
    return { committed, end };
  } finally {
    await admin.disconnect();
  }
}

/** Deletes the run's topics and table. */
export async function cleanup(client: ClickHouseClient): Promise<void> {
  await client.command({ query: `DROP TABLE IF EXISTS ${clickhouseSettings.database}.${clickhouseSettings.table}` });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [kafkaSettings.topic, kafkaSettings.dlqTopic] });
  } catch {
    // deletion is housekeeping; a failure leaves a stray test topic, not a wrong result
  } finally {
    await admin.disconnect();
  }
}
