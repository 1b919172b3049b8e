/** Settings of the one-shot setup (topics, migrations) and of the `users ...` commands. */
import { userInfo } from "node:os";
import typia, { tags } from "typia";
import { ClickHouseConfig, Env, KafkaConfig, Name, Positive, clickhouseConfig, int, kafkaConfig, optional } from "../../schemas/config";

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
 * month (docs/RUNNING.md, Kafka topic retention).
 */
export const DEFAULT_RETENTION_MS = 30 * 24 * 3_600_000;

/**
 * retention.ms of the deliveries topic: a day. Its records (one per delivery attempt, with the
 * user's ids) serve only the live view, which reads the last 1,000 of each partition.
 */
export const DELIVERIES_RETENTION_MS = 24 * 3_600_000;

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
  /**
   * Who asks, kept in the audit row when `--by` is not given (env USER, else the OS account;
   * absent when neither exists, as for a container's arbitrary uid: `--by` is then required).
   */
  operator?: Name;
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
  const operator = env.USER || osAccount();
  return typia.assert<PrivacyConfig>({
    ...setupFields(env),
    sinkWaitMs: int(env.PRIVACY_SINK_WAIT_MS, 60_000),
    ...(operator ? { operator } : {}),
  });
}

/** The OS account's name; undefined when the uid has none (node:os userInfo throws then). */
function osAccount(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
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
