/**
 * Dead letters to the DLQ topic (sink/loop/dlq.ts), with a recording stand-in for the kafkajs producer:
 * which records go in which send and in what order, that no send exceeds the topic's limit, the
 * headers naming the source and the reason, how an oversized letter or reason is cut, and what
 * happens when the broker refuses a send as too large or for another cause.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { Producer } from "kafkajs";
import type { DeadLetter } from "../../../../sink/loop/batch";
import { recordBytes } from "../../../../schemas/kafka/limits";
import { MAX_REASON_CHARS, MIN_SEND_BYTES, fitLetter, sendDeadLetters } from "../../../../sink/loop/dlq";

/** A record as the producer is handed it. */
type Sent = { key: Buffer | null; value: Buffer | null; headers: Record<string, string> };

/** More sends than any test here needs. */
const MAX_SENDS = 50;

/** One call of producer.send: its arguments and whether the stand-in accepted it. */
interface SendCall {
  topic: string;
  acks: number | undefined;
  messages: Sent[];
  accepted: boolean;
}

/**
 * A producer whose `send` records every call, and throws what `refuse` returns for it (nothing:
 * accepted). Nothing else of kafkajs's Producer is there, so any other call fails the test. Past
 * MAX_SENDS calls it throws a plain error, so a send retried without end fails instead of hanging.
 */
function producerStandIn(refuse: (messages: Sent[], call: number) => unknown = () => undefined) {
  const calls: SendCall[] = [];
  const producer = {
    send: async ({ topic, acks, messages }: { topic: string; acks?: number; messages: Sent[] }) => {
      if (calls.length >= MAX_SENDS) throw new Error(`more than ${MAX_SENDS} sends`);
      const error = refuse(messages, calls.length);
      calls.push({ topic, acks, messages, accepted: error === undefined });
      if (error !== undefined) throw error;
      return [];
    },
  } as unknown as Producer;
  /** The records the stand-in accepted, in the order sent. */
  const delivered = () => calls.filter((c) => c.accepted).flatMap((c) => c.messages);
  return { producer, calls, delivered };
}

/** kafkajs's error for a send over the topic's max.message.bytes. */
const tooLarge = () =>
  Object.assign(new Error("The request included a message larger than the max message size the server will accept"), {
    name: "KafkaJSProtocolError",
    type: "MESSAGE_TOO_LARGE",
    retriable: false,
  });

/** Refuses as too large any send whose records take more than `maxBytes` together. */
const refuseOver = (maxBytes: number) => (messages: Sent[]) =>
  messages.reduce((sum, m) => sum + recordBytes(m), 0) > maxBytes ? tooLarge() : undefined;

const NOW = new Date("2026-03-01T12:00:00.000Z");

/**
 * A letter from partition `partition` at `offset`, key `k<offset>`, a value of `valueBytes` bytes
 * (0, 1, 2, ... 250, 0, ...: a cut keeps a recognisable start), reason "bad", step "insert". Sent
 * from topic "events" at NOW with offset and partition under 10, its record takes valueBytes + 145
 * bytes: 32 overhead, 2 key, and headers dlq-reason 10+3+8, dlq-step 8+6+8, dlq-time 8+24+8,
 * dlq-source 10+10+8.
 */
function letter(offset: number, valueBytes: number, partition = 0): DeadLetter {
  const value = Buffer.alloc(valueBytes);
  for (let i = 0; i < valueBytes; i++) value[i] = i % 251;
  return { partition, offset: String(offset), key: Buffer.from(`k${offset}`), value, reason: "bad", step: "insert" };
}

const sources = (records: Sent[]) => records.map((r) => r.headers["dlq-source"]);

test("the send limits: MIN_SEND_BYTES is the batch slack plus 4 KiB, a reason at most 1,000 characters", () => {
  assert.is(MIN_SEND_BYTES, 5_120);
  assert.is(MAX_REASON_CHARS, 1_000);
});

