/**
 * Writes to the admin topic on a timer (schemas/admin/periodic.ts) with a stand-in send: each
 * write takes its items and sends their messages, a failed one is told and, when asked, its items
 * carried to the next, one write at a time (a tick or a write while one is under way sends
 * nothing), large writes split, the stop waiting for the write under way and writing once more
 * only when asked, the timer unref'd; through a stand-in producer, acks=all to the topic.
 */
import type { Producer, ProducerBatch } from "kafkajs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { PeriodicWrite, sendAdmin, type AdminMessage, type PeriodicDeps } from "../../../../schemas/admin/periodic";

/** The items to take, one list per write, then none. */
const taking = (lists: string[][]) => () => lists.shift() ?? [];

/** A writer of strings (message key `k:<item>`) over a stand-in send; `fail` rejects the sends begun while set, `hold` keeps them pending until released. */
function writer(take: (carried: string[]) => string[], options: Partial<PeriodicDeps<string>> = {}) {
  const sends: AdminMessage[][] = [];
  const carriedSeen: string[][] = [];
  const told: { written: string[][]; failed: [string[], string][] } = { written: [], failed: [] };
  const state = { fail: false, hold: false, release: () => undefined as void };
  const w = new PeriodicWrite<string>({
    send: async (messages) => {
      sends.push(messages);
      const fail = state.fail;
      if (state.hold) await new Promise<void>((resolve) => (state.release = resolve));
      if (fail) throw new Error("broker down");
    },
    everyMs: 3_600_000,
    take: (carried) => {
      carriedSeen.push([...carried]);
      return take(carried);
    },
    messages: (items) => items.map((item) => ({ key: `k:${item}`, value: JSON.stringify(item) })),
    onWritten: (items) => told.written.push(items),
    onFailed: (items, error) => told.failed.push([items, (error as Error).message]),
    ...options,
  });
  return { w, sends, carriedSeen, told, state };
}

const keysOf = (sends: AdminMessage[][]) => sends.map((s) => s.map((m) => m.key));

async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 5) {
    if (waited > 2_000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test("a write sends the messages of what it takes and tells it written; nothing taken, nothing sent", async () => {
  const { w, sends, told } = writer(taking([["a", "b"]]));
  await w.write();
  assert.equal(sends, [
    [
      { key: "k:a", value: '"a"' },
      { key: "k:b", value: '"b"' },
    ],
  ]);
  assert.equal(told.written, [["a", "b"]]);
  await w.write();
  assert.is(sends.length, 1, "nothing to take: no send");
  assert.equal(told.failed, []);
});

test("with carry, a failed write's items are handed to the next take; it is told, never thrown", async () => {
  const { w, sends, carriedSeen, told, state } = writer((carried) => [...carried, "n"], { carry: true });
  state.fail = true;
  await w.write();
  assert.equal(told.failed, [[["n"], "broker down"]]);
  state.fail = false;
  await w.write();
  assert.equal(carriedSeen, [[], ["n"]]);
  assert.equal(keysOf(sends), [["k:n"], ["k:n", "k:n"]]);
  await w.write();
  assert.equal(carriedSeen[2], [], "a write Kafka took carries nothing");
});

test("without carry, a failed write's items are not handed on", async () => {
  const { w, carriedSeen, told, state } = writer(() => ["x"]);
  state.fail = true;
  await w.write();
  await w.write();
  assert.equal(carriedSeen, [[], []]);
  assert.is(told.failed.length, 2);
});

test("one write at a time: a write or a tick while one is under way waits for it and sends nothing more", async () => {
  const { w, sends, state } = writer(() => ["x"], { everyMs: 5 });
  state.hold = true;
  const first = w.write();
  const second = w.write();
  w.start();
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.is(sends.length, 1, "ticks during the write send nothing");
  state.hold = false;
  state.release();
  await Promise.all([first, second]);
  await w.stop();
});

test("a write of more than perSend messages goes in several sends, one after another; a failed one stops the rest", async () => {
  const items = Array.from({ length: 5 }, (_, i) => String(i));
  const { w, sends } = writer(taking([items]), { perSend: 2 });
  await w.write();
  assert.equal(keysOf(sends), [["k:0", "k:1"], ["k:2", "k:3"], ["k:4"]]);
  const failing = writer(() => [], { perSend: 1 });
  failing.state.fail = true;
  let error: unknown;
  const tombstones = ["t1", "t2"].map((key) => ({ key, value: null }));
  await failing.w.send(tombstones).catch((e: unknown) => (error = e));
  assert.instance(error, Error, "send() rejects, for the owner to handle");
  assert.equal(keysOf(failing.sends), [["t1"]]);
});

test("the stop waits for the write under way, then with flushAtStop writes once more, taking what was carried", async () => {
  const next = taking([["a"], ["b"]]);
  const { w, sends, carriedSeen, told, state } = writer((carried) => [...carried, ...next()], { carry: true, flushAtStop: true });
  state.hold = true;
  state.fail = true;
  const writing = w.write();
  const stopping = w.stop();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.is(sends.length, 1, "the stop has not written beside the write under way");
  state.hold = false;
  state.fail = false;
  state.release();
  await Promise.all([writing, stopping]);
  assert.equal(told.failed, [[["a"], "broker down"]]);
  assert.equal(carriedSeen, [[], ["a"]]);
  assert.equal(keysOf(sends), [["k:a"], ["k:a", "k:b"]]);
  await w.write();
  assert.is(sends.length, 2, "nothing after the stop");
});

test("without flushAtStop the stop writes nothing; a stopped timer writes no more", async () => {
  const once = writer(() => ["x"]);
  await once.w.write();
  await once.w.stop();
  assert.is(once.sends.length, 1);
  const { w, sends } = writer(() => ["x"], { everyMs: 10 });
  w.start();
  await until(() => sends.length >= 2);
  await w.stop();
  const stopped = sends.length;
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.is(sends.length, stopped);
});

test("started, it writes every everyMs on a timer that keeps no process alive", async () => {
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
  const { w, sends } = writer(() => ["x"], { everyMs: 20 });
  const before = timers();
  w.start();
  const started = timers();
  await new Promise((resolve) => setTimeout(resolve, 110));
  await w.stop();
  assert.is(started, before, "unref'd");
  assert.ok(sends.length >= 3, `${sends.length} writes`);
});

test("sendAdmin sends through the producer to the topic, acks=all, the messages as given", async () => {
  const batches: ProducerBatch[] = [];
  const producer = { sendBatch: async (batch: ProducerBatch) => void batches.push(batch) } as unknown as Producer;
  const messages = [
    { key: "k", value: "{}" },
    { key: "t", value: null },
  ];
  await sendAdmin(producer, "admin-topic", 1_000)(messages);
  assert.equal(
    batches.map((b) => [b.acks, b.topicMessages]),
    [[-1, [{ topic: "admin-topic", messages }]]],
  );
});

test.run();
