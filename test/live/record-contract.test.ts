/**
 * The events topic as a contract (docs/EVENTS-TOPIC.md): the contract traffic
 * (test/support/contract-traffic.ts: every message type, batch and single routes, odd but valid
 * values, one refused item) is posted to a real ingest, what it produced is consumed from the real
 * topic by a group of this test's own, and every record (key, headers, value) is checked with Ajv
 * against the one schema file, schemas/events-record.schema.json. Then the check is shown to fail:
 * real records altered in memory, and one altered record produced to the topic and read back, are
 * refused. Needs the local stack (test/run.sh starts it).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Consumer, KafkaMessage } from "kafkajs";
import { LiveStack, waitFor } from "../support/harness";
import { contractTraffic, offsetTime, postTraffic, type ContractTraffic } from "../support/contract-traffic";
import { loadRecordSchema, recordChecker, schemaVersion, topicRecord, type TopicRecord } from "../support/record-contract";

const stack = new LiveStack();
const contract = suite("events topic contract (live ingest + Kafka)");
const schema = loadRecordSchema();
const check = recordChecker(schema);
const began = Date.now();
let traffic: ContractTraffic;
let consumer: Consumer | undefined;
/** Every record read from the events topic, in the order read. */
const read: KafkaMessage[] = [];
/** Where each was read (`partition/offset`): a record read again after a rebalance counts once. */
const positions = new Set<string>();

/** Starts the stack and this test's consumer, posts the traffic and waits until every accepted message was read. */
async function setUp(): Promise<void> {
  await stack.start();
  consumer = stack.kafka.consumer({ groupId: `test-contract-${stack.id}` });
  await consumer.connect();
  await consumer.subscribe({ topic: stack.env.KAFKA_TOPIC!, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      read.push(message);
      positions.add(`${partition}/${message.offset}`);
    },
  });
  traffic = contractTraffic(`contract-${stack.id}`, "test-key", began);
  await postTraffic(stack.base, "test-key", traffic);
  const keys = () => new Set(read.map((m) => m.key?.toString()));
  await waitFor(
    "every accepted message on the events topic",
    async () => (traffic.accepted.every((id) => keys().has(id)) ? true : undefined),
    30_000,
  );
}

contract.before(async () => {
  try {
    await setUp();
  } catch (error) {
    // uvu reports nothing when a before hook fails
    console.error(`record-contract: setup failed: ${String((error as Error).stack ?? error)}\n${stack.ingest?.output() ?? ""}`);
    throw error;
  }
});

contract.after(async () => {
  await consumer?.disconnect();
  await stack.stop();
});

/** The rows read, by message_id (the last read of each). */
const rows = () => new Map(read.map((m) => [m.key!.toString(), JSON.parse(m.value!.toString()) as Record<string, unknown>]));

contract("every record on the topic matches the schema: key = message_id, no header, the value's first key workspace_id", async () => {
  assert.is(schemaVersion(schema), 1);
  const { end } = await stack.groupLag(stack.env.KAFKA_TOPIC!, "none");
  assert.is(positions.size, end, "every record of the topic was read");
  assert.equal(
    [...new Set(read.map((m) => m.key!.toString()))].sort(),
    [...traffic.accepted].sort(),
    "the accepted messages, not the refused item",
  );
  for (const message of read) {
    const record = topicRecord(message);
    assert.equal(check(record), [], message.value!.toString());
    assert.is(record.key, (record.value as Record<string, unknown>).message_id);
    assert.equal(record.headers, {});
    assert.ok(message.value!.toString().startsWith('{"workspace_id":"ws-test",'), "workspace_id first");
    assert.not.ok(message.value!.toString().includes("test-key"), "the writeKey never reaches the topic");
  }
  assert.equal([...new Set(read.map((m) => topicRecord(m).value as { type: string }).map((v) => v.type))].sort(), [
    "alias",
    "group",
    "identify",
    "page",
    "screen",
    "track",
  ]);
});

