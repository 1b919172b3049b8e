/**
 * Creates the events topic, the rejected topic, the DLQ and the (compacted) suppressions topic if missing, and waits for the sink group's coordinator.
 * Partition count and replication only apply on creation; an existing topic is left as it is.
 * Throws if Kafka is unreachable or the replication asked for cannot be had.
 */
import type { Admin, Kafka } from "kafkajs";
import type { KafkaConfig, SetupConfig } from "../schemas/config";

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

/**
 * Ensures the topics exist, with `partitions` (the DLQ: 1) and the replication replicationFor
 * gives for the cluster; resolves once their leaders are elected. Returns the topics created and
 * the replication used. Throws Error naming the setting when that replication cannot be had.
 */
export async function ensureTopics(
  kafka: Kafka,
  config: KafkaConfig,
  setup: Pick<SetupConfig, "partitions" | "replicationFactor" | "minInsyncReplicas">,
): Promise<{ created: string[]; replication: Replication }> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { brokers } = await admin.describeCluster();
    const chosen = replicationFor(brokers.length, setup);
    if (!chosen.ok) throw new Error(chosen.message);
    const { replicationFactor, minInsyncReplicas } = chosen.replication;
    const existing = new Set(await admin.listTopics());
    const configEntries = [{ name: "min.insync.replicas", value: String(minInsyncReplicas) }];
    const wanted = [
      { topic: config.topic, numPartitions: setup.partitions, replicationFactor, configEntries },
      { topic: config.rejectedTopic, numPartitions: setup.partitions, replicationFactor, configEntries },
      { topic: config.dlqTopic, numPartitions: 1, replicationFactor, configEntries },
      // one record per user, the latest kept for ever: every process reads it whole at start
      {
        topic: config.suppressionsTopic,
        numPartitions: 1,
        replicationFactor,
        configEntries: [...configEntries, { name: "cleanup.policy", value: "compact" }],
      },
    ].filter((t) => !existing.has(t.topic));
    if (wanted.length > 0) {
      await admin.createTopics({ topics: wanted, waitForLeaders: false });
      await waitForLeaders(
        admin,
        wanted.map((t) => t.topic),
      );
    }
    return { created: wanted.map((t) => t.topic), replication: chosen.replication };
  } finally {
    await admin.disconnect();
  }
}

/**
 * Polls the metadata until every partition of `topics` has a leader, or throws after `timeoutMs`.
 * On a cluster a broker answers "does not host this topic-partition" until the controller's
 * news reaches it, which kafkajs's own wait (createTopics waitForLeaders) does not outlast.
 */
async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics });
      if (found.length === topics.length && found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error(`topics ${topics.join(", ")} have no leader after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Waits until the broker's coordinator for `groupId` answers. A new broker creates its offsets
 * topic on the first FindCoordinator request and answers COORDINATOR_NOT_AVAILABLE until it is
 * loaded; waiting here keeps the sink from meeting (and logging) that at its first start.
 * kafkajs retries the lookup (about 30 s here); throws when they are spent.
 */
export async function waitForGroupCoordinator(kafka: Kafka, groupId: string): Promise<void> {
  const admin = kafka.admin({ retry: { retries: 8, maxRetryTime: 5_000 } });
  await admin.connect();
  try {
    await admin.describeGroups([groupId]);
  } finally {
    await admin.disconnect();
  }
}
