/**
 * Fault scenario 16, on the fault stack (test/faults/node/run.sh): the delivery process SIGKILLed
 * mid-flow, then started again. Two destinations of the same workspace, one message per request
 * and batches of up to 20, post to receivers on 127.0.0.1 that answer after 20 ms and refuse
 * (503) the first request carrying any of 3 messageIds in 16 (last hex digit 0-2), so retries are waiting when
 * the process dies (at least one retried message and some events not yet delivered are asserted
 * at the kill). Traffic flows throughout. Asserted: every event answered 200 by the ingest
 * reaches each receiver at least once (by messageId); the duplicates (the at-least-once figure)
 * are counted and printed, not bounded.
 */
import { appendFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LiveStack, stopService } from "../../support/harness";
import { addDestination, delivering, metricSum, Paced, Receiver, startDeliver, type Deliverer } from "../../support/deliveries";
import { sleep } from "./scenarios";

const stack = new LiveStack({ KAFKA_TOPIC_PARTITIONS: "6", PRODUCE_TIMEOUT_MS: "5000" });
const prefix = `faults-deliver-kill-${stack.id}`;
const scenario = suite("fault scenario 16: the delivery process SIGKILLed mid-flow");
const receivers: Receiver[] = [];
const deliverers: Deliverer[] = [];
let traffic: Paced | undefined;

scenario.before(async () => {
  try {
    await stack.start();
    deliverers.push(await startDeliver(stack, prefix));
  } catch (error) {
    console.error("deliver-kill: setup failed:", error); // uvu prints nothing of a failed before hook
    throw error;
  }
});

scenario.after(async () => {
  await traffic?.stop();
  await Promise.all(deliverers.map((d) => stopService(d.service)));
  await stack.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

/** A receiver answering after 20 ms that refuses (503) the first request carrying an id whose last hex digit is 0-2. */
async function refusingOnce(): Promise<Receiver> {
  const r = await new Receiver().start();
  receivers.push(r);
  const refused = new Set<string>();
  r.delayMs = 20;
  r.status = (ids) => {
    const fresh = ids.filter((id) => /[0-2]$/.test(id) && !refused.has(id));
    for (const id of fresh) refused.add(id);
    return fresh.length > 0 ? 503 : 200;
  };
  return r;
}

scenario("16. SIGKILL of the delivery process with retries waiting: every event delivered at least once after the restart", async () => {
  const [single, batched] = await Promise.all([refusingOnce(), refusingOnce()]);
  const ids = await Promise.all([
    addDestination(stack, single.url, "--name", "One By One"),
    addDestination(stack, batched.url, "--name", "Batched", "--batch-size", "20", "--batch-wait-ms", "200"),
  ]);
  const first = deliverers[0]!;
  await Promise.all(ids.map((id) => delivering(first, id)));
  traffic = new Paced(stack, "u-kill", 10, 200); // 50 events a second
  traffic.start();
  await sleep(12_000);
  const retried = await metricSum(first.port, "deliver_messages_total", ['outcome="retried"']);
  const acked = traffic.ids.length;
  const waiting = { single: acked - single.count(traffic.ids).delivered, batched: acked - batched.count(traffic.ids).delivered };
  first.service.child.kill("SIGKILL");
  const killed = await first.service.exited;
  assert.is(killed.signal, "SIGKILL");
  await sleep(5_000); // events keep coming while no delivery process runs
  const second = await startDeliver(stack, prefix);
  deliverers.push(second);
  const restarted = Date.now();
  await Promise.all(ids.map((id) => delivering(second, id)));
  const rejoinS = (Date.now() - restarted) / 1000;
  await sleep(5_000);
  await traffic.stop();
  const all = traffic.ids;
  await Promise.all([single.all(all, 180_000), batched.all(all, 180_000)]);
  await sleep(3_000); // a straggling duplicate would show
  const counts = { single: single.count(all), batched: batched.count(all) };
  const figures = {
    scenario: "Delivery process SIGKILLed mid-flow",
    acked_at_kill: acked,
    waiting_at_kill: waiting,
    retried_before_kill: retried,
    rejoin_s: Math.round(rejoinS * 10) / 10,
    counts,
    requests: { single: single.requests, batched: batched.requests },
  };
  console.log(`\n  ${JSON.stringify(figures)}`);
  if (process.env.FAULTS_RESULTS) appendFileSync(process.env.FAULTS_RESULTS, JSON.stringify(figures) + "\n");
  assert.is(traffic.failures, 0, "the ingest answered every post 200");
  assert.ok(retried > 0, "retries were waiting at the kill");
  assert.ok(waiting.single > 0 || waiting.batched > 0, "events were waiting at the kill");
  for (const [name, c] of Object.entries(counts)) assert.is(c.delivered, c.sent, `${name}: every event delivered at least once`);
});

scenario.run();
