/**
 * The topic's max.message.bytes read from the real broker (schemas/kafka/limits.ts).
 */
import { suite } from "uvu";
import { Kafka, logLevel } from "kafkajs";
import { kafkaConfig } from "../../schemas/config";
import { randomUUID } from "node:crypto";
import * as assert from "uvu/assert";
import { topicMaxMessageBytes } from "../../schemas/kafka/limits";

const live = suite("topic limit (live Kafka)");

live("the topic's max.message.bytes is read from the broker and the smaller limit kept", async () => {
  const kafka = new Kafka({ clientId: "limits-test", brokers: kafkaConfig(process.env).brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const topic = `test-limits-${randomUUID().slice(0, 8)}`;
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [{ topic, numPartitions: 1, configEntries: [{ name: "max.message.bytes", value: "200000" }] }],
      waitForLeaders: true,
    });
    assert.is(await topicMaxMessageBytes(kafka, topic, 1_000_000), 200_000);
    assert.is(await topicMaxMessageBytes(kafka, topic, 150_000), 150_000);
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect();
  }
});

live.run();