contract("the values say what the contract documents of the odd messages", () => {
  const byId = rows();
  const id = (n: string) => `contract-${stack.id}-${n}`;
  const track = byId.get(id("b2"))!;
  assert.is(track.user_id, "42", "an id sent as a number is its decimal text");
  assert.is(track.original_timestamp, new Date(Date.parse(offsetTime(began - 60_000))).toISOString(), "the client's time, canonical");
  assert.is(track.traits, JSON.stringify("a track's traits as a string"), "a field the type lacks a column for is kept as sent");
  assert.equal(JSON.parse(track.extra as string), { name: "kept in extra", integrations: { All: true, Mixpanel: true } });
  const page = byId.get(id("b3"))!;
  assert.is(page.original_timestamp, undefined, "a time outside the window places nothing");
  assert.is(page.timestamp, page.received_at);
  assert.is(JSON.parse(page.extra as string).timestamp, "1975-03-02T00:00:00.000Z");
  assert.is(byId.get(id("b7"))!.user_id, "", "a blank userId is none");
  assert.is(byId.get(String(Number(`${began}7`)))!.type, "track");
  assert.ok(Array.isArray(byId.get(id("b9"))!.catalog_keys));
  assert.is(byId.get(id("b10"))!.catalog_keys, undefined, "the shape's key list is sent once");
  assert.is(byId.get(id("b10"))!.catalog_shape, byId.get(id("b9"))!.catalog_shape);
  const crawler = byId.get(id("s1"))!;
  assert.equal([crawler.is_bot, crawler.device_type], [1, "bot"]);
  const screen = byId.get(id("b4"))!;
  assert.equal([screen.os, screen.device_type, screen.country], ["iOS", "mobile", "US"]);
});

/** A consumed record with its value changed by `change`. */
function altered(message: KafkaMessage, change: (value: Record<string, unknown>) => void): TopicRecord {
  const record = topicRecord(message);
  const value = { ...(record.value as Record<string, unknown>) };
  change(value);
  return { ...record, value };
}

contract("the schema refuses a consumed record once altered, each way naming the field", () => {
  const message = read.find((m) => m.key!.toString() === `contract-${stack.id}-b2`)!;
  assert.equal(check(topicRecord(message)), [], "unaltered, it passes");
  const renamed = check(
    altered(message, (v) => {
      v.userId = v.user_id;
      delete v.user_id;
    }),
  ).join("\n");
  assert.match(renamed, /additional properties \(userId\)/);
  assert.match(renamed, /required property 'user_id'/);
  assert.match(
    check(altered(message, (v) => (v.timestamp = "2026-01-02T03:04:05.678+00:00"))).join("\n"),
    /\/value\/timestamp must match pattern/,
  );
  assert.match(check(altered(message, (v) => (v.properties = "[]"))).join("\n"), /\/value\/properties must match pattern/);
  assert.match(check({ ...topicRecord(message), headers: { "content-type": "application/json" } }).join("\n"), /\/headers must NOT have/);
});

contract("an altered record produced to the topic is read back and refused", async () => {
  const key = `contract-${stack.id}-altered`;
  const original = read.find((m) => m.key!.toString() === `contract-${stack.id}-s2`)!;
  const value = { ...(JSON.parse(original.value!.toString()) as Record<string, unknown>), message_id: key, received_at: undefined };
  const producer = stack.kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic: stack.env.KAFKA_TOPIC!, messages: [{ key, value: JSON.stringify(value), headers: { "x-trace": "1" } }] });
  } finally {
    await producer.disconnect();
  }
  const back = await waitFor("the altered record read back", async () => read.find((m) => m.key?.toString() === key));
  const errors = check(topicRecord(back)).join("\n");
  assert.match(errors, /required property 'received_at'/);
  assert.match(errors, /\/headers must NOT have additional properties \(x-trace\)/);
});

contract.run();