test("no letters: nothing is sent", async () => {
  const { producer, calls } = producerStandIn();
  await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 1_048_588 }, "events", [], NOW);
  assert.is(calls.length, 0);
});

test("a letter goes out with its key and value as read and headers naming the reason, step, time and source", async () => {
  const { producer, calls } = producerStandIn();
  const value = Buffer.from("{not json");
  const letters: DeadLetter[] = [
    { partition: 11, offset: "123456789012", key: Buffer.from("user-7"), value, reason: "invalid JSON", step: "decode" },
    { partition: 0, offset: "0", key: null, value: null, reason: "no value", step: "decode" },
  ];
  await sendDeadLetters(producer, { topic: "events-dlq", maxMessageBytes: 1_048_588 }, "rejected", letters, NOW);
  assert.is(calls.length, 1, "both in one send");
  assert.is(calls[0]!.topic, "events-dlq");
  assert.is(calls[0]!.acks, -1, "acks=all");
  const [first, second] = calls[0]!.messages;
  assert.ok(first!.key?.equals(Buffer.from("user-7")));
  assert.ok(first!.value?.equals(Buffer.from("{not json")));
  assert.equal(first!.headers, {
    "dlq-reason": "invalid JSON",
    "dlq-step": "decode",
    "dlq-time": "2026-03-01T12:00:00.000Z",
    "dlq-source": "rejected/11/123456789012",
  });
  assert.is(second!.key, null);
  assert.is(second!.value, null);
  assert.is(second!.headers["dlq-source"], "rejected/0/0");
  assert.is(second!.headers["dlq-cut"], undefined);
});

test("letters go out in order, in sends filled up to the limit less the 1,024-byte slack and no further", async () => {
  // Seven records of 1,145 bytes: a limit of 4,459 leaves 3,435 bytes, exactly three of them.
  const letters = Array.from({ length: 7 }, (_, i) => letter(i, 1_000, i % 2));
  const exact = producerStandIn();
  await sendDeadLetters(exact.producer, { topic: "dlq", maxMessageBytes: 4_459 }, "events", letters, NOW);
  assert.is(recordBytes(exact.calls[0]!.messages[0]!), 1_145, "the record size this test is built on");
  assert.equal(
    exact.calls.map((c) => sources(c.messages)),
    [["events/0/0", "events/1/1", "events/0/2"], ["events/1/3", "events/0/4", "events/1/5"], ["events/0/6"]],
  );
  // One byte less: three no longer fit.
  const tight = producerStandIn();
  await sendDeadLetters(tight.producer, { topic: "dlq", maxMessageBytes: 4_458 }, "events", letters, NOW);
  assert.equal(
    tight.calls.map((c) => c.messages.length),
    [2, 2, 2, 1],
  );
  for (const call of tight.calls) assert.ok(call.messages.reduce((sum, m) => sum + recordBytes(m), 0) <= 3_434);
  assert.equal(sources(tight.delivered()), sources(exact.delivered()), "every letter once, same order");
  assert.is(
    tight.delivered().some((m) => m.headers["dlq-cut"] !== undefined),
    false,
    "none cut",
  );
});

test("a reason is cut to 1,000 characters, never between the halves of a surrogate pair", async () => {
  const { producer, delivered } = producerStandIn();
  const reasons = ["r".repeat(1_500), "a".repeat(999) + "\u{1F40E}" + "b".repeat(10), "c".repeat(1_000)];
  const letters = reasons.map((reason, i) => ({ ...letter(i, 10), reason }));
  await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 1_048_588 }, "events", letters, NOW);
  const sent = delivered().map((m) => m.headers["dlq-reason"]);
  assert.is(sent[0], "r".repeat(1_000));
  assert.is(sent[1], "a".repeat(999), "the horse is dropped whole");
  assert.is(sent[2], "c".repeat(1_000), "a reason of exactly 1,000 is kept whole");
});

