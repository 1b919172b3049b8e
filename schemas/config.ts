/**
 * Settings of every process, read from the environment once at start, checked by a typia guard
 * and passed down as arguments. Nothing below main reads process.env. A bad value throws at
 * start (typia's TypeGuardError naming the field), never later.
 */
import { createHash } from "node:crypto";
import typia, { tags } from "typia";
import { tableNameConflict } from "./clickhouse/tables";

type Port = number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<65535>;
type Positive = number & tags.Type<"uint32"> & tags.Minimum<1>;
type Name = string & tags.MinLength<1>;

/** Where Kafka is and what the topics are called; shared by every process. */
export interface KafkaConfig {
  /** host:port list (env KAFKA_BROKERS, comma-separated). */
  brokers: Name[] & tags.MinItems<1>;
  /** Topic of accepted messages (env KAFKA_TOPIC). */
  topic: Name;
  /** Dead-letter topic of records the sink cannot store (env KAFKA_DLQ_TOPIC). */
  dlqTopic: Name;
  /** Topic of batch items the ingest refused, kept for `rejected_messages` (env KAFKA_REJECTED_TOPIC). */
  rejectedTopic: Name;
  /**
   * Compacted topic of users deleted or suppressed (env KAFKA_SUPPRESSIONS_TOPIC), one record
   * per user (schemas/privacy/list.ts); every ingest and sink reads it whole and follows it.
   */
  suppressionsTopic: Name;
  /**
   * Most bytes in one produce of one process (env KAFKA_MAX_MESSAGE_BYTES; Kafka's default
   * message.max.bytes is 1,048,588). Each process also reads its topic's max.message.bytes at
   * start and keeps the smaller.
   */
  maxMessageBytes: Positive & tags.Minimum<65536>;
  /** kafkajs clientId (env KAFKA_CLIENT_ID). */
  clientId: Name;
}

/** Where ClickHouse is and which table holds the events. */
export interface ClickHouseConfig {
  /** HTTP interface (env CLICKHOUSE_URL). */
  url: Name;
  /** env CLICKHOUSE_USER, CLICKHOUSE_PASSWORD. */
  username: Name;
  password: string;
  /** env CLICKHOUSE_DATABASE. */
  database: Name;
  /** env CLICKHOUSE_TABLE. */
  table: Name;
  /**
   * Days of events kept, by event_date (env RETENTION_DAYS; unset keeps them forever). Whole
   * months are dropped once wholly older: a TTL on current ClickHouse, the sink's hourly
   * partition drop (and `npm run cli -- retention`) on 18.16.
   */
  retentionDays?: Positive;
  /**
   * The cluster (a name in the servers' remote_servers, env CLICKHOUSE_CLUSTER) over which setup
   * makes Replicated `_local` tables ON CLUSTER and Distributed tables under the usual names;
   * the sink then inserts with insert_distributed_sync=1. Unset: one server.
   */
  cluster?: Name;
}

/** One accepted writeKey, held only as its SHA-256, and the workspace it belongs to. */
export interface WriteKeyEntry {
  /** Lower-case hex SHA-256 of the key's UTF-8 bytes. */
  sha256: string & tags.Pattern<"^[0-9a-f]{64}$">;
  workspaceId: Name;
}

/** pino's levels. */
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

