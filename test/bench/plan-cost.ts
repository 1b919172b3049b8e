/**
 * The cost of checking a message against a tracking plan (schemas/plans.ts, issue 50), in-process:
 * µs per check of a track event whose schema has 20 properties (strings, a pattern, formats,
 * numbers, an enum, an array of objects, a nested object), in flag mode, for a valid event and
 * for one with four bad fields; and in omit mode for an event with two unplanned properties. Best
 * of several passes of `checks` checks each (process.hrtime.bigint). Also the compile time of the
 * plan, ms, first and next. Prints only. Run alone: `node dist/test/bench/plan-cost.js`.
 */
import { CompiledPlan, type TrackingPlan } from "../../schemas/plans";

const str = { type: "string", maxLength: 200 };
const SCHEMA = {
  type: "object",
  properties: {
    order_id: { type: "string", pattern: "^ord_[A-Za-z0-9]{8,32}$" },
    affiliation: str,
    total: { type: "number", minimum: 0 },
    subtotal: { type: "number", minimum: 0 },
    revenue: { type: "number" },
    shipping: { type: "number", minimum: 0 },
    tax: { type: "number", minimum: 0 },
    discount: { type: "number", minimum: 0 },
    coupon: str,
    currency: { type: "string", enum: ["EUR", "USD", "GBP", "JPY"] },
    email: { type: "string", format: "email" },
    placed_at: { type: "string", format: "date-time" },
    first_order: { type: "boolean" },
    item_count: { type: "integer", minimum: 1 },
    channel: { type: ["string", "null"] },
    store: str,
    region: str,
    campaign: str,
    address: { type: "object", properties: { city: str, zip: { type: "string", maxLength: 10 } }, required: ["city"] },
    products: {
      type: "array",
      maxItems: 100,
      items: { type: "object", properties: { sku: str, price: { type: "number" }, quantity: { type: "integer" } }, required: ["sku"] },
    },
  },
  required: ["order_id", "total", "currency"],
};

const VALID = {
  order_id: "ord_5f3a9c1e77b2",
  affiliation: "Web store",
  total: 27.5,
  subtotal: 22.5,
  revenue: 25,
  shipping: 3,
  tax: 2,
  discount: 2.5,
  coupon: "SPRING",
  currency: "EUR",
  email: "ada@example.com",
  placed_at: "2026-11-28T10:00:00.000Z",
  first_order: false,
  item_count: 2,
  channel: null,
  store: "Paris 2",
  region: "eu-west",
  campaign: "winter",
  address: { city: "Paris", zip: "75002" },
  products: [
    { sku: "SKU-1", price: 12.5, quantity: 1 },
    { sku: "SKU-2", price: 10, quantity: 1 },
  ],
};
/** Four bad fields: a type, an enum, a format, a required property deep in an array. */
const INVALID = { ...VALID, total: "27.5", currency: "CHF", email: "ada@", products: [{ price: 12.5 }] };
const UNPLANNED = { ...VALID, utm_source: "newsletter", experiment: "b" };

const planOf = (violations: TrackingPlan["violations"]): TrackingPlan => ({
  workspaceId: "bench",
  version: 1,
  createdAt: new Date().toISOString(),
  unplanned: "flag",
  violations,
  track: { "Order Completed": SCHEMA },
});

/** Best µs per check of `properties` over `passes` passes of `checks` checks. */
function microsPerCheck(plan: CompiledPlan, properties: object, checks: number, passes: number): number {
  const message = { type: "track", event: "Order Completed", messageId: "m", userId: "u", properties };
  let best = Number.POSITIVE_INFINITY;
  let sink = 0;
  for (let pass = 0; pass < passes; pass++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < checks; i++) if (plan.check(message).outcome !== "ok") sink++;
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1000 / checks);
  }
  if (sink < 0) throw new Error("unreachable: keeps the verdicts alive");
  return best;
}

/** The plan of `violations` compiled, and the time it took, ms. */
function timedCompile(violations: TrackingPlan["violations"]): [CompiledPlan, number] {
  const start = process.hrtime.bigint();
  const plan = CompiledPlan.compile(planOf(violations));
  return [plan, Number(process.hrtime.bigint() - start) / 1e6];
}

/**
 * µs per check (flag mode: valid, invalid; omit mode: two unplanned properties) and the compile
 * time of the plan, ms: the first in the process (the meta-schema compiled too), and the next.
 */
export function planCost(
  checks = 200_000,
  passes = 5,
): { valid: number; invalid: number; omit: number; compileFirstMs: number; compileMs: number } {
  const [flag, compileFirstMs] = timedCompile("flag");
  const [omit, compileMs] = timedCompile("omit");
  return {
    valid: microsPerCheck(flag, VALID, checks, passes),
    invalid: microsPerCheck(flag, INVALID, checks, passes),
    omit: microsPerCheck(omit, UNPLANNED, checks, passes),
    compileFirstMs,
    compileMs,
  };
}

if (require.main === module) {
  const cost = planCost();
  console.log(
    `tracking plan, 20-property track schema: flag valid ${cost.valid.toFixed(2)} µs/check, flag invalid (4 violations) ` +
      `${cost.invalid.toFixed(2)} µs/check, omit (2 unplanned) ${cost.omit.toFixed(2)} µs/check; compile ${cost.compileFirstMs.toFixed(1)} ms (first), ${cost.compileMs.toFixed(1)} ms (next)`,
  );
}
