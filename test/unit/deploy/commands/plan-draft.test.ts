/** `plans draft` from a catalog, `plans diff`, the text and range of `plans check`, and a refused plan's answer. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  checkRange,
  checkText,
  draftPlan,
  planDiff,
  planRefusal,
  problemPointer,
  REQUIRED_SHARE,
} from "../../../../deploy/commands/plan-draft";
import type { EventCatalogRow, PropertyCatalogRow } from "../../../../schemas/clickhouse/catalog";
import { planProblems, type TrackingPlan } from "../../../../schemas/plans";

const seen = { first_seen: "", last_seen: "" };
const event = (type: string, name: string, count: number, over_cap = 0): EventCatalogRow => ({
  workspace_id: "ws1",
  type,
  event: type === "track" ? name : "",
  name: type === "track" ? "" : name,
  count: String(count),
  over_cap,
  ...seen,
});
const key = (type: string, name: string, source: string, k: string, types: string[], count: number): PropertyCatalogRow => ({
  ...event(type, name, count),
  source,
  key: k,
  types,
});

const catalog = {
  events: [
    event("track", "Order Completed", 100),
    event("identify", "", 40),
    event("page", "Home", 30),
    event("page", "Pricing", 10),
    event("track", "2026-11-29", 7, 1),
  ],
  properties: [
    key("track", "Order Completed", "properties", "total", ["number"], 100),
    key("track", "Order Completed", "properties", "currency", ["string"], Math.ceil(REQUIRED_SHARE * 100)),
    key("track", "Order Completed", "properties", "coupon", ["null", "string"], 30),
    key("track", "Order Completed", "context", "ip", ["string"], 100),
    key("identify", "", "traits", "email", ["string"], 40),
    key("page", "Home", "properties", "path", ["string"], 30),
    key("page", "Pricing", "properties", "path", ["string"], 10),
  ],
};

test("a track event's schema: each key with the types seen; required when on at least REQUIRED_SHARE of its messages; context keys left out", () => {
  const plan = draftPlan(catalog);
  assert.equal(plan.track["Order Completed"], {
    type: "object",
    properties: { total: { type: "number" }, currency: { type: "string" }, coupon: { type: ["null", "string"] } },
    required: ["currency", "total"],
  });
  assert.equal(Object.keys(plan.track), ["Order Completed"], "the over-cap row is no event");
  assert.is(plan.unplanned, "flag");
  assert.is(plan.violations, "flag");
});

test("identify traits and page properties: one schema each, a key's messages summed over the names", () => {
  const plan = draftPlan(catalog);
  assert.equal(plan.identify, { type: "object", properties: { email: { type: "string" } }, required: ["email"] });
  assert.equal(plan.page, { type: "object", properties: { path: { type: "string" } }, required: ["path"] });
  assert.is(plan.group, undefined);
});

test("diff: modes, events added, removed and changed, other types' schemas", () => {
  const current: TrackingPlan = {
    workspaceId: "ws1",
    version: 2,
    createdAt: "",
    unplanned: "flag",
    violations: "flag",
    track: { A: { type: "object" }, B: { type: "object" } },
    identify: { type: "object" },
  };
  const lines = planDiff(current, {
    unplanned: "block",
    violations: "flag",
    track: { A: { type: "object", required: ["x"] }, C: {} },
    page: {},
  });
  assert.equal(lines, ["unplanned: flag -> block", '~ track "A"', '+ track "C"', '- track "B"', "- identify", "+ page"]);
  assert.equal(planDiff(current, { ...current }), []);
  assert.equal(planDiff(undefined, { unplanned: "allow", violations: "flag", track: { A: {} } }), ["new plan: 1 track events"]);
});

test("check's text: the counts, then the most frequent violations first", () => {
  const text = checkText(
    10,
    { ok: 7, flag: 3 },
    new Map([
      ["/properties/total type: must be number", 1],
      ["/event unplanned: is not in the plan", 2],
    ]),
  );
  assert.is(
    text,
    "10 messages checked: 7 ok, 3 flag\n  2\t/event unplanned: is not in the plan\n  1\t/properties/total type: must be number\n",
  );
});

test("a problem's pointer: the longest reading that names a value of the plan, so an event name may hold ': '", () => {
  const plan = { track: { "Checkout: Step 1": { type: "object", properties: { n: { type: "nope" } } } } };
  const problem = "/track/Checkout: Step 1/properties/n/type: must be equal to one of: the allowed values";
  assert.is(problemPointer(problem, plan), "/track/Checkout: Step 1/properties/n/type");
  assert.is(problemPointer("/unplanned: must be one of", {}), "/unplanned", "not in the plan: the first reading");
  assert.is(problemPointer("/a~1b: bad", { "a/b": 1 }), "/a~1b", "escaped tokens resolve");
  assert.is(problemPointer("the plan is 9 bytes of JSON, more than 1", plan), undefined, "a problem of the whole plan");
});

test("a refused plan is a 400: the lead and every problem in its sentence, the first one's pointer its field", () => {
  const plan = {
    workspaceId: "ws1",
    version: 1,
    createdAt: "2026-03-01T00:00:00Z",
    unplanned: "flag",
    violations: "flag",
    track: { A: { type: "object", properties: { n: { type: "nope" } } } },
  };
  const problems = planProblems(plan);
  assert.ok(problems.length > 0);
  const refused = planRefusal("the plan is refused", problems, plan, "plan");
  assert.is(refused.status, 400);
  assert.is(refused.error, `the plan is refused:\n${problems.map((p) => `  ${p}`).join("\n")}`);
  assert.match(refused.field!, /^plan\/track\/A\/properties\/n/);
  assert.is(planRefusal("refused", ["the plan must be a JSON object"], 3).field, undefined);
});

test("check's range: ISO 8601 times, from before to, the field at fault named", () => {
  assert.equal(checkRange("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"), {
    ok: true,
    value: { fromMs: Date.parse("2026-03-01T00:00:00Z"), toMs: Date.parse("2026-03-02T00:00:00Z") },
  });
  const field = (from?: string, to?: string) => {
    const r = checkRange(from, to);
    return r.ok ? "ok" : `${r.status} ${r.field}`;
  };
  assert.is(field(undefined, "2026-03-02T00:00:00Z"), "400 from");
  assert.is(field("yesterday", "2026-03-02T00:00:00Z"), "400 from");
  assert.is(field("2026-03-01T00:00:00Z", "soon"), "400 to");
  assert.is(field("2026-03-02T00:00:00Z", "2026-03-02T00:00:00Z"), "400 to", "an empty range");
});

test.run();
