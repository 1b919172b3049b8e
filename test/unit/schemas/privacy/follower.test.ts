/**
 * Following the suppressions topic (schemas/privacy/follower.ts), with stand-ins for kafkajs's
 * admin and consumer (test/support/consumer-stand-in.ts): the follower resolves only once every
 * partition that had records at its start is read to that end; a record read again after a
 * restart is skipped, so it never puts back an entry a later record replaced; a value that is
 * not an entry is logged and lifts the key's entry, as a tombstone does; a topic not read in
 * time fails the start and leaves nothing running. Against a real broker, with outages: fault
 * scenario 10 and test/live/privacy.test.ts.
 */
import type { EachMessagePayload, Kafka } from "kafkajs";
import pino from "pino";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { followSuppressions } from "../../../../schemas/privacy/follower";
import { entryKey, PrivacyList } from "../../../../schemas/privacy/list";
import { consumerStandIn, type ConsumerStandIn } from "../../../support/consumer-stand-in";

/** A Kafka whose topic's partitions end at `highs` (partition -> high watermark), and whose consumer is `standIn`. */
function kafkaOf(standIn: ConsumerStandIn, highs: number[]): Kafka {
  const admin = {
    connect: async () => {},
    disconnect: async () => {},
    fetchTopicOffsets: async () => highs.map((high, partition) => ({ partition, high: String(high), low: "0", offset: String(high) })),
  };
  return { admin: () => admin, consumer: () => standIn.consumer } as unknown as Kafka;
}

/** A log whose warnings are kept in `warnings` (their messages). */
function capturingLog() {
  const warnings: string[] = [];
  const log = pino({ level: "warn" }, { write: (line: string) => void warnings.push((JSON.parse(line) as { msg: string }).msg) });
  return { log, warnings };
}

/** The value of a user's entry on the topic. */
const entry = (userId: string, suppressed: boolean) => Buffer.from(JSON.stringify({ workspaceId: "w", userId, ids: [userId], suppressed }));

/** Hands one record to the consumer's eachMessage, as kafkajs would. */
async function deliver(standIn: ConsumerStandIn, partition: number, offset: number, key: string, value: Buffer | null): Promise<void> {
  const run = standIn.runs.at(-1)!;
  await run.eachMessage!({
    topic: "suppressions",
    partition,
    message: { offset: String(offset), key: Buffer.from(key), value, timestamp: "0", attributes: 0, headers: {} },
  } as unknown as EachMessagePayload);
}

/** Waits until the follower has started its consumer's run. */
async function running(standIn: ConsumerStandIn): Promise<void> {
  while (standIn.runs.length === 0) await new Promise((r) => setImmediate(r));
}

/** Whether `promise` has settled by the next turns of the event loop. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
}

test("it resolves only once each partition that had records is read to its end of the start; an empty topic resolves at once", async () => {
  const standIn = consumerStandIn();
  const list = new PrivacyList();
  const following = followSuppressions(kafkaOf(standIn, [2, 0, 1]), "suppressions", "ingest", list, capturingLog().log, 5_000);
  await running(standIn);
  await deliver(standIn, 0, 0, entryKey("w", "alice"), entry("alice", true));
  await deliver(standIn, 2, 0, entryKey("w", "bob"), entry("bob", true));
  assert.not.ok(await settled(following), "partition 0 is not read to its end (offset 1) yet");
  await deliver(standIn, 0, 1, entryKey("w", "carol"), entry("carol", true));
  assert.ok(await settled(following));
  assert.is(list.size, 3);
  assert.ok(list.drops("w", "alice", undefined, Date.now()));
  await (await following).stop();
  assert.equal(standIn.calls.slice(-1), ["disconnect"]);

  const empty = consumerStandIn();
  const none = await followSuppressions(kafkaOf(empty, [0]), "suppressions", "sink", new PrivacyList(), capturingLog().log, 5_000);
  await none.stop();
});

test("a record read again after a restart is skipped: it never puts back the entry a later record replaced", async () => {
  const standIn = consumerStandIn();
  const list = new PrivacyList();
  const following = followSuppressions(kafkaOf(standIn, [2]), "suppressions", "ingest", list, capturingLog().log, 5_000);
  await running(standIn);
  await deliver(standIn, 0, 0, entryKey("w", "alice"), entry("alice", true));
  await deliver(standIn, 0, 1, entryKey("w", "alice"), entry("alice", false)); // unsuppressed
  const { stop } = await following;
  assert.not.ok(list.drops("w", "alice", undefined, Date.now()));
  await deliver(standIn, 0, 0, entryKey("w", "alice"), entry("alice", true)); // the topic read from its start again
  assert.not.ok(list.drops("w", "alice", undefined, Date.now()), "the re-read of offset 0 must not suppress alice again");
  await deliver(standIn, 0, 2, entryKey("w", "alice"), entry("alice", true)); // a new request
  assert.ok(list.drops("w", "alice", undefined, Date.now()));
  await stop();
});

test("a value that is not an entry is logged and lifts the key's entry, as a tombstone does", async () => {
  const standIn = consumerStandIn();
  const list = new PrivacyList();
  const { log, warnings } = capturingLog();
  const following = followSuppressions(kafkaOf(standIn, [3]), "suppressions", "ingest", list, log, 5_000);
  await running(standIn);
  await deliver(standIn, 0, 0, entryKey("w", "alice"), entry("alice", true));
  await deliver(standIn, 0, 1, entryKey("w", "bob"), entry("bob", true));
  await deliver(standIn, 0, 2, entryKey("w", "alice"), Buffer.from("{not json"));
  const { stop } = await following;
  assert.equal(warnings, ["suppressions: record ignored"]);
  assert.not.ok(list.drops("w", "alice", undefined, Date.now()));
  assert.ok(list.drops("w", "bob", undefined, Date.now()));
  await deliver(standIn, 0, 3, entryKey("w", "bob"), null); // a tombstone: lifted, not logged
  assert.not.ok(list.drops("w", "bob", undefined, Date.now()));
  assert.is(warnings.length, 1);
  await stop();
});

test("a topic not read to its end in time fails the start, naming it, and leaves the consumer disconnected", async () => {
  const standIn = consumerStandIn();
  const following = followSuppressions(kafkaOf(standIn, [5]), "suppressions", "ingest", new PrivacyList(), capturingLog().log, 50);
  await running(standIn);
  await deliver(standIn, 0, 0, entryKey("w", "alice"), entry("alice", true));
  try {
    await following;
    assert.unreachable("the start should fail");
  } catch (error) {
    assert.match(String(error), /suppressions not read to its end within 50 ms/);
  }
  assert.equal(standIn.calls, ["connect", "subscribe", "run", "disconnect"]);
});

test.run();
