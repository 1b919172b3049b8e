/**
 * Creates the events topic, the rejected topic, the DLQ and the (compacted) suppressions and destinations topics if missing, and waits for the sink group's coordinator.
 * Partition count and replication only apply on creation; an existing topic keeps them. Retention
 * (retention.ms) is set on creation, and on an existing topic when its setting is given.
 * Throws if Kafka is unreachable or the replication asked for cannot be had.
 */
import { ConfigResourceTypes, ConfigSource, type Admin, type Kafka } from "kafkajs";
import { DEFAULT_RETENTION_MS, DELIVERIES_RETENTION_MS, type SetupConfig } from "./config";
import { type KafkaConfig } from "../../schemas/config";
import { withAdmin } from "../../schemas/kafka/client";
import { pollUntil } from "../../schemas/runtime/poll";

/** Replication of the topics setup creates. */
export interface Replication {
  replicationFactor: number;
  minInsyncReplicas: number;
}

/**
 * The replication for a cluster of `brokers`: the configured values, else a replication factor
 * of 3 (every broker when there are fewer) and min.insync.replicas of one less (at least 1). So a
 * 3-broker cluster gets 3 and 2 (an acks=all produce then survives one broker down), a single
 * local broker 1 and 1. A contradiction is returned as a message naming the setting. Pure.
 * Kafka: https://kafka.apache.org/documentation/#topicconfigs_min.insync.replicas
 */
export function replicationFor(
  brokers: number,
  configured: Pick<SetupConfig, "replicationFactor" | "minInsyncReplicas">,
): { ok: true; replication: Replication } | { ok: false; message: string } {
  const replicationFactor = configured.replicationFactor ?? Math.max(1, Math.min(3, brokers));
  const minInsyncReplicas = configured.minInsyncReplicas ?? Math.max(1, replicationFactor - 1);
  if (replicationFactor > brokers)
    return { ok: false, message: `KAFKA_REPLICATION_FACTOR (${replicationFactor}) is above the ${brokers} broker(s) the cluster has` };
  if (minInsyncReplicas > replicationFactor)
    return {
      ok: false,
      message: `KAFKA_MIN_INSYNC_REPLICAS (${minInsyncReplicas}) is above the replication factor (${replicationFactor}): no produce could succeed`,
    };
  return { ok: true, replication: { replicationFactor, minInsyncReplicas } };
}

/** Settings of setup that ensureTopics uses. */
export type TopicSettings = Pick<
  SetupConfig,
  "partitions" | "replicationFactor" | "minInsyncReplicas" | "eventsRetentionMs" | "rejectedRetentionMs" | "dlqRetentionMs"
>;

/**
 * Ensures the topics exist, with `partitions` (the DLQ: 1), the replication replicationFor gives
 * for the cluster and their retention.ms (the setting, else DEFAULT_RETENTION_MS; the compacted
 * suppressions topic has none); resolves once their leaders are elected. An existing topic whose
 * retention setting is given gets that retention.ms (setTopicRetention). Returns the topics
 * created, those whose retention was changed, and the replication used. Throws Error naming the
 * setting when that replication cannot be had.
 */