test("a letter over the record limit goes out with its value's first bytes and dlq-cut naming the original size", async () => {
  // Limit 3,024: records up to 2,000 bytes. A 3,000-byte value (a 3,145-byte record) is cut; the small one is not.
  const { producer, calls } = producerStandIn();
  const big = letter(1, 3_000);
  await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 3_024 }, "events", [letter(0, 100), big], NOW);
  assert.equal(
    calls.map((c) => sources(c.messages)),
    [["events/0/0"], ["events/0/1"]],
    "the cut letter does not fit beside the small one",
  );
  const small = calls[0]!.messages[0]!;
  assert.is(small.value!.length, 100);
  assert.is(small.headers["dlq-cut"], undefined);
  const cut = calls[1]!.messages[0]!;
  assert.is(cut.headers["dlq-cut"], "3000");
  assert.ok(recordBytes(cut) <= 2_000, `${recordBytes(cut)} bytes`);
  // With the 19-byte dlq-cut header, 1,836 bytes of value would fit exactly; at most the record overhead less.
  assert.ok(cut.value!.length <= 1_836 && cut.value!.length >= 1_804, `${cut.value!.length} bytes kept`);
  assert.ok(cut.value!.equals(big.value!.subarray(0, cut.value!.length)), "its first bytes");
  assert.ok(cut.key!.equals(Buffer.from("k1")));
  assert.is(cut.headers["dlq-reason"], "bad");
  assert.is(cut.headers["dlq-source"], "events/0/1");
  assert.is(cut.headers["dlq-step"], "insert");
});

test("fitLetter: a letter at the limit is returned as is; one byte over is cut, its headers kept, the original untouched", () => {
  // 32 overhead + 1 key + 2,000 value + dlq-reason header 10+1+8 = 2,052 bytes.
  const record = { key: Buffer.from("k"), value: Buffer.alloc(2_000, 0x7b), headers: { "dlq-reason": "x" } };
  assert.is(fitLetter(record, 2_052), record);
  const cut = fitLetter(record, 2_051);
  assert.is.not(cut, record);
  assert.equal(cut.headers, { "dlq-reason": "x", "dlq-cut": "2000" });
  assert.ok(recordBytes(cut) <= 2_051, `${recordBytes(cut)} bytes`);
  // 2,051 less 32 + 1 + 19 + 19 leaves room for 1,980 bytes of value.
  assert.ok(cut.value!.length <= 1_980 && cut.value!.length >= 1_948, `${cut.value!.length} bytes kept`);
  assert.is(cut.key, record.key);
  assert.equal(record.headers, { "dlq-reason": "x" }, "the letter given is not changed");
  assert.is(record.value.length, 2_000);
});

test("fitLetter: a letter without a value is never cut; one whose key alone is too big keeps it, with an empty value", () => {
  const noValue = { key: Buffer.alloc(5_000), value: null, headers: { "dlq-reason": "x" } };
  assert.is(fitLetter(noValue, 1_000), noValue);
  const bigKey = { key: Buffer.alloc(3_000), value: Buffer.alloc(10), headers: {} };
  const cut = fitLetter(bigKey, 1_000);
  assert.is(cut.value!.length, 0);
  assert.is(cut.key!.length, 3_000);
  assert.equal(cut.headers, { "dlq-cut": "10" });
});