/** Settings of the ingest service. */
export interface IngestConfig {
  /** Listen address (env INGEST_HOST, INGEST_PORT). */
  host: Name;
  port: Port;
  /**
   * Where /metrics answers, apart from the public API (env INGEST_METRICS_HOST, default
   * INGEST_HOST; INGEST_METRICS_PORT, 0 picks a free port): a scrape port need not be public.
   */
  metricsHost: Name;
  metricsPort: number & tags.Type<"uint32"> & tags.Maximum<65535>;
  /** env WRITE_KEYS: `key=workspaceId` (or `sha256:<hex>=workspaceId`) pairs, comma-separated. */
  writeKeys: WriteKeyEntry[];
  /**
   * The ingest's public address as SDKs reach it, e.g. `https://ingest.example.com` (env
   * PUBLIC_URL): the settings document points analytics.js and the mobile SDKs there. Unset, the
   * address the settings request came to.
   */
  publicUrl?: Name;
  /** env WRITE_KEYS_FILE: a keys file, one entry per line, re-read when it changes. */
  writeKeysFile?: Name;
  /** pino level: fatal, error, warn, info, debug, trace (env LOG_LEVEL). */
  logLevel: LogLevel;
  /** Largest request body in bytes, after decompression (env MAX_REQUEST_BYTES; Segment: 500 KB). */
  maxRequestBytes: Positive;
  /** Largest stored message in bytes of JSON (env MAX_MESSAGE_BYTES; Segment: 32 KB). */
  maxMessageBytes: Positive;
  /** Most messages in one batch request (env MAX_BATCH_MESSAGES; Segment: 2,500). */
  maxBatchMessages: Positive;
  /** Deepest nesting of arrays/objects in a body (env MAX_JSON_DEPTH). */
  maxJsonDepth: Positive;
  /** Messages per second per workspace and process; 0 is no limit (env RATE_LIMIT_PER_SECOND). */
  rateLimitPerSecond: number & tags.Type<"uint32">;
  /** Token bucket size: messages accepted at once after a quiet spell (env RATE_LIMIT_BURST). */
  rateLimitBurst: Positive;
  /** Slow clients: whole headers within, whole request within, idle keep-alive, ms (env INGEST_HEADERS_TIMEOUT_MS, INGEST_REQUEST_TIMEOUT_MS, INGEST_KEEPALIVE_TIMEOUT_MS). */
  headersTimeoutMs: Positive;
  requestTimeoutMs: Positive;
  keepAliveTimeoutMs: Positive;
  /**
   * A request's whole body must arrive within this many ms of its headers, else 408 and the
   * connection is closed (env INGEST_BODY_TIMEOUT_MS): a client that sends nothing or trickles
   * is dropped long before INGEST_REQUEST_TIMEOUT_MS.
   */
  bodyTimeoutMs: Positive;
  /** On SIGTERM, how long /readyz answers 503 while requests are still served, ms (env INGEST_DRAIN_DELAY_MS). */
  drainDelayMs: number & tags.Type<"uint32">;
  /**
   * Proxies you run in front of the ingest, each appending to X-Forwarded-For (env TRUST_PROXY:
   * a count; `true` is 1; 0 or unset ignores the header). The client address is the entry that
   * many hops from the right; entries left of it are whatever the client claimed.
   */
  trustedProxies: number & tags.Type<"uint32"> & tags.Maximum<16>;
  /**
   * Bytes held at once - request bodies being read plus records Kafka has not settled - before
   * answering 503 + Retry-After (env INGEST_MAX_INFLIGHT_BYTES). Memory is a few times this:
   * each body is held as bytes, text, parsed objects and records.
   */
  maxInflightBytes: Positive;
  /**
   * Processes serving the port (env INGEST_WORKERS; node:cluster). 1 runs no cluster; more puts
   * a primary in front that forks them and forwards SIGTERM. On Kubernetes keep 1 and scale pods.
   */
  workers: Positive & tags.Maximum<64>;
  /** Allowed browser origins for CORS, or `*` (env CORS_ORIGINS, comma-separated). */
  corsOrigins: Name[] & tags.MinItems<1>;
  /** How long records wait to be sent together, ms (env PRODUCE_LINGER_MS). */
  produceLingerMs: number & tags.Type<"uint32">;
  /** Most records in one sendBatch (env PRODUCE_MAX_BATCH). */
  produceMaxBatch: Positive;
  /** Deadline for the broker's ack of a request's records, ms; past it the answer is 503 (env PRODUCE_TIMEOUT_MS). */
  produceTimeoutMs: Positive;
  /** Retry-After seconds sent with a 503 (env RETRY_AFTER_SECONDS). */
  retryAfterSeconds: Positive;
  kafka: KafkaConfig;
}

