/**
 * The settings every process shares (where Kafka and ClickHouse are, the topics, the table), and
 * how a setting is read from the environment. Each process reads its own settings from the
 * environment once at start (ingest/config.ts, sink/config.ts, deploy/setup/config.ts), checks
 * them with a typia guard and passes them down as arguments: nothing below main reads
 * process.env. A bad value throws at start (typia's TypeGuardError naming the field), never later.
 */
import { tags } from "typia";

/** A TCP port. */
export type Port = number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<65535>;
/** A whole number of at least 1. */
export type Positive = number & tags.Type<"uint32"> & tags.Minimum<1>;
/** A non-empty name. */
export type Name = string & tags.MinLength<1>;

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
   * Compacted topic of webhook destinations (env KAFKA_DESTINATIONS_TOPIC), one record per
   * destination (schemas/destinations.ts); the CLI writes it, every delivery process follows it.
   */
  destinationsTopic: Name;
  /**
   * Topic of delivery attempts (env KAFKA_DELIVERIES_TOPIC, kept a day: deploy/setup/config.ts): one
   * record per message per attempt (schemas/destinations.ts DeliveryReport), written by the
   * delivery processes for the live view; nothing else reads it.
   */
  deliveriesTopic: Name;
  /**
   * Compacted topic of tracking plans (env KAFKA_PLANS_TOPIC), one record per workspace
   * (schemas/plans.ts); `plans apply` writes it, every ingest reads it whole and follows it.
   */
  plansTopic: Name;
  /**
   * Compacted topic of write keys, admin tokens, key use and regulations (env KAFKA_ADMIN_TOPIC),
   * one record per thing (schemas/admin/records.ts); the admin API and the CLI write it, every
   * ingest reads it whole and follows it.
   */
  adminTopic: Name;
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
   * Days of events kept, by event_date, and of refused items, by receive day (env
   * RETENTION_DAYS; unset keeps them forever). Whole months of events are dropped once wholly
   * older: a TTL on current ClickHouse, the sink's hourly partition drop (and `npm run cli --
   * retention`) on 18.16; refused items by a row TTL, or on 18.16 the sink's daily deletion. At
   * most 36,500 (100 years), so `toDate(...) + N days` in the TTLs stays within current
   * ClickHouse's Date (up to 2149); a cutoff before 1970 deletes nothing (sink/upkeep/retention.ts).
   */
  retentionDays?: Positive & tags.Maximum<36500>;
  /**
   * The cluster (a name in the servers' remote_servers, env CLICKHOUSE_CLUSTER) over which setup
   * makes Replicated `_local` tables ON CLUSTER and Distributed tables under the usual names;
   * the sink then inserts with insert_distributed_sync=1. Unset: one server.
   */
  cluster?: Name;
}

/** pino's levels. */
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

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
    destinationsTopic: env.KAFKA_DESTINATIONS_TOPIC ?? "events-destinations",
    deliveriesTopic: env.KAFKA_DELIVERIES_TOPIC ?? "events-deliveries",
    plansTopic: env.KAFKA_PLANS_TOPIC ?? "events-plans",
    adminTopic: env.KAFKA_ADMIN_TOPIC ?? "events-admin",
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

/** A comma-separated setting as its non-blank entries, trimmed. */
export function list(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** `{ [name]: number }` when the variable is set and not blank, else `{}` (the setting is absent). */
export function optional<K extends string>(name: K, text: string | undefined): Partial<Record<K, number>> {
  return text === undefined || text.trim() === "" ? {} : ({ [name]: int(text, 0) } as Record<K, number>);
}

/**
 * An integer setting: `fallback` when unset or blank, NaN (which the guard rejects) when the text
 * is not a whole number; `-1` is read as -1 (a guard refuses it where it means nothing).
 */
export function int(text: string | undefined, fallback: number): number {
  if (text === undefined || text.trim() === "") return fallback;
  const trimmed = text.trim();
  if (trimmed === "-1") return -1;
  return /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
}

/**
 * A yes/no setting: true for `true`/`1`, false for `false`/`0` or unset/blank. Throws naming the
 * variable on any other text (a typo must not silently keep the default).
 */
export function bool(text: string | undefined, name: string): boolean {
  const trimmed = (text ?? "").trim().toLowerCase();
  if (trimmed === "" || trimmed === "false" || trimmed === "0") return false;
  if (trimmed === "true" || trimmed === "1") return true;
  throw new Error(`${name} must be true or false, not ${JSON.stringify(text)}`);
}
