/**
 * `npm run bench:plans`: what a tracking plan costs the ingest (issue 50), back to back with and
 * without one. (1) The check alone (plan-cost.ts: a 20-property track schema, flag and omit). (2)
 * In-process, the record stage of the fixed corpus (validation, the plan, the records), µs per
 * event, without a plan and with a flag-mode plan giving every type of the corpus a 20-property
 * schema. (3) The accept path of a live ingest under load (/v1/batch, 100 messages a request,
 * BENCH_SECONDS a phase, default 15): events/s without the plan, with it, without, with. Prints
 * only; 127.0.0.1 only; needs the local stack (run.sh).
 */
import { randomUUID } from "node:crypto";
import { applyPlan } from "../../ingest/records/plan";
import { buildRecords } from "../../ingest/records/build";
import { sortBatch } from "../../ingest/records/validate";
import { createProducer, sendWhole } from "../../schemas/kafka/producer";
import { CompiledPlan, type TrackingPlan } from "../../schemas/plans";
import { basic, LiveStack, waitFor } from "../support/harness";
import { runLoad } from "./child";
import { benchBodies, corpus, EVENTS } from "./corpus";
import { planCost } from "./plan-cost";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

/** A schema of `real` plus optional padding keys up to 20 properties. */
function twenty(real: Record<string, object>): object {
  const properties: Record<string, object> = { ...real };
  for (let i = 0; Object.keys(properties).length < 20; i++) properties[`extra_${i}`] = { type: ["string", "null"], maxLength: 200 };
  return { type: "object", properties, required: Object.keys(real) };
}

/** The flag-mode plan of the corpus: every type and event with a 20-property schema the corpus meets. */
export function corpusPlan(workspaceId: string): TrackingPlan {
  const product = {
    type: "object",
    properties: {
      id: { type: "string" },
      price: { type: "number", minimum: 0 },
      category: { type: "string", enum: ["books", "games", "tools"] },
    },
  };
  const order = twenty({ product, quantity: { type: "integer", minimum: 1 }, currency: { type: "string", pattern: "^[A-Z]{3}$" } });
  const text = { type: "string", maxLength: 500 };
  return {
    workspaceId,
    version: 1,
    createdAt: new Date().toISOString(),
    unplanned: "flag",
    violations: "flag",
    track: Object.fromEntries(EVENTS.map((e) => [e, order])),
    page: twenty({ path: text, url: { type: "string", format: "uri" }, referrer: text, title: text }),
    screen: twenty({ section: text }),
    identify: twenty({ email: { type: "string", format: "email" }, plan: text, address: { type: "object" }, logins: { type: "integer" } }),
    group: twenty({ name: text, employees: { type: "integer" }, plan: text }),
  };
}

/** Best µs per event of the record stage over the corpus bodies, with `plan` or without. */
function recordStage(bodies: string[], plan: CompiledPlan | undefined, passes = 10): number {
  let best = Number.POSITIVE_INFINITY;
  const receipt = { workspaceId: "bench", receivedAt: new Date().toISOString() };
  for (let pass = 0; pass < passes; pass++) {
    let events = 0;
    const start = process.hrtime.bigint();
    for (const text of bodies) {
      const sorted = sortBatch(JSON.parse(text.replaceAll("__ID__", randomUUID())));
      if (!sorted.ok) throw new Error("corpus batch refused");
      const planned = applyPlan({ messages: sorted.value.accepted, rejected: sorted.value.rejected }, plan);
      buildRecords(planned.sorted.messages, {}, receipt, 32_768, undefined, undefined, planned.violations);
      events += sorted.value.accepted.length;
    }
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1000 / events);
  }
  return best;
}

async function main(): Promise<void> {
  const check = planCost();
  console.log(
    `check alone (20-property schema): flag valid ${check.valid.toFixed(2)} µs, flag 4 violations ${check.invalid.toFixed(2)} µs, omit ${check.omit.toFixed(2)} µs`,
  );
  const { batch } = benchBodies(corpus(1_000));
  const plan = CompiledPlan.compile(corpusPlan("bench"));
  const stage = { none: recordStage(batch, undefined), plan: recordStage(batch, plan) };
  const added = stage.plan - stage.none;
  console.log(
    `record stage per event: ${stage.none.toFixed(2)} µs without a plan, ${stage.plan.toFixed(2)} µs with one (flag): +${added.toFixed(2)} µs (${((100 * added) / stage.none).toFixed(1)}%)`,
  );

  const stack = new LiveStack({ RATE_LIMIT_PER_SECOND: "0", LOG_LEVEL: "info", SINK_SESSION_TIMEOUT_MS: "30000" });
  await stack.start();
  try {
    const job = {
      url: `${stack.base}/v1/batch`,
      bodies: batch,
      headers: { authorization: basic("test-key"), "content-type": "application/json" },
      connections: CONNECTIONS,
      seconds: SECONDS,
      rate: 0,
    };
    const producer = createProducer(stack.kafka);
    await producer.connect();
    const publish = async (value: TrackingPlan | null, version: number) => {
      await sendWhole(
        producer,
        {
          acks: -1,
          topicMessages: [
            { topic: stack.env.KAFKA_PLANS_TOPIC!, messages: [{ key: "ws-test", value: value && JSON.stringify({ ...value, version }) }] },
          ],
        },
        30_000,
      );
      if (value !== null)
        await waitFor(`plan v${version} applied`, async () =>
          stack.ingest!.output().includes(`"version":${version},"msg":"plan applied"`) ? true : undefined,
        );
      else await new Promise((r) => setTimeout(r, 2_000));
    };
    const rates: Record<string, number[]> = { none: [], plan: [] };
    for (let round = 1; round <= 2; round++) {
      await publish(null, 0);
      const without = await runLoad(job);
      rates.none!.push(without.reqPerSec * 100);
      await publish(corpusPlan("ws-test"), round);
      const withPlan = await runLoad(job);
      rates.plan!.push(withPlan.reqPerSec * 100);
      console.log(
        `accept path, round ${round}: ${Math.round(without.reqPerSec * 100)} events/s without a plan, ${Math.round(withPlan.reqPerSec * 100)} with one (non-2xx ${without.non2xx}, ${withPlan.non2xx})`,
      );
    }
    await producer.disconnect();
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(
      JSON.stringify({
        plan_check_us: check.valid,
        record_stage_us: stage.none,
        record_stage_with_plan_us: stage.plan,
        accept_events_per_s: Math.round(mean(rates.none!)),
        accept_with_plan_events_per_s: Math.round(mean(rates.plan!)),
      }),
    );
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
