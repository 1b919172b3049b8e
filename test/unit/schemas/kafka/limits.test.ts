/**
 * Byte limits of Kafka sends (schemas/kafka/limits.ts): chunking, and the DLQ's chunked sends
 * (a fake producer).
 */
import { suite } from "uvu";
import { chunkByBytes, BATCH_SLACK_BYTES, recordBytes } from "../../../../schemas/kafka/limits";
import * as assert from "uvu/assert";
import { type Producer } from "kafkajs";
import { sendDeadLetters } from "../../../../sink/dlq";

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
