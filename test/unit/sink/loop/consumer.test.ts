/**
 * The consumer loop's answer to a kafkajs crash (sink/loop/consumer.ts), with a stand-in for the
 * kafkajs Consumer object: only which calls the loop makes is checked here. The loop against a
 * real broker that goes away is fault scenario 1.
 */
import type { Consumer, EachBatchPayload } from "kafkajs";
import pino from "pino";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { fateOf, runLoop, type LoopDeps } from "../../../../sink/loop/consumer";
import { decode } from "../../../../sink/loop/decode";
import { sinkMetrics } from "../../../../sink/metrics";
import { consumerStandIn } from "../../../support/consumer-stand-in";

const standIn = consumerStandIn;

/** The loop over `consumer` with no-op writes, `overrides` replacing any of its deps. */
async function loop(consumer: Consumer, overrides: Partial<LoopDeps<Buffer>> = {}) {
  return runLoop<Buffer>({
    consumer,
    topic: "events",
    decode,
    insert: async () => {},
    probe: async () => {},
    sendDeadLetters: async () => {},
    batchRecords: 100,
    batchBytes: 1e6,
    batchWaitMs: 1000,
    retryMinMs: 5,
    retryMaxMs: 20,
    metrics: sinkMetrics(["events"]),
    log: pino({ level: "silent" }),
    ...overrides,
  });
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a crash kafkajs will not restart: the loop reconnects, with backoff, and runs again", async () => {
  const { calls, crash, consumer } = standIn(2);
  const running = await loop(consumer);
  try {
    assert.equal(calls, ["subscribe", "run"]);
    crash(false);
    await settle(200);
    assert.equal(calls, ["subscribe", "run", "connect", "connect", "connect", "subscribe", "run"]);
    assert.is(running.health.joined, false, "not ready until the group is joined again");
  } finally {
    await running.stop(1000);
  }
});

test("a crash kafkajs restarts itself is left to kafkajs; after stop nothing reconnects", async () => {
  const { calls, crash, consumer } = standIn();
  const running = await loop(consumer);
  try {
    crash(true);
    await settle(50);
    assert.equal(calls, ["subscribe", "run"]);
  } finally {
    await running.stop(1000);
  }
  crash(false);
  await settle(50);
  assert.equal(calls, ["subscribe", "run", "pause", "disconnect"]);
});

test("sink_write_failing is 1 while an insert is retried and 0 once it lands", async () => {
  const { consumer, runs } = standIn();
  const metrics = sinkMetrics(["events"]);
  let attempts = 0;
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const running = await loop(consumer, {
    insert: async () => {
      attempts++;
      if (attempts === 1) throw new Error("connect ECONNREFUSED"); // infrastructure: retried
      await gate;
    },
    batchRecords: 1,
    metrics,
  });
  const failing = async () => (await metrics.registry.getSingleMetric("sink_write_failing")!.get()).values.map((v) => v.value);
  try {
    assert.equal(await failing(), [0], "0 from the start");
    const message = {
      offset: "0",
      key: Buffer.from("m1"),
      value: Buffer.from('{"workspace_id":"ws1","message_id":"m1","received_at":"2026-11-26T10:00:00.000Z"}'),
      timestamp: String(Date.now()),
    };
    const payload = {
      batch: { topic: "events", partition: 0, messages: [message] },
      resolveOffset: () => {},
      heartbeat: async () => {},
      isRunning: () => true,
      isStale: () => false,
    } as unknown as EachBatchPayload;
    const batch = runs[0]!.eachBatch!(payload);
    await settle(100);
    assert.is(attempts, 2, "retried once, the retry under way");
    assert.equal(await failing(), [1], "1 while retrying");
    open();
    await batch;
    assert.equal(await failing(), [0], "0 once the insert landed");
  } finally {
    open();
    await running.stop(1000);
  }
});

test("a record's fate is decided in one place: undecodable to the DLQ with its reason, a dropped user's dropped, else a row", () => {
  const drops = (row: string) => row === "deleted-user";
  assert.equal(fateOf({ ok: false, reason: "not JSON" }, drops), { to: "dlq", reason: "not JSON" });
  assert.equal(fateOf({ ok: true, row: "deleted-user" }, drops), { to: "drop" });
  assert.equal(fateOf({ ok: true, row: "someone" }, drops), { to: "row", row: "someone" });
  assert.equal(fateOf({ ok: true, row: "deleted-user" }), { to: "row", row: "deleted-user" }, "no privacy list: nothing dropped");
});

test.run();