/** Settings of the sink consumer. */
export interface SinkConfig {
  /** Consumer group (env SINK_GROUP_ID). */
  groupId: Name;
  /**
   * Records held - rows and dead letters - all partitions together, that trigger a flush (env
   * SINK_BATCH_RECORDS; SINK_BATCH_ROWS, its former name, is read when it is not set).
   */
  batchRecords: Positive;
  /** Bytes of record values held, all partitions together, that trigger a flush (env SINK_BATCH_BYTES). */
  batchBytes: Positive;
  /** Oldest row's age that triggers a flush, ms (env SINK_BATCH_WAIT_MS). */
  batchWaitMs: Positive;
  /**
   * Least bytes a fetch waits for, and how long at most, ms (env SINK_FETCH_MIN_BYTES,
   * SINK_FETCH_MAX_WAIT_MS; Kafka's fetch.min.bytes and fetch.max.wait.ms). Fewer, larger
   * fetches: at 23K events/s the sink's CPU per event fell from 15.1 to 9.8 µs (docs/PERFORMANCE.md).
   */
  fetchMinBytes: Positive;
  fetchMaxWaitMs: Positive;
  /** Insert retry backoff: first and largest wait, ms (env SINK_RETRY_MIN_MS, SINK_RETRY_MAX_MS). */
  retryMinMs: Positive;
  retryMaxMs: Positive;
  /**
   * Consumer group session timeout, ms (env SINK_SESSION_TIMEOUT_MS; Kafka's floor is 6000). A
   * sink that dies is replaced after this long; heartbeats go every tenth of it, at most 3 s.
   */
  sessionTimeoutMs: number & tags.Type<"uint32"> & tags.Minimum<6000>;
  /** How long a stop may wait for ClickHouse before giving up uncommitted, ms (env SINK_STOP_TIMEOUT_MS). */
  stopTimeoutMs: Positive;
  /** /healthz, /readyz and /metrics listen here (env SINK_HTTP_HOST, SINK_HTTP_PORT; 0 picks a free port). */
  httpHost: Name;
  httpPort: number & tags.Type<"uint32"> & tags.Maximum<65535>;
  /** pino level (env LOG_LEVEL). */
  logLevel: LogLevel;
  /** Fault-test hook (env SINK_CRASH_AT): SIGKILL itself just before or just after an insert. */
  crashAt: "" | "before-insert" | "after-insert";
  kafka: KafkaConfig;
  clickhouse: ClickHouseConfig;
}

/**
 * A topic's retention.ms: at least an hour (a smaller number is a slip, such as days written for
 * ms), or -1 to keep records for ever.
 */
export type RetentionMs = -1 | (number & tags.Type<"uint64"> & tags.Minimum<3_600_000>);

/**
 * retention.ms of the events and rejected topics and of the DLQ when setup creates them (30
 * days): long enough to outlast a sink or ClickHouse outage (a record past retention is gone
 * before it was stored) and Kafka's default of 7 days; short enough that a deleted user's records,
 * which sinks drop but which stay on the brokers until retention removes them, go within about a
 * month (docs/OPERATIONS.md, Kafka topic retention).
 */
export const DEFAULT_RETENTION_MS = 30 * 24 * 3_600_000;

/** Settings of the one-shot setup: topics and ClickHouse migrations. */
export interface SetupConfig {
  /** Partitions of a topic it creates (env KAFKA_TOPIC_PARTITIONS). */
  partitions: Positive;
  /**
   * Replicas of a topic it creates (env KAFKA_REPLICATION_FACTOR); absent = 3, or every broker
   * when the cluster has fewer (deploy/setup/topics.ts replicationFor).
   */
  replicationFactor?: Positive;
  /**
   * Replicas that must hold a record before an acks=all produce succeeds (env
   * KAFKA_MIN_INSYNC_REPLICAS, the topic's min.insync.replicas); absent = replicationFactor - 1, at least 1.
   */
  minInsyncReplicas?: Positive;
  /**
   * retention.ms of the events topic, the rejected topic and the DLQ, ms (env
   * KAFKA_EVENTS_RETENTION_MS, KAFKA_REJECTED_RETENTION_MS, KAFKA_DLQ_RETENTION_MS; -1 keeps
   * records for ever). Unset: DEFAULT_RETENTION_MS when setup creates the topic, and an existing
   * topic keeps its own. Set: also applied to an existing topic. The compacted suppressions
   * topic keeps every user's latest record for ever and has none.
   */
  eventsRetentionMs?: RetentionMs;
  rejectedRetentionMs?: RetentionMs;
  dlqRetentionMs?: RetentionMs;
  /** The sink's consumer group, whose coordinator setup waits for (env SINK_GROUP_ID). */
  groupId: Name;
  kafka: KafkaConfig;
  clickhouse: ClickHouseConfig;
}

/** Settings of `users delete|suppress|unsuppress` (deploy/commands/privacy.ts): setup's, and one wait. */
export interface PrivacyConfig extends SetupConfig {
  /**
   * How long a deletion waits for the sink to pass the offsets the topics had at the request
   * before its second pass, ms (env PRIVACY_SINK_WAIT_MS; 0 does not wait). A sink that is
   * stopped drops the user's records when it reads them.
   */
  sinkWaitMs: number & tags.Type<"uint32">;
}

/** The environment as given to a process. */
export type Env = Record<string, string | undefined>;

