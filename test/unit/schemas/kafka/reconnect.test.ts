/**
 * The reconnect after a kafkajs crash (schemas/kafka/reconnect.ts), with a stand-in for the
 * kafkajs Consumer: only which calls are made is checked; and the offsets already passed on,
 * skipped when a consumer that commits nothing reads its topic again.
 */
import pino from "pino";
import { AppliedOffsets, type CrashableConsumer, reconnectOnCrash } from "../../../../schemas/kafka/reconnect";
import { consumerStandIn } from "../../../support/consumer-stand-in";
import { test } from "uvu";
import * as assert from "uvu/assert";

const log = pino({ level: "silent" });
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The stand-in (test/support/consumer-stand-in.ts) and a `begin` that may emit a crash of its own. */
function standIn(failConnects = 0) {
  const { consumer, calls, emitter, crash } = consumerStandIn(failConnects);
  let crashInBegin = 0;
  const begin = async () => {
    calls.push("begin");
    // kafkajs's run() resolves after a failed join, having emitted the crash itself.
    if (crashInBegin-- > 0) crash(false);
    else emitter.emit("consumer.group_join", {});
  };
  return { calls, crash, consumer: consumer as CrashableConsumer, begin, crashInBegin: (n: number) => (crashInBegin = n) };
}

const backoff = { minMs: 5, maxMs: 20 };

test("a crash kafkajs will not restart: connect and begin again, with backoff until connect succeeds", async () => {
  const { calls, crash, consumer, begin } = standIn(2);
  const keeper = reconnectOnCrash(consumer, begin, backoff, log, "suppressions");
  try {
    crash(false);
    await settle(150);
    assert.equal(calls, ["connect", "connect", "connect", "begin"]);
  } finally {
    keeper.stop();
  }
});

test("a crash during an attempt (the join failed inside run) schedules one more attempt, never two at once", async () => {
  const { calls, crash, consumer, begin, crashInBegin } = standIn();
  const keeper = reconnectOnCrash(consumer, begin, backoff, log, "suppressions");
  try {
    crashInBegin(2);
    crash(false);
    crash(false); // a second report while the first attempt waits: still one attempt
    await settle(200);
    assert.equal(calls, ["connect", "begin", "connect", "begin", "connect", "begin"]);
  } finally {
    keeper.stop();
  }
});

test("a crash kafkajs restarts itself is left to kafkajs; after stop nothing reconnects", async () => {
  const { calls, crash, consumer, begin } = standIn();
  const keeper = reconnectOnCrash(consumer, begin, backoff, log, "suppressions");
  crash(true);
  await settle(50);
  assert.equal(calls, []);
  crash(false);
  keeper.stop(); // before the scheduled attempt
  await settle(50);
  crash(false);
  await settle(50);
  assert.equal(calls, []);
});

test("stop during an attempt: what it connected is disconnected, and nothing begins", async () => {
  const { calls, crash, consumer } = standIn();
  let release: () => void = () => {};
  const slowBegin = () =>
    new Promise<void>((resolve) => {
      calls.push("begin");
      release = resolve;
    });
  const keeper = reconnectOnCrash(consumer, slowBegin, backoff, log, "suppressions");
  crash(false);
  await settle(30);
  assert.equal(calls, ["connect", "begin"]);
  keeper.stop();
  release();
  await settle(20);
  assert.equal(calls, ["connect", "begin", "disconnect"]);
});

test("AppliedOffsets: a record is new once per partition; a re-read from the start is skipped", () => {
  const applied = new AppliedOffsets();
  assert.equal(
    ["0", "1", "5"].map((o) => applied.take(0, o)),
    [true, true, true],
    "compaction leaves gaps: still new",
  );
  assert.equal(
    ["0", "1", "5"].map((o) => applied.take(0, o)),
    [false, false, false],
    "read again after a restart",
  );
  assert.is(applied.take(0, "6"), true, "past the last one applied");
  assert.is(applied.take(1, "0"), true, "partitions are counted apart");
  assert.is(applied.take(0, "9007199254740993"), true, "offsets beyond 2^53 compare exactly");
  assert.is(applied.take(0, "9007199254740992"), false);
});

test.run();
