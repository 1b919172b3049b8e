/**
 * Creates the events topic, the rejected topic and the DLQ if missing, and waits for the sink group's coordinator.
 * Partition count only applies on creation; an existing topic is left as it is. Throws if Kafka
 * is unreachable.
 */
import type { Kafka } from "kafkajs";
import type { KafkaConfig } from "../schemas/config";

/** Ensures the topics exist; resolves once their leaders are elected. Returns the topics created. */
export async function ensureTopics(kafka: Kafka, config: KafkaConfig, partitions: number): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const wanted = [
      { topic: config.topic, numPartitions: partitions },
      { topic: config.rejectedTopic, numPartitions: partitions },
      { topic: config.dlqTopic, numPartitions: 1 },
    ].filter((t) => !existing.has(t.topic));
    if (wanted.length > 0) await admin.createTopics({ topics: wanted, waitForLeaders: true });
    return wanted.map((t) => t.topic);
  } finally {
    await admin.disconnect();
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
