/**
 * A delivery process's health reports (sink/deliver/health.ts) with a stand-in send: one record
 * per destination run, under its own key (parseAdminRecord takes it back), a tombstone once a
 * destination is no longer run, a failed write logged once and its keys removed later all the
 * same, one write at a time, large writes split, every key removed at the stop, and the timer;
 * through a producer, each write to the admin topic acknowledged by all replicas.
 */
import type { Producer, ProducerBatch } from "kafkajs";
import pino from "pino";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parseAdminRecord, type DestinationHealthRecord } from "../../../../schemas/admin/records";
import { HEALTH_RECORDS_PER_SEND, HealthPublisher, healthRecords, newInstanceId, startHealth } from "../../../../sink/deliver/health";
import { RecentDeliveries } from "../../../../sink/deliver/window";

const T0 = Date.parse("2026-11-29T10:00:00.000Z");
const ID = "0123456789abcdef";
type Sent = { key: string; value: string | null }[];

/** A publisher over a stand-in send; `fail` makes the next sends reject. */
function publisher(recent: RecentDeliveries, options: { everyMs?: number } = {}) {
  const writes: Sent[] = [];
  const lines: string[] = [];
  const state = { fail: false, now: T0 };
  const p = new HealthPublisher({
    send: async (messages) => {
      if (state.fail) throw new Error("broker down");
      writes.push(messages);
    },
    recent,
    instanceId: ID,
    log: pino({ level: "warn" }, { write: (l: string) => lines.push(l) }),
    now: () => state.now,
    ...options,
  });
  return { p, writes, lines, state };
}

test("records: one per destination, believed under its own key only; an instance id is 16 hex", () => {
  const [record] = healthRecords(
    [{ destinationId: "d-1", workspaceId: "ws-1", delivered: 3, retried: 2, failed: 1, oldestWaitingSeconds: 12.34567 }],
    ID,
    new Date(T0),
  );
  const expected: DestinationHealthRecord = {
    kind: "destination-health",
    destinationId: "d-1",
    workspaceId: "ws-1",
    instanceId: ID,
    at: "2026-11-29T10:00:00.000Z",
    delivered: 3,
    retried: 2,
    failed: 1,
    oldestWaitingSeconds: 12.346,
  };
  assert.equal(record, expected);
  assert.equal(parseAdminRecord(`destination-health:d-1:${ID}`, JSON.stringify(record)), expected);
  assert.is(parseAdminRecord(`destination-health:d-2:${ID}`, JSON.stringify(record)), undefined, "not under another key");
  assert.match(newInstanceId(), /^[0-9a-f]{16}$/);
  assert.is.not(newInstanceId(), newInstanceId());
});

test("each write tells the destinations run now; one no longer run gets a tombstone once", async () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  recent.running("d-2", "ws-1");
  recent.count("d-1", "delivered", 5, T0);
  const { p, writes } = publisher(recent);
  await p.publish();
  assert.equal(
    writes[0]!.map((m) => m.key),
    [`destination-health:d-1:${ID}`, `destination-health:d-2:${ID}`],
  );
  assert.is((JSON.parse(writes[0]![0]!.value!) as DestinationHealthRecord).delivered, 5);
  recent.stopped("d-2");
  await p.publish();
  assert.equal(writes[1], [writes[1]![0]!, { key: `destination-health:d-2:${ID}`, value: null }]);
  assert.is(writes[1]![0]!.key, `destination-health:d-1:${ID}`);
  await p.publish();
  assert.equal(
    writes[2]!.map((m) => m.value === null),
    [false],
    "the tombstone is not written again",
  );
  assert.equal(p.keys, [`destination-health:d-1:${ID}`]);
});

test("a failed write is logged once until one succeeds; the keys it held are still removed later", async () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  const { p, writes, lines, state } = publisher(recent);
  state.fail = true;
  await p.publish();
  await p.publish();
  assert.is(lines.filter((l) => l.includes("destination health not reported")).length, 1, "logged once");
  assert.equal(p.keys, [`destination-health:d-1:${ID}`], "it may have landed: kept for removal");
  recent.stopped("d-1");
  state.fail = false;
  await p.publish();
  assert.equal(writes, [[{ key: `destination-health:d-1:${ID}`, value: null }]]);
  assert.equal(p.keys, []);
  state.fail = true;
  recent.running("d-1", "ws-1");
  await p.publish();
  assert.is(lines.filter((l) => l.includes("destination health not reported")).length, 2, "logged again after a success");
});

test("one write at a time: a publish while one is under way waits for it and writes nothing more", async () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  let release = () => undefined as void;
  let sends = 0;
  const p = new HealthPublisher({
    send: () => {
      sends++;
      return new Promise<void>((resolve) => (release = resolve));
    },
    recent,
    instanceId: ID,
    log: pino({ level: "silent" }),
  });
  const first = p.publish();
  const second = p.publish();
  release();
  await Promise.all([first, second]);
  assert.is(sends, 1);
});

test("a write of many destinations is split into sends of at most HEALTH_RECORDS_PER_SEND", async () => {
  const recent = new RecentDeliveries();
  const n = HEALTH_RECORDS_PER_SEND + 20;
  for (let i = 0; i < n; i++) recent.running(`d-${i}`, "ws-1");
  const { p, writes } = publisher(recent);
  await p.publish();
  assert.equal(
    writes.map((w) => w.length),
    [HEALTH_RECORDS_PER_SEND, 20],
  );
});

test("the stop removes every report of the process and writes nothing after; nothing to remove, nothing written", async () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  recent.running("d-2", "ws-2");
  const { p, writes } = publisher(recent);
  await p.publish();
  await p.stop();
  assert.equal(writes[1], [
    { key: `destination-health:d-1:${ID}`, value: null },
    { key: `destination-health:d-2:${ID}`, value: null },
  ]);
  await p.publish();
  assert.is(writes.length, 2, "no report after the stop");
  const idle = publisher(new RecentDeliveries());
  await idle.p.publish();
  await idle.p.stop();
  assert.is(idle.writes.length, 0);
});

test("a stop Kafka refuses is logged, never thrown", async () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  const { p, lines, state } = publisher(recent);
  await p.publish();
  state.fail = true;
  await p.stop();
  assert.ok(lines.some((l) => l.includes("not removed at the stop")));
});

test("started, it writes every everyMs", async () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  const { p, writes } = publisher(recent, { everyMs: 20 });
  p.start();
  await new Promise((r) => setTimeout(r, 110));
  await p.stop();
  assert.ok(writes.length >= 3, `${writes.length} writes`);
});

test("startHealth writes to the admin topic through the producer, acks=all, under a fresh instance id", async () => {
  const batches: ProducerBatch[] = [];
  const producer = { sendBatch: async (batch: ProducerBatch) => void batches.push(batch) } as unknown as Producer;
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  const p = startHealth(producer, "admin-topic", recent, pino({ level: "silent" }));
  await p.publish();
  await p.stop();
  assert.equal(
    batches.map((b) => [b.acks, b.topicMessages![0]!.topic, b.topicMessages![0]!.messages.length]),
    [
      [-1, "admin-topic", 1],
      [-1, "admin-topic", 1],
    ],
  );
  const [write, tombstone] = batches.map((b) => b.topicMessages![0]!.messages[0]!);
  assert.match(String(write!.key), /^destination-health:d-1:[0-9a-f]{16}$/);
  assert.equal([tombstone!.key, tombstone!.value], [write!.key, null]);
});

test.run();
