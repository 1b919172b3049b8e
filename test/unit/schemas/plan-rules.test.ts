/** A plan's rules compiled all at once (apply: every problem named) or each when a message first needs it (the ingest). */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { compileRules, LazyRules } from "../../../schemas/plan-rules";
import { CompiledPlan, type TrackingPlan } from "../../../schemas/plans";

const plan = (track: Record<string, object>): TrackingPlan => ({
  workspaceId: "ws1",
  version: 1,
  createdAt: "2026-11-29T10:00:00.000Z",
  unplanned: "flag",
  violations: "block",
  track,
});
const good = { type: "object", properties: { total: { type: "number" } }, required: ["total"] };
const broken = { type: "object", properties: { total: { type: "numbr" } } };

test("all at once: each problem named by its place", () => {
  const { problems, track } = compileRules(plan({ Good: good, Broken: broken }) as unknown as Record<string, unknown>);
  assert.is(track.size, 1);
  assert.ok(
    problems.some((p) => p.startsWith("/track/Broken/properties/total/type")),
    problems.join("\n"),
  );
});

test("lazily: a schema is compiled when asked for, once; an unknown name has no rule", () => {
  const rules = new LazyRules(new Map([["Good", { schema: good, at: "/track/Good", field: "properties" as const }]]));
  const first = rules.get("Good");
  assert.ok(first);
  assert.is(rules.get("Good"), first, "compiled once");
  assert.is(rules.get("Other"), undefined);
});

test("the ingest's lazy plan: good events checked as compile() checks them; a schema that does not compile flags its events, never blocks them", () => {
  const lazy = CompiledPlan.lazy(plan({ Good: good, Broken: broken }));
  const eager = CompiledPlan.compile(plan({ Good: good }));
  const bad = { type: "track", event: "Good", properties: { total: "1" } };
  assert.equal(lazy.check(bad), eager.check(bad));
  assert.is(lazy.check({ type: "track", event: "Good", properties: { total: 1 } }).outcome, "ok");
  const verdict = lazy.check({ type: "track", event: "Broken", properties: { total: 1 } });
  assert.is(verdict.outcome, "flag");
  assert.is(verdict.outcome === "flag" && verdict.violations[0]!.keyword, "error");
  assert.throws(() => CompiledPlan.lazy({ ...plan({}), violations: "drop" } as unknown as TrackingPlan), /\/violations/);
});

test.run();