/** Parses KAFKA_* settings. */
export function kafkaConfig(env: Env): KafkaConfig {
  return {
    brokers: list(env.KAFKA_BROKERS ?? "127.0.0.1:9092"),
    topic: env.KAFKA_TOPIC ?? "events",
    dlqTopic: env.KAFKA_DLQ_TOPIC ?? "events-dlq",
    rejectedTopic: env.KAFKA_REJECTED_TOPIC ?? "events-rejected",
    suppressionsTopic: env.KAFKA_SUPPRESSIONS_TOPIC ?? "events-suppressions",
    maxMessageBytes: int(env.KAFKA_MAX_MESSAGE_BYTES, 1_000_000),
    clientId: env.KAFKA_CLIENT_ID ?? "segment-ingest",
  };
}

/** Parses CLICKHOUSE_* settings. */
export function clickhouseConfig(env: Env): ClickHouseConfig {
  return {
    url: env.CLICKHOUSE_URL ?? "http://127.0.0.1:8123",
    username: env.CLICKHOUSE_USER ?? "default",
    password: env.CLICKHOUSE_PASSWORD ?? "",
    database: env.CLICKHOUSE_DATABASE ?? "default",
    table: env.CLICKHOUSE_TABLE ?? "events",
    ...optional("retentionDays", env.RETENTION_DAYS),
    ...(env.CLICKHOUSE_CLUSTER ? { cluster: env.CLICKHOUSE_CLUSTER } : {}),
  };
}

/**
 * Parses and checks the ingest settings. Throws TypeGuardError on a bad value, and an Error
 * naming both settings and their values when two contradict each other (ingestContradiction):
 * among them INGEST_HEADERS_TIMEOUT_MS above INGEST_REQUEST_TIMEOUT_MS (node:http refuses to
 * create the server), and INGEST_KEEPALIVE_TIMEOUT_MS not below INGEST_HEADERS_TIMEOUT_MS (older
 * Node releases timed a kept-alive socket's wait for the next request's headers with the headers
 * timeout, so a longer keep-alive cut connections clients were reusing; Node 20.20 does not).
 */
export function ingestConfig(env: Env): IngestConfig {
  const config = typia.assert<IngestConfig>({
    host: env.INGEST_HOST ?? "127.0.0.1",
    port: int(env.INGEST_PORT, 3000),
    metricsHost: env.INGEST_METRICS_HOST ?? env.INGEST_HOST ?? "127.0.0.1",
    metricsPort: int(env.INGEST_METRICS_PORT, 3002),
    writeKeys: parseWriteKeys(list(env.WRITE_KEYS ?? "")),
    ...(env.WRITE_KEYS_FILE ? { writeKeysFile: env.WRITE_KEYS_FILE } : {}),
    ...(env.PUBLIC_URL ? { publicUrl: env.PUBLIC_URL } : {}),
    logLevel: (env.LOG_LEVEL ?? "info") as LogLevel,
    maxRequestBytes: int(env.MAX_REQUEST_BYTES, 500 * 1024),
    maxMessageBytes: int(env.MAX_MESSAGE_BYTES, 32 * 1024),
    maxBatchMessages: int(env.MAX_BATCH_MESSAGES, 2_500),
    maxJsonDepth: int(env.MAX_JSON_DEPTH, 64),
    rateLimitPerSecond: int(env.RATE_LIMIT_PER_SECOND, 100_000),
    rateLimitBurst: int(env.RATE_LIMIT_BURST, 200_000),
    headersTimeoutMs: int(env.INGEST_HEADERS_TIMEOUT_MS, 10_000),
    requestTimeoutMs: int(env.INGEST_REQUEST_TIMEOUT_MS, 30_000),
    keepAliveTimeoutMs: int(env.INGEST_KEEPALIVE_TIMEOUT_MS, 5_000),
    bodyTimeoutMs: int(env.INGEST_BODY_TIMEOUT_MS, 10_000),
    drainDelayMs: int(env.INGEST_DRAIN_DELAY_MS, 1_000),
    trustedProxies: env.TRUST_PROXY === "true" ? 1 : env.TRUST_PROXY === "false" ? 0 : int(env.TRUST_PROXY, 0),
    maxInflightBytes: int(env.INGEST_MAX_INFLIGHT_BYTES, 32 * 1024 * 1024),
    workers: int(env.INGEST_WORKERS, 1),
    corsOrigins: list(env.CORS_ORIGINS ?? "*"),
    produceLingerMs: int(env.PRODUCE_LINGER_MS, 1),
    produceMaxBatch: int(env.PRODUCE_MAX_BATCH, 10_000),
    produceTimeoutMs: int(env.PRODUCE_TIMEOUT_MS, 10_000),
    retryAfterSeconds: int(env.RETRY_AFTER_SECONDS, 5),
    kafka: kafkaConfig(env),
  });
  const contradiction = ingestContradiction(config);
  if (contradiction !== undefined) throw new Error(contradiction);
  return config;
}

