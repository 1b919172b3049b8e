/**
 * Creates the events topic and its DLQ if missing. Partition count only applies on creation;
 * an existing topic is left as it is. Throws if Kafka is unreachable.
 */
import type { Kafka } from "kafkajs";
import type { KafkaConfig } from "../schemas/config";

/** Ensures both topics exist; resolves once their leaders are elected. Returns the topics created. */
export async function ensureTopics(kafka: Kafka, config: KafkaConfig, partitions: number): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const wanted = [
      { topic: config.topic, numPartitions: partitions },
      { topic: config.dlqTopic, numPartitions: 1 },
    ].filter((t) => !existing.has(t.topic));
    if (wanted.length > 0) await admin.createTopics({ topics: wanted, waitForLeaders: true });
    return wanted.map((t) => t.topic);
  } finally {
    await admin.disconnect();
  }
}
