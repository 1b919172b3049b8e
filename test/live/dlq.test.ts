/**
 * The DLQ, live: `dlq replay` ends on a DLQ of several partitions of which some have nothing to
 * read (never written, emptied by retention, replayed before) and replays exactly the letters
 * there; the time of the oldest letter not yet replayed as the sink reads it; and the sink's
 * `sink_dlq_oldest_seconds` once it dead-letters a record.
 */
import { randomUUID } from "node:crypto";
import { ConfigResourceTypes } from "kafkajs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Message } from "../../schemas/messages";
import { messageRow } from "../../schemas/row";
import { DLQ_HEADERS } from "../../schemas/envelope";
import { oldestDeadLetterTime, replayGroupId } from "../../sink/monitors/dlq-progress";
import { LiveStack, sinkPort, waitFor } from "../support/harness";

// Flushes of 1,000 records: a full batch is flushed inside kafkajs's eachBatch, where kafkajs sends no heartbeat.
const stack = new LiveStack({ SINK_BATCH_RECORDS: "1000" });
const dlq = suite("dlq replay and age (live)");
/** A DLQ of four partitions of this suite's own. */
const multi = `test-dlq-multi-${stack.id}`;

dlq.before(async () => {
  await stack.start();
  const admin = stack.kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic: multi, numPartitions: 4, replicationFactor: 1 }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
});

dlq.after(async () => {
  const admin = stack.kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [multi] });
  } catch {
    // housekeeping only
  } finally {
    await admin.disconnect();
  }
  await stack.stop();
});

/** A dead letter as an earlier release's envelope (format 1) of a valid track message. */
function letter(messageId: string, partition: number, timestamp?: number) {
  const value = JSON.stringify({
    workspaceId: "ws-test",
    receivedAt: new Date().toISOString(),
    message: { type: "track", event: "Dead Letter", userId: "u-dlq", messageId, timestamp: new Date().toISOString() },
  });
  return { key: messageId, value, partition, ...(timestamp === undefined ? {} : { timestamp: String(timestamp) }) };
}

/** Writes letters straight to a DLQ topic, each once: idempotent, so a send retried after a slow answer is not written twice. */
async function deadLetter(topic: string, letters: ReturnType<typeof letter>[]): Promise<void> {
  const producer = stack.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: letters });
  } finally {
    await producer.disconnect();
  }
}

/** Runs `dlq replay` on `topic`; fails unless it ends, with code 0, within `deadlineMs`. Resolves with the count it logged. */
async function replay(topic: string, deadlineMs = 60_000): Promise<number> {
  const run = stack.spawn("deploy/cli.js", { KAFKA_DLQ_TOPIC: topic }, ["dlq", "replay"]);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    run.exited,
    new Promise<"deadline">((resolve) => (timer = setTimeout(() => resolve("deadline"), deadlineMs))),
  ]);
  clearTimeout(timer);
  if (outcome === "deadline") {
    run.child.kill("SIGKILL");
    await run.exited;
    assert.unreachable(`dlq replay still running after ${deadlineMs} ms:\n${run.output()}`);
  }
  assert.is(run.child.exitCode, 0, run.output());
  const line = run
    .output()
    .split("\n")
    .find((l) => l.includes("dead letters replayed"));
  assert.ok(line, run.output());
  return (JSON.parse(line!) as { replayed: number }).replayed;
}

dlq("dlq replay ends on partitions with nothing to read, and replays exactly the letters there", async () => {
  const kept = [randomUUID(), randomUUID(), randomUUID()];
  const gone = [randomUUID(), randomUUID()];
  const later = [randomUUID(), randomUUID()];
  // Partition 0: three letters; 1: none ever; 2: two letters retention deleted; 3: two letters.
  await deadLetter(multi, [...kept.map((id) => letter(id, 0)), ...gone.map((id) => letter(id, 2)), ...later.map((id) => letter(id, 3))]);
  const admin = stack.kafka.admin();
  await admin.connect();
  try {
    await admin.fetchTopicMetadata({ topics: [multi] }); // deleteTopicRecords needs it loaded
    await admin.deleteTopicRecords({ topic: multi, partitions: [{ partition: 2, offset: "-1" }] });
    const offsets = await admin.fetchTopicOffsets(multi);
    assert.equal(
      offsets.map((p) => [p.partition, p.low, p.high]).sort(),
      [
        [0, "0", "3"],
        [1, "0", "0"],
        [2, "2", "2"],
        [3, "0", "2"],
      ],
      "partition 2 is emptied (low == high), partition 1 never written",
    );
  } finally {
    await admin.disconnect();
  }

  assert.is(await replay(multi), 5, "the five letters there, each once");
  await stack.rowsLanded([...kept, ...later]);
  assert.is(await replay(multi), 0, "a second run finds nothing and ends");

  // One new letter on partition 3: partition 0, replayed to its end, has nothing to deliver.
  const fresh = randomUUID();
  await deadLetter(multi, [letter(fresh, 3)]);
  assert.is(await replay(multi), 1);
  await stack.rowsLanded([fresh]);
  await stack.marker();
  assert.equal(await stack.finalRows(gone), [], "letters deleted before the replay are not sent");
});

