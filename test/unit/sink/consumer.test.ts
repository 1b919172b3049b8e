/**
 * The consumer loop's answer to a kafkajs crash (sink/consumer.ts), with a stand-in for the
 * kafkajs Consumer object: only which calls the loop makes is checked here. The loop against a
 * real broker that goes away is fault scenario 1.
 */
import type { Consumer } from "kafkajs";
import pino from "pino";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { runLoop } from "../../../sink/consumer";
import { decode } from "../../../sink/decode";
import { sinkMetrics } from "../../../sink/metrics";
import { consumerStandIn } from "../../support/consumer-stand-in";

const standIn = consumerStandIn;

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
