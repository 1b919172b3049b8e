/**
 * Byte limits of Kafka sends (schemas/kafka/limits.ts): chunking, and the DLQ's chunked sends
 * (a fake producer).
 */
import { suite } from "uvu";
import { chunkByBytes, BATCH_SLACK_BYTES, recordBytes, recordLimit } from "../../../../schemas/kafka/limits";
import { DLQ_HEADERS } from "../../../../schemas/envelope";
import * as assert from "uvu/assert";
import { type Producer } from "kafkajs";
import { MAX_REASON_CHARS, sendDeadLetters } from "../../../../sink/loop/dlq";

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

/** Kafka's default max.message.bytes (1 MiB + 12): the broker's and the producer's limit. */
const KAFKA_DEFAULT_LIMIT = 1_048_588;

type Sent = { key: Buffer | null; value: Buffer | null; headers: Record<string, string> };

/** A producer whose broker refuses, MESSAGE_TOO_LARGE as kafkajs reports it, a send whose records exceed `brokerLimit` less a batch header. */
function brokerOf(brokerLimit: number) {
  const sent: Sent[] = [];
  let sends = 0;
  const producer = {
    send: async ({ messages }: { messages: Sent[] }) => {
      sends++;
      const bytes = messages.reduce((sum, m) => sum + recordBytes(m), 0);
      if (bytes > brokerLimit - 61)
        throw Object.assign(new Error("The request included a message larger than the max message size the server will accept"), {
          name: "KafkaJSProtocolError",
          type: "MESSAGE_TOO_LARGE",
          retriable: false,
        });
      sent.push(...messages);
    },
  } as unknown as Producer;
  return { producer, sent, sends: () => sends };
}

/** An undecodable record as large as the events topic takes (recordLimit), dead-lettered at decode. */
function hugeLetter(offset: number) {
  const key = Buffer.from(`key-${offset}`);
  const value = Buffer.alloc(recordLimit(KAFKA_DEFAULT_LIMIT) - 64 - key.length, 0x7b); // "{{{{...": not JSON
  return { partition: 3, offset: String(offset), key, value, reason: "invalid JSON: Expected property name", step: "decode" as const };
}

pure("a dead letter over the DLQ's limit has its value cut to fit, with its key, source and original size kept (review)", async () => {
  const broker = brokerOf(KAFKA_DEFAULT_LIMIT);
  const letter = hugeLetter(7);
  await sendDeadLetters(broker.producer, { topic: "dlq", maxMessageBytes: KAFKA_DEFAULT_LIMIT }, "events", [letter], new Date());
  assert.is(broker.sends(), 1, "sent once, not refused");
  const [out] = broker.sent;
  assert.ok(out && recordBytes(out) <= recordLimit(KAFKA_DEFAULT_LIMIT));
  assert.equal(out!.key, letter.key);
  assert.is(out!.headers[DLQ_HEADERS.source], "events/3/7");
  assert.is(out!.headers[DLQ_HEADERS.cut], String(letter.value.length));
  assert.ok(
    out!.value!.length < letter.value.length && letter.value.subarray(0, out!.value!.length).equals(out!.value!),
    "its first bytes",
  );
  console.log(`\n  a ${letter.value.length}-byte undecodable record: letter value cut to ${out!.value!.length} bytes`);
});

pure(
  "a DLQ topic whose limit is lower than the sink read: cut again under half, each letter sent once; never retried for ever",
  async () => {
    const broker = brokerOf(200_000);
    const letters = [hugeLetter(1), { ...hugeLetter(2), value: Buffer.from("{bad") }, hugeLetter(3)];
    await sendDeadLetters(broker.producer, { topic: "dlq", maxMessageBytes: KAFKA_DEFAULT_LIMIT }, "events", letters, new Date());
    assert.equal(
      broker.sent.map((m) => m.headers[DLQ_HEADERS.source]),
      ["events/3/1", "events/3/2", "events/3/3"],
    );
    assert.is(broker.sent[1]!.headers[DLQ_HEADERS.cut], undefined, "a letter that fits is not cut");
    const nothing = brokerOf(1_000); // refuses every send
    const error = await sendDeadLetters(
      nothing.producer,
      { topic: "dlq", maxMessageBytes: KAFKA_DEFAULT_LIMIT },
      "events",
      letters,
      new Date(),
    ).then(
      () => undefined,
      (e: unknown) => e as { type?: string },
    );
    assert.is(error?.type, "MESSAGE_TOO_LARGE");
    assert.ok(nothing.sends() <= 10, `${nothing.sends()} sends, then thrown`);
  },
);

pure("a dead letter's reason is cut to MAX_REASON_CHARS: a reason as large as the record still fits the DLQ", async () => {
  const broker = brokerOf(KAFKA_DEFAULT_LIMIT);
  const letter = { ...hugeLetter(9), reason: `not an envelope: $input.message["${"k".repeat(900_000)}"] expected string` };
  await sendDeadLetters(broker.producer, { topic: "dlq", maxMessageBytes: KAFKA_DEFAULT_LIMIT }, "events", [letter], new Date());
  assert.is(broker.sends(), 1);
  assert.is(broker.sent[0]!.headers[DLQ_HEADERS.reason]!.length, MAX_REASON_CHARS);
});

pure.run();