export async function ensureTopics(
  kafka: Kafka,
  config: KafkaConfig,
  setup: TopicSettings,
): Promise<{ created: string[]; retentionChanged: string[]; replication: Replication }> {
  return withAdmin(kafka, async (admin) => {
    const { brokers } = await admin.describeCluster();
    const chosen = replicationFor(brokers.length, setup);
    if (!chosen.ok) throw new Error(chosen.message);
    const { replicationFactor, minInsyncReplicas } = chosen.replication;
    const existing = new Set(await admin.listTopics());
    const configEntries = [{ name: "min.insync.replicas", value: String(minInsyncReplicas) }];
    const retention = (ms: number | undefined) => [{ name: "retention.ms", value: String(ms ?? DEFAULT_RETENTION_MS) }];
    const topics = [
      { topic: config.topic, numPartitions: setup.partitions, retentionMs: setup.eventsRetentionMs },
      { topic: config.rejectedTopic, numPartitions: setup.partitions, retentionMs: setup.rejectedRetentionMs },
      { topic: config.dlqTopic, numPartitions: 1, retentionMs: setup.dlqRetentionMs },
      { topic: config.deliveriesTopic, numPartitions: setup.partitions, retentionMs: DELIVERIES_RETENTION_MS },
    ];
    const wanted = [
      ...topics.map(({ topic, numPartitions, retentionMs }) => ({
        topic,
        numPartitions,
        replicationFactor,
        configEntries: [...configEntries, ...retention(retentionMs)],
      })),
      // one record per user (per destination, per workspace's plan, per admin thing), the latest kept for ever: every process reads it whole at start
      ...[config.suppressionsTopic, config.destinationsTopic, config.plansTopic, config.adminTopic].map((topic) => ({
        topic,
        numPartitions: 1,
        replicationFactor,
        configEntries: [...configEntries, { name: "cleanup.policy", value: "compact" }],
      })),
    ].filter((t) => !existing.has(t.topic));
    if (wanted.length > 0) {
      await admin.createTopics({ topics: wanted, waitForLeaders: false });
      await waitForLeaders(
        admin,
        wanted.map((t) => t.topic),
      );
    }
    const retentionChanged: string[] = [];
    for (const { topic, retentionMs } of topics) {
      if (existing.has(topic) && retentionMs !== undefined && (await setTopicRetention(admin, topic, retentionMs)))
        retentionChanged.push(topic);
    }
    return { created: wanted.map((t) => t.topic), retentionChanged, replication: chosen.replication };
  });
}

/**
 * Sets retention.ms (ms; -1 keeps records for ever) on an existing topic, keeping its other
 * topic-level settings: kafkajs's alterConfigs replaces the whole set, so the set is read first
 * (describeConfigs) and written back with retention.ms in it. Resolves true when it changed the
 * topic, false when the topic already had that value. Throws on a Kafka error, and when the topic
 * has a sensitive setting, whose value Kafka does not disclose and which would be lost.
 */
export async function setTopicRetention(admin: Admin, topic: string, retentionMs: number): Promise<boolean> {
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
  });
  const own = (described.resources[0]?.configEntries ?? []).filter((e) => e.configSource === ConfigSource.TOPIC_CONFIG);
  if (own.some((e) => e.configName === "retention.ms" && e.configValue === String(retentionMs))) return false;
  const hidden = own.filter((e) => e.isSensitive);
  if (hidden.length > 0) {
    throw new Error(
      `topic ${topic} has sensitive settings (${hidden.map((e) => e.configName).join(", ")}) that rewriting its configuration would lose; set retention.ms by hand`,
    );
  }
  const configEntries = [
    ...own.filter((e) => e.configName !== "retention.ms").map((e) => ({ name: e.configName, value: e.configValue })),
    { name: "retention.ms", value: String(retentionMs) },
  ];
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries }] });
  return true;
}

/**
 * Polls the metadata until every partition of `topics` has a leader, or throws after `timeoutMs`.
 * On a cluster a broker answers "does not host this topic-partition" until the controller's
 * news reaches it, which kafkajs's own wait (createTopics waitForLeaders) does not outlast.
 */
async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 30_000): Promise<void> {
  let failure: unknown;
  const led = async (): Promise<true | undefined> => {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics });
      failure = undefined;
      return found.length === topics.length && found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))
        ? true
        : undefined;
    } catch (error) {
      failure = error;
      return undefined;
    }
  };
  if (await pollUntil(led, { intervalMs: 250, timeoutMs })) return;
  throw failure ?? new Error(`topics ${topics.join(", ")} have no leader after ${timeoutMs} ms`);
}

/**
 * Waits until the broker's coordinator for `groupId` answers. A new broker creates its offsets
 * topic on the first FindCoordinator request and answers COORDINATOR_NOT_AVAILABLE until it is
 * loaded; waiting here keeps the sink from meeting (and logging) that at its first start.
 * kafkajs retries the lookup (about 30 s here); throws when they are spent.
 */
export async function waitForGroupCoordinator(kafka: Kafka, groupId: string): Promise<void> {
  return withAdmin(
    kafka,
    async (admin) => {
      await admin.describeGroups([groupId]);
    },
    { retry: { retries: 8, maxRetryTime: 5_000 } },
  );
}
