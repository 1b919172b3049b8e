/**
 * The consumer loop's answer to a kafkajs crash (sink/consumer.ts), with a stand-in for the
 * kafkajs Consumer object: only which calls the loop makes is checked here. The loop against a
 * real broker that goes away is fault scenario 1.
 */
import { EventEmitter } from "node:events";
import type { Consumer } from "kafkajs";
import pino from "pino";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { runLoop } from "../sink/consumer";
import { decode } from "../sink/decode";
import { sinkMetrics } from "../sink/metrics";

/** Records the lifecycle calls; `failConnects` connects fail before one succeeds. */
function standIn(failConnects = 0) {
  const calls: string[] = [];
  const emitter = new EventEmitter();
  let connectsLeft = failConnects;
  const consumer = {
    events: { CRASH: "consumer.crash", GROUP_JOIN: "consumer.group_join" },
    on: (event: string, listener: (e: unknown) => void) => emitter.on(event, listener),
    connect: async () => {
      calls.push("connect");
      if (connectsLeft-- > 0) throw new Error("connect ECONNREFUSED");
    },
    subscribe: async () => void calls.push("subscribe"),
    run: async () => void calls.push("run"),
    pause: () => void calls.push("pause"),
    disconnect: async () => void calls.push("disconnect"),
    commitOffsets: async () => {},
  };
  const crash = (restart: boolean) =>
    emitter.emit("consumer.crash", { payload: { error: new Error("Failed to find group coordinator"), groupId: "g", restart } });
  return { calls, crash, consumer: consumer as unknown as Consumer };
}

async function loop(consumer: Consumer) {
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

test.run();