dlq("the time of the oldest letter not yet replayed: the record's own, to the second; none once replayed", async () => {
  const admin = stack.kafka.admin();
  await admin.connect();
  try {
    const read = oldestDeadLetterTime(admin, multi, replayGroupId(stack.env.SINK_GROUP_ID!));
    assert.is(await read(), undefined, "every letter of the previous test was replayed");
    const twoHoursAgo = Date.now() - 2 * 3_600_000;
    await deadLetter(multi, [letter(randomUUID(), 0, Date.now() - 1_800_000), letter(randomUUID(), 1, twoHoursAgo)]);
    const found = await read();
    assert.ok(found !== undefined && found <= twoHoursAgo && twoHoursAgo - found < 1_000, `found ${found}, wrote ${twoHoursAgo}`);
    assert.is(await read(), found, "the same while nothing is replayed");
    assert.is(await replay(multi), 2);
    assert.is(await read(), undefined);
  } finally {
    await admin.disconnect();
  }
});

dlq("dlq replay splits its sends under the target topic's max.message.bytes (review: a whole fetch was one send)", async () => {
  // Twelve letters of about 10 KB on one partition (one fetch, 120 KB) to an events topic of 64 KiB,
  // all of one key: one partition there too, so one record batch of 120 KB unless the sends are split.
  const ids = Array.from({ length: 12 }, () => randomUUID());
  const big = ids.map((id) => {
    const l = letter(id, 1);
    const envelope = JSON.parse(l.value) as { message: Record<string, unknown> };
    envelope.message.properties = { filler: "x".repeat(10_000) };
    return { ...l, key: "one-key", value: JSON.stringify(envelope) };
  });
  await deadLetter(multi, big);
  const admin = stack.kafka.admin();
  await admin.connect();
  const events = { type: ConfigResourceTypes.TOPIC, name: stack.env.KAFKA_TOPIC! };
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ ...events, configEntries: [{ name: "max.message.bytes", value: "65536" }] }],
    });
    assert.is(await replay(multi), 12);
    await stack.rowsLanded(ids);
  } finally {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ ...events, configEntries: [{ name: "max.message.bytes", value: "1048588" }] }],
    });
    await admin.disconnect();
  }
});

/** The value of `name{labels}` in Prometheus text, or undefined when there is no such series. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

dlq("sink_dlq_oldest_seconds is 0 while the DLQ is empty and above 0 once the sink dead-letters a record", async () => {
  const url = `http://127.0.0.1:${await sinkPort(stack.sink!)}/metrics`;
  const series = `sink_dlq_oldest_seconds{topic="${stack.env.KAFKA_DLQ_TOPIC}"}`;
  assert.is(sample(await (await fetch(url)).text(), series), 0);
  const producer = stack.kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic: stack.env.KAFKA_TOPIC!, acks: -1, messages: [{ key: "poison", value: "{not json" }] });
  } finally {
    await producer.disconnect();
  }
  const age = await waitFor("the age of the dead letter", async () => {
    const value = sample(await (await fetch(url)).text(), series);
    return value !== undefined && value > 0 ? value : undefined;
  });
  assert.ok(age < 60, `${age} s`);
  console.log(`\n  ${series} ${age} (a dead letter written ${age} s ago)`);
});

/** An events row (format 2) of a track message; `refused`: its catalog_shape is a string, which ClickHouse refuses (UInt64). */
function rowValue(messageId: string, refused: boolean): string {
  const now = new Date().toISOString();
  const stamp = { workspaceId: "ws-test", receivedAt: now, sentAt: null, originalTimestamp: null, timestamp: now, context: {} };
  const message = { type: "track", event: "Bisected", userId: "u-bisect", messageId } as unknown as Message;
  const row = messageRow(message, stamp);
  return JSON.stringify(refused ? { ...row, catalog_shape: "not a number" } : row);
}

dlq("a flush whose bisection outlasts the session timeout commits once and dead-letters each refused record once", async () => {
  // 3,000 rows, every 10th refused: three flushes of about 870 INSERTs each, each longer than the stack's 6 s session.
  const ids = Array.from({ length: 3_000 }, () => randomUUID());
  const messages = ids.map((id, i) => ({ key: id, value: rowValue(id, i % 10 === 0), partition: 0 }));
  const producer = stack.kafka.producer();
  await producer.connect();
  const began = Date.now();
  try {
    for (let i = 0; i < messages.length; i += 500)
      await producer.send({ topic: stack.env.KAFKA_TOPIC!, acks: -1, messages: messages.slice(i, i + 500) });
  } finally {
    await producer.disconnect();
  }
  const { end } = await stack.groupLag();
  await waitFor("the commit of the bisected flush", async () => ((await stack.groupLag()).committed >= end ? true : undefined), 120_000);
  const tookMs = Date.now() - began;
  await stack.rowsLanded(
    ids.filter((_, i) => i % 10 !== 0),
    2_700,
    30_000,
  );

  // Every insert letter on the DLQ, read to its end a second after the commit.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const sources: string[] = [];
  const consumer = stack.kafka.consumer({ groupId: `test-dlq-read-${randomUUID()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: stack.env.KAFKA_DLQ_TOPIC!, fromBeginning: true });
    let seen = 0;
    const { end: dlqEnd } = await stack.groupLag(stack.env.KAFKA_DLQ_TOPIC!, "none");
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen++;
        if (message.headers?.[DLQ_HEADERS.step]?.toString() === "insert") sources.push(message.headers[DLQ_HEADERS.source]!.toString());
      },
    });
    await waitFor("the DLQ read to its end", async () => (seen >= dlqEnd ? true : undefined), 30_000);
  } finally {
    await consumer.disconnect();
  }
  const sink = stack.sink!.output();
  assert.is(sources.length, 300, `each refused record dead-lettered once, not ${sources.length} letters`);
  assert.is(new Set(sources).size, 300);
  assert.not.ok(sink.includes("commit failed"), "no commit was refused");
  console.log(`\n  3,000 rows, 300 refused: committed ${tookMs} ms after the first send (session timeout 6 s), 300 letters`);
});

dlq.run();
