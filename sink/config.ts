/** Settings of the sink consumer, read from the environment once at start (schemas/config.ts). */
import typia, { tags } from "typia";
import { tableNameConflict } from "../schemas/clickhouse/tables";
import { ClickHouseConfig, Env, KafkaConfig, LogLevel, Name, Positive, clickhouseConfig, int, kafkaConfig } from "../schemas/config";

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
   * fetches: at 23K events/s the sink's CPU per event fell from 15.1 to 9.8 µs (CHANGELOG.md, Performance history).
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
  /**
   * How long a stop may wait for its last flush (ClickHouse's insert and Kafka's commit) before
   * giving up uncommitted, then for the Kafka clients' disconnects, ms (env SINK_STOP_TIMEOUT_MS).
   */
  stopTimeoutMs: Positive;
  /** /healthz, /readyz and /metrics listen here (env SINK_HTTP_HOST, SINK_HTTP_PORT; 0 picks a free port). */
  httpHost: Name;
  httpPort: number & tags.Type<"uint32"> & tags.Maximum<65535>;
  /** pino level (env LOG_LEVEL). */
  logLevel: LogLevel;
  /**
   * The longest random wait before each retention tick's deletion of refused items on 18.16, ms
   * (env SINK_RETENTION_JITTER_MS): replicas started together then do not each queue one (each
   * rewrites that table). 0 runs it at once; at most an hour, the step's interval.
   */
  retentionJitterMs: number & tags.Type<"uint32"> & tags.Maximum<3600000>;
  /** Fault-test hook (env SINK_CRASH_AT): SIGKILL itself just before or just after an insert. */
  crashAt: "" | "before-insert" | "after-insert";
  kafka: KafkaConfig;
  clickhouse: ClickHouseConfig;
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
    retentionJitterMs: int(env.SINK_RETENTION_JITTER_MS, 600_000),
    crashAt: (env.SINK_CRASH_AT ?? "") as SinkConfig["crashAt"],
    logLevel: (env.LOG_LEVEL ?? "info") as LogLevel,
    kafka: kafkaConfig(env),
    clickhouse: clickhouseConfig(env),
  });
  const contradiction = sinkContradiction(config);
  if (contradiction !== undefined) throw new Error(contradiction);
  return config;
}
