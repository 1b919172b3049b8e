/**
 * Byte limits of Kafka sends: chunking (pure), the DLQ's chunked sends (a fake producer), and the
 * topic's max.message.bytes read from the real broker.
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { BATCH_SLACK_BYTES, chunkByBytes, recordBytes, topicMaxMessageBytes } from "../schemas/kafka/limits";
import { kafkaConfig } from "../schemas/config";
import { sendDeadLetters } from "../sink/dlq";

const pure = suite("send chunks (pure)");

pure("chunks keep order and stay under the limit minus the batch slack; an oversized item stands alone", () => {
  const sizes = [300, 300, 300, 2_000, 100];
  const chunks = chunkByBytes(sizes, BATCH_SLACK_BYTES + 700, (n) => n);
  assert.equal(chunks, [[300, 300], [300], [2_000], [100]]);
  assert.equal(
    chunkByBytes([], 5_000, (n: number) => n),
    [],
  );
});

pure("a record's bytes count key, value (UTF-8) and headers", () => {
  const plain = recordBytes({ key: "k", value: "v" });
  assert.is(recordBytes({ key: "k", value: "é" }), plain + 1, "é is two UTF-8 bytes");
  assert.ok(recordBytes({ key: "k", value: "v", headers: { "dlq-reason": "x" } }) > plain + "dlq-reason".length);
});

pure("dead letters go out in sends under the DLQ topic's limit, every one of them", async () => {
  const sends: number[] = [];
  const producer = { send: async ({ messages }: { messages: unknown[] }) => void sends.push(messages.length) } as unknown as Producer;
  const letters = Array.from({ length: 10 }, (_, i) => ({
    partition: 0,
    offset: String(i),
    key: Buffer.from(`k${i}`),
    value: Buffer.alloc(30_000),
    reason: "refused",
    step: "insert" as const,
  }));
  await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 100_000 }, "events", letters, new Date());
  assert.equal(sends, [3, 3, 3, 1]);
});

pure.run();

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