test("a send refused as too large after others went through: only the rest is sent again, cut under half the limit", async () => {
  // Limit 40,000 (records up to 38,976): a 5,145-byte letter, then a 35,145-byte one, in two sends.
  // The broker takes no send over 30,000 bytes, so the second is refused and sent again under 20,000.
  const { producer, calls, delivered } = producerStandIn(refuseOver(30_000));
  await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 40_000 }, "events", [letter(0, 5_000), letter(1, 35_000)], NOW);
  assert.equal(
    calls.map((c) => [sources(c.messages), c.accepted]),
    [
      [["events/0/0"], true],
      [["events/0/1"], false],
      [["events/0/1"], true],
    ],
  );
  assert.equal(sources(delivered()), ["events/0/0", "events/0/1"], "each once");
  assert.is(calls[1]!.messages[0]!.headers["dlq-cut"], undefined, "it fitted the limit first read");
  const again = calls[2]!.messages[0]!;
  assert.is(again.headers["dlq-cut"], "35000");
  assert.ok(recordBytes(again) <= 18_976, `${recordBytes(again)} bytes, for a limit of 20,000`);
  // 18,976 less 32 + 2 + 111 + 20 (dlq-cut) leaves 18,811 bytes of value.
  assert.ok(again.value!.length <= 18_811 && again.value!.length >= 18_779, `${again.value!.length} bytes kept`);
});

test("a MESSAGE_TOO_LARGE wrapped by kafkajs (its cause) is recognised too", async () => {
  const wrapped = (messages: Sent[]) =>
    refuseOver(6_000)(messages) === undefined
      ? undefined
      : Object.assign(new Error("Number of retries exceeded"), { name: "KafkaJSNumberOfRetriesExceeded", cause: tooLarge() });
  const { producer, calls } = producerStandIn(wrapped);
  await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 12_000 }, "events", [letter(0, 8_000)], NOW);
  assert.equal(
    calls.map((c) => c.accepted),
    [false, true],
  );
  assert.is(calls[1]!.messages[0]!.headers["dlq-cut"], "8000");
  assert.ok(recordBytes(calls[1]!.messages[0]!) <= 4_976, "cut for a limit of 6,000");
});

test("refused as too large every time: halved down to MIN_SEND_BYTES, cut from the original each time, then thrown", async () => {
  let last: unknown;
  const { producer, calls } = producerStandIn(() => (last = tooLarge()));
  const error = await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 12_000 }, "events", [letter(0, 50_000)], NOW).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.is(error, last, "the last refusal is thrown");
  // Limits 12,000, 6,000, then 5,120 (not 3,000): records up to 10,976, 4,976 and 4,096 bytes.
  const sizes = calls.map((c) => recordBytes(c.messages[0]!));
  assert.is(sizes.length, 3, `sends of ${sizes.join(", ")} bytes`);
  assert.ok(sizes[0]! <= 10_976 && sizes[0]! > 4_976, String(sizes[0]));
  assert.ok(sizes[1]! <= 4_976 && sizes[1]! > 4_096, String(sizes[1]));
  assert.ok(sizes[2]! <= 4_096 && sizes[2]! > 4_000, String(sizes[2]));
  assert.equal(
    calls.map((c) => c.messages[0]!.headers["dlq-cut"]),
    ["50000", "50000", "50000"],
  );
});

test("a DLQ whose limit is MIN_SEND_BYTES already is not shrunk: the first refusal is thrown", async () => {
  const { producer, calls } = producerStandIn(() => tooLarge());
  const error = await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 5_120 }, "events", [letter(0, 100)], NOW).then(
    () => undefined,
    (e: unknown) => e as { type?: string },
  );
  assert.is(error?.type, "MESSAGE_TOO_LARGE");
  assert.is(calls.length, 1);
});

test("any other failed send is thrown at once, the sends after it not tried", async () => {
  const refused = Object.assign(new Error("Connection closed"), { name: "KafkaJSConnectionError", retriable: true });
  const { producer, calls } = producerStandIn((_messages, call) => (call === 1 ? refused : undefined));
  // Records of 4,145 bytes, three a send under a limit of 13,459 (above MIN_SEND_BYTES, so a halving could be tried).
  const letters = Array.from({ length: 7 }, (_, i) => letter(i, 4_000));
  const error = await sendDeadLetters(producer, { topic: "dlq", maxMessageBytes: 13_459 }, "events", letters, NOW).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.is(error, refused);
  assert.equal(
    calls.map((c) => [c.messages.length, c.accepted]),
    [
      [3, true],
      [3, false],
    ],
  );
});

test.run();
