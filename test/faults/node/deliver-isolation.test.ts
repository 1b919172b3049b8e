/**
 * Fault scenario 15, on the fault stack (test/faults/node/run.sh): webhook destinations hold up
 * nothing but themselves. A fast receiver's delivery delay (from each message's `receivedAt` to
 * its arrival at the receiver on 127.0.0.1) is measured alone, then under the same steady traffic
 * while three more destinations of the same workspace run in the same delivery process: one whose
 * receiver answers every request after 2 s, one answered 500 for 60 s, one whose port is closed
 * for 60 s (connection refused). The 60 s faults run together. Asserted: the fast destination's
 * p99 during the faults within 1.5x of its p99 alone, and every event sent after the three were
 * added reaches each of them in the end (by messageId; duplicates counted and printed). The p99
 * while the two recovered destinations catch up is printed too, with the machine's 1-minute load
 * average in each phase: the p99 of either phase moves with whatever else the machine runs.
 * DELIVER_ALONE_S and DELIVER_FAULT_S change the phases (20 and 60 s); DELIVER_DUMP=FILE writes
 * the fast receiver's arrivals and the delivery process's log there.
 *
 * The slow destination batches (up to 25 messages a request): one message per request, each
 * answered after 2 s, with one request per partition at a time, its ceiling would be 3 messages
 * a second on 6 partitions, under the traffic's 25.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LiveStack, stopService } from "../../support/harness";
import { addDestination, delivering, Paced, percentile, Receiver, startDeliver, type Deliverer } from "../../support/deliveries";
import { sleep } from "./scenarios";

/** Events a second of the traffic: 5 every 200 ms. */
const PER_TICK = 5;
const TICK_MS = 200;
const ALONE_S = Number(process.env.DELIVER_ALONE_S ?? 20);
const FAULT_S = Number(process.env.DELIVER_FAULT_S ?? 60);
/** The most the fast destination's p99 with the others may be, as a multiple of its p99 alone. */
const MAX_RATIO = 1.5;

const stack = new LiveStack({ KAFKA_TOPIC_PARTITIONS: "6", PRODUCE_TIMEOUT_MS: "5000" });
const scenario = suite("fault scenario 15: a slow, a failing and a dead destination beside a fast one");
const receivers: Receiver[] = [];
let deliverer: Deliverer | undefined;
let traffic: Paced | undefined;

scenario.before(async () => {
  try {
    await stack.start();
    deliverer = await startDeliver(stack, `faults-deliver-${stack.id}`);
  } catch (error) {
    console.error("deliver-isolation: setup failed:", error); // uvu prints nothing of a failed before hook
    throw error;
  }
});

scenario.after(async () => {
  await traffic?.stop();
  if (deliverer) await stopService(deliverer.service);
  await stack.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

const round = (n: number) => Math.round(n * 100) / 100;

/** A started receiver, closed after the scenario. */
async function receiver(): Promise<Receiver> {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
}

/** The fast receiver's delays (ms) for `ids`, first arrival of each. */
function delays(fast: Receiver, ids: readonly string[]): number[] {
  const wanted = new Set(ids);
  const seen = new Set<string>();
  const out: number[] = [];
  for (const a of fast.arrivals) {
    if (!wanted.has(a.messageId) || seen.has(a.messageId)) continue;
    seen.add(a.messageId);
    out.push(a.ms);
  }
  return out;
}

scenario("15. a slow, a failing and a dead destination: the fast one's p99 holds, and each gets everything in the end", async () => {
  const d = deliverer!;
  const fast = await receiver();
  const fastId = await addDestination(stack, fast.url, "--name", "Fast");
  await delivering(d, fastId);
  traffic = new Paced(stack, "u-isolation", PER_TICK, TICK_MS);
  await traffic.for(3); // warm-up: connections, the first fetches
  const alone = await traffic.for(ALONE_S);
  await fast.all(alone, 30_000);
  const p99Alone = percentile(delays(fast, alone), 0.99);
  const loadAlone = loadavg()[0]!;

  const [slow, failing, dead] = await Promise.all([receiver(), receiver(), receiver()]);
  slow.delayMs = 2_000;
  let healthyAt = Number.POSITIVE_INFINITY;
  failing.status = () => (Date.now() < healthyAt ? 500 : 200);
  await dead.close();
  const others = await Promise.all([
    addDestination(stack, slow.url, "--name", "Slow", "--batch-size", "25", "--batch-wait-ms", "500"),
    addDestination(stack, failing.url, "--name", "Failing"),
    addDestination(stack, dead.url, "--name", "Dead"),
  ]);
  await Promise.all(others.map((id) => delivering(d, id)));
  healthyAt = Date.now() + FAULT_S * 1000;
  const reopened = sleep(FAULT_S * 1000).then(() => dead.start());
  const fromAdd = traffic.ids.length; // every event the three must get: from here on
  const during = await traffic.for(FAULT_S);
  const loadDuring = loadavg()[0]!;
  await reopened;
  const recoveryFrom = traffic.ids.length;
  traffic.start();
  const caughtUp = Date.now();
  const must = () => traffic!.ids.slice(fromAdd, recoveryFrom);
  await Promise.all([slow.all(must(), 180_000), failing.all(must(), 180_000), dead.all(must(), 180_000)]);
  const catchUpS = (Date.now() - caughtUp) / 1000;
  await traffic.stop();
  const all = traffic.ids.slice(fromAdd);
  await Promise.all([fast.all(all, 30_000), slow.all(all, 60_000), failing.all(all, 60_000), dead.all(all, 60_000)]);
  await sleep(2_000); // a straggling duplicate would show

  const p99During = percentile(delays(fast, during), 0.99);
  const p99Recovery = percentile(delays(fast, all.slice(during.length)), 0.99);
  const counts = { fast: fast.count(all), slow: slow.count(all), failing: failing.count(all), dead: dead.count(all) };
  const figures = {
    scenario: "Slow, failing and dead destinations beside a fast one",
    events_per_s: (PER_TICK * 1000) / TICK_MS,
    alone_events: alone.length,
    p99_alone_ms: p99Alone,
    p50_alone_ms: percentile(delays(fast, alone), 0.5),
    during_events: during.length,
    p99_during_ms: p99During,
    p50_during_ms: percentile(delays(fast, during), 0.5),
    ratio: round(p99During / p99Alone),
    p99_recovery_ms: p99Recovery,
    recovery_events: all.length - during.length,
    catch_up_s: Math.round(catchUpS * 10) / 10,
    counts,
    load_1m: [round(loadAlone), round(loadDuring)],
  };
  console.log(`\n  ${JSON.stringify(figures)}`);
  if (process.env.DELIVER_DUMP)
    writeFileSync(
      process.env.DELIVER_DUMP,
      JSON.stringify({
        marks: { fromAdd, recoveryFrom, healthyAt },
        ids: traffic.ids,
        arrivals: fast.arrivals,
        deliver: d.service.output(),
      }),
    );
  if (process.env.FAULTS_RESULTS) appendFileSync(process.env.FAULTS_RESULTS, JSON.stringify(figures) + "\n");
  assert.is(traffic.failures, 0, "the ingest answered every post 200");
  for (const [name, c] of Object.entries(counts)) assert.is(c.delivered, c.sent, `${name}: every event delivered`);
  assert.ok(
    p99During <= MAX_RATIO * p99Alone,
    `the fast destination's p99 with the others (${p99During} ms) within ${MAX_RATIO}x of alone (${p99Alone} ms)`,
  );
});

scenario.run();