/**
 * The first pair of ingest settings that contradict each other, as a message naming both
 * settings and their values; undefined if none. Pure.
 */
export function ingestContradiction(c: IngestConfig): string | undefined {
  // node:http's createServer throws ERR_OUT_OF_RANGE when headersTimeout > requestTimeout.
  if (c.headersTimeoutMs > c.requestTimeoutMs) {
    return `INGEST_HEADERS_TIMEOUT_MS (${c.headersTimeoutMs}) is above INGEST_REQUEST_TIMEOUT_MS (${c.requestTimeoutMs}): the headers are part of the request, and Node's HTTP server refuses to start`;
  }
  if (c.keepAliveTimeoutMs >= c.headersTimeoutMs) {
    return `INGEST_KEEPALIVE_TIMEOUT_MS (${c.keepAliveTimeoutMs}) must be below INGEST_HEADERS_TIMEOUT_MS (${c.headersTimeoutMs})`;
  }
  if (c.publicUrl !== undefined && !/^https?:\/\/[^/]+\/?$/.test(c.publicUrl))
    return `PUBLIC_URL (${c.publicUrl}) must be http(s)://host[:port]`;
  if (c.metricsPort === c.port) return `INGEST_METRICS_PORT (${c.metricsPort}) must differ from INGEST_PORT: /metrics is not public`;
  if (c.rateLimitPerSecond > 0 && c.rateLimitBurst < c.maxBatchMessages) {
    return `RATE_LIMIT_BURST (${c.rateLimitBurst}) is below MAX_BATCH_MESSAGES (${c.maxBatchMessages}): a full batch could never be accepted`;
  }
  if (c.maxMessageBytes > c.maxRequestBytes)
    return `MAX_MESSAGE_BYTES (${c.maxMessageBytes}) is above MAX_REQUEST_BYTES (${c.maxRequestBytes})`;
  if (c.maxInflightBytes < c.maxRequestBytes) {
    return `INGEST_MAX_INFLIGHT_BYTES (${c.maxInflightBytes}) is below MAX_REQUEST_BYTES (${c.maxRequestBytes}): no compressed request could be read`;
  }
  // A refused item's record holds up to MAX_MESSAGE_BYTES of raw JSON plus about 5 KB of reasons.
  if (c.maxMessageBytes + 8_192 > c.kafka.maxMessageBytes) {
    return `MAX_MESSAGE_BYTES (${c.maxMessageBytes}) does not fit in KAFKA_MAX_MESSAGE_BYTES (${c.kafka.maxMessageBytes})`;
  }
  if (c.produceTimeoutMs >= c.requestTimeoutMs) {
    return `PRODUCE_TIMEOUT_MS (${c.produceTimeoutMs}) must be below INGEST_REQUEST_TIMEOUT_MS (${c.requestTimeoutMs})`;
  }
  return undefined;
}

/** The first pair of sink settings that contradict each other, as a message; undefined if none. */
export function sinkContradiction(c: SinkConfig): string | undefined {
  if (c.retryMinMs > c.retryMaxMs) return `SINK_RETRY_MIN_MS (${c.retryMinMs}) is above SINK_RETRY_MAX_MS (${c.retryMaxMs})`;
  const reserved = tableNameConflict(c.clickhouse.table, c.clickhouse.cluster);
  if (reserved !== undefined) return reserved;
  return undefined;
}

