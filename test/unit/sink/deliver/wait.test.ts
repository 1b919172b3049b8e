/**
 * A request's wait for its retry (sink/deliver/wait.ts): it heartbeats as it waits, and ends with
 * Interrupted when the heartbeat fails (a rebalance), when the loop is no longer live, or at once
 * when the stop aborts it.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { beat, Interrupted, retryWait } from "../../../../sink/deliver/wait";

const never = new AbortController().signal;

test("a wait lasts its time, heartbeating at its end, and resolves while the heartbeats succeed", async () => {
  let beats = 0;
  const started = Date.now();
  await retryWait(50, { live: () => true, heartbeat: async () => void beats++, signal: never });
  assert.ok(Date.now() - started >= 45);
  assert.is(beats, 1);
});

test("a failed heartbeat (a rebalance) ends the wait with Interrupted, the heartbeat's error as its cause", async () => {
  const rebalancing = new Error("The group is rebalancing, so a rejoin is needed");
  const error = await retryWait(20, {
    live: () => true,
    heartbeat: () => Promise.reject(rebalancing),
    signal: never,
  }).catch((e: unknown) => e);
  assert.instance(error, Interrupted);
  assert.is((error as Error).cause, rebalancing);
  assert.instance(await beat(() => Promise.reject(rebalancing)).catch((e: unknown) => e), Interrupted);
});

test("a loop no longer live ends the wait; the stop's abort ends it at once", async () => {
  const gone = await retryWait(20, { live: () => false, heartbeat: async () => undefined, signal: never }).catch((e: unknown) => e);
  assert.instance(gone, Interrupted);
  const abort = new AbortController();
  let live = true;
  const started = Date.now();
  setTimeout(() => {
    live = false;
    abort.abort();
  }, 20);
  const stopped = await retryWait(60_000, { live: () => live, heartbeat: async () => undefined, signal: abort.signal }).catch(
    (e: unknown) => e,
  );
  assert.instance(stopped, Interrupted);
  assert.ok(Date.now() - started < 1_000, "at once");
});

test.run();
