/**
 * sendWhole (schemas/kafka/producer.ts): a failed send is sent again in full, errors kafkajs deems
 * final are thrown at once, and the deadline ends the retries. A stand-in records each sendBatch;
 * the whole path against real brokers losing a leader is test/faults/cluster.
 */
import type { Producer, ProducerBatch } from "kafkajs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { sendWhole } from "../../../../schemas/kafka/producer";

const batch: ProducerBatch = {
  acks: -1,
  topicMessages: [
    {
      topic: "events",
      messages: [
        { key: "a", value: "1" },
        { key: "b", value: "2" },
      ],
    },
  ],
};

/** A producer whose sendBatch throws each of `failures` in turn, then succeeds. */
function standIn(failures: Error[]) {
  const sent: ProducerBatch[] = [];
  const producer = {
    sendBatch: async (b: ProducerBatch) => {
      sent.push(b);
      const failure = failures.shift();
      if (failure) throw failure;
      return [];
    },
  };
  return { sent, producer: producer as unknown as Producer };
}

const named = (name: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(name), { name, ...fields });

test("a send that failed after kafkajs's single attempt is sent again with every record", async () => {
  const { sent, producer } = standIn([named("KafkaJSNumberOfRetriesExceeded"), named("KafkaJSConnectionError", { retriable: true })]);
  await sendWhole(producer, batch, 5_000);
  assert.is(sent.length, 3);
  assert.ok(
    sent.every((b) => b === batch),
    "each attempt carries the whole batch",
  );
});

test("an error kafkajs deems final is thrown at once", async () => {
  const { sent, producer } = standIn([named("KafkaJSProtocolError", { retriable: false, type: "MESSAGE_TOO_LARGE" })]);
  const error = await sendWhole(producer, batch, 5_000).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.is(error?.name, "KafkaJSProtocolError");
  assert.is(sent.length, 1);
});

test("past the deadline the last error is thrown", async () => {
  const failures = Array.from({ length: 100 }, () => named("KafkaJSNumberOfRetriesExceeded"));
  const { sent, producer } = standIn(failures);
  const started = Date.now();
  const error = await sendWhole(producer, batch, 300).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.is(error?.name, "KafkaJSNumberOfRetriesExceeded");
  assert.ok(Date.now() - started < 1_000 && sent.length > 1 && sent.length < 10, `${sent.length} attempts`);
});

test.run();