/** Parses and checks the sink settings. Throws TypeGuardError on a bad value, Error on a contradiction. */
export function sinkConfig(env: Env): SinkConfig {
  const config = typia.assert<SinkConfig>({
    groupId: env.SINK_GROUP_ID ?? "events-sink",
    batchRecords: int(env.SINK_BATCH_RECORDS ?? env.SINK_BATCH_ROWS, 10_000),
    batchBytes: int(env.SINK_BATCH_BYTES, 16 * 1024 * 1024),
    batchWaitMs: int(env.SINK_BATCH_WAIT_MS, 1_000),
    fetchMinBytes: int(env.SINK_FETCH_MIN_BYTES, 256 * 1024),
    fetchMaxWaitMs: int(env.SINK_FETCH_MAX_WAIT_MS, 100),
    retryMinMs: int(env.SINK_RETRY_MIN_MS, 200),
    retryMaxMs: int(env.SINK_RETRY_MAX_MS, 10_000),
    sessionTimeoutMs: int(env.SINK_SESSION_TIMEOUT_MS, 30_000),
    stopTimeoutMs: int(env.SINK_STOP_TIMEOUT_MS, 20_000),
    httpHost: env.SINK_HTTP_HOST ?? "127.0.0.1",
    httpPort: int(env.SINK_HTTP_PORT, 3001),
    crashAt: (env.SINK_CRASH_AT ?? "") as SinkConfig["crashAt"],
    logLevel: (env.LOG_LEVEL ?? "info") as LogLevel,
    kafka: kafkaConfig(env),
    clickhouse: clickhouseConfig(env),
  });
  const contradiction = sinkContradiction(config);
  if (contradiction !== undefined) throw new Error(contradiction);
  return config;
}

/**
 * Parses and checks the setup settings. Throws TypeGuardError on a bad value (a retention that is
 * neither -1 nor at least an hour included).
 */
export function setupConfig(env: Env): SetupConfig {
  return typia.assert<SetupConfig>(setupFields(env));
}

/** Parses and checks the settings of `users ...`. Throws TypeGuardError on a bad value. */
export function privacyConfig(env: Env): PrivacyConfig {
  return typia.assert<PrivacyConfig>({ ...setupFields(env), sinkWaitMs: int(env.PRIVACY_SINK_WAIT_MS, 60_000) });
}

function setupFields(env: Env): SetupConfig {
  return {
    partitions: int(env.KAFKA_TOPIC_PARTITIONS, 3),
    ...optional("replicationFactor", env.KAFKA_REPLICATION_FACTOR),
    ...optional("minInsyncReplicas", env.KAFKA_MIN_INSYNC_REPLICAS),
    ...optional("eventsRetentionMs", env.KAFKA_EVENTS_RETENTION_MS),
    ...optional("rejectedRetentionMs", env.KAFKA_REJECTED_RETENTION_MS),
    ...optional("dlqRetentionMs", env.KAFKA_DLQ_RETENTION_MS),
    groupId: env.SINK_GROUP_ID ?? "events-sink",
    kafka: kafkaConfig(env),
    clickhouse: clickhouseConfig(env),
  } as SetupConfig;
}

/**
 * Parses write-key entries: `key=workspaceId` (the key is hashed here and not kept) or
 * `sha256:<hex>=workspaceId`. The last `=` splits, so a key may itself contain `=` (base64
 * padding). A malformed entry is kept with an empty field, which the guard then refuses by name.
 */
export function parseWriteKeys(entries: string[]): WriteKeyEntry[] {
  return entries.map((entry) => {
    const at = entry.lastIndexOf("=");
    const key = at < 0 ? entry : entry.slice(0, at).trim();
    const workspaceId = at < 0 ? "" : entry.slice(at + 1).trim();
    const hashed = /^sha256:([0-9a-fA-F]{64})$/.exec(key);
    return { sha256: hashed ? hashed[1]!.toLowerCase() : sha256(key), workspaceId };
  });
}

/**
 * The entries of a keys file: one per line, blank lines and `#` comments skipped. Throws
 * TypeGuardError naming the bad entry.
 */
export function parseKeysFile(text: string): WriteKeyEntry[] {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  return typia.assert<WriteKeyEntry[]>(parseWriteKeys(lines));
}

/** Lower-case hex SHA-256 of a key's UTF-8 bytes. */
export function sha256(writeKey: string): string {
  return createHash("sha256").update(writeKey, "utf8").digest("hex");
}

function list(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** `{ [name]: number }` when the variable is set and not blank, else `{}` (the setting is absent). */
function optional<K extends string>(name: K, text: string | undefined): Partial<Record<K, number>> {
  return text === undefined || text.trim() === "" ? {} : ({ [name]: int(text, 0) } as Record<K, number>);
}

/**
 * An integer setting: `fallback` when unset or blank, NaN (which the guard rejects) when the text
 * is not a whole number; `-1` is read as -1 (a guard refuses it where it means nothing).
 */
function int(text: string | undefined, fallback: number): number {
  if (text === undefined || text.trim() === "") return fallback;
  const trimmed = text.trim();
  if (trimmed === "-1") return -1;
  return /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
}
