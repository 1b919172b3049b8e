/**
 * Tracking plans (schemas/plans.ts, issue 50): which topic values are plans, the problems of a
 * plan named by their JSON Pointer, the limits, and the verdict of a compiled plan on a message in
 * each mode (flag, block, omit; unplanned events allowed, flagged, blocked), its paths included.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { CompiledPlan, parsePlan, PLAN_LIMITS, planProblems, type PlanVerdict, type TrackingPlan } from "../../../schemas/plans";

const ORDER = {
  type: "object",
  properties: {
    total: { type: "number", minimum: 0 },
    currency: { type: "string", enum: ["EUR", "USD"] },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: { sku: { type: "string", pattern: "^[A-Z]{3}-[0-9]+$" }, qty: { type: "integer" } },
        required: ["sku"],
      },
    },
    shipping: { type: "object", properties: { address: { type: "object", properties: { zip: { type: "string", maxLength: 10 } } } } },
  },
  required: ["total"],
};

/** A good plan; `over` replaces its fields. */
const planOf = (over: Partial<Record<keyof TrackingPlan, unknown>> = {}): TrackingPlan =>
  ({
    workspaceId: "w1",
    version: 3,
    createdAt: "2026-11-28T10:00:00.000Z",
    unplanned: "flag",
    violations: "flag",
    track: {
      "Order Completed": ORDER,
      "Signed Up": { type: "object", properties: { plan: { type: "string" } }, additionalProperties: false },
    },
    identify: { type: "object", properties: { email: { type: "string", format: "email" } }, required: ["email"] },
    ...over,
  }) as TrackingPlan;

const compiled = (over: Partial<Record<keyof TrackingPlan, unknown>> = {}) => CompiledPlan.compile(planOf(over));
const order = (properties: unknown) => ({ type: "track", event: "Order Completed", properties });
const GOOD_ORDER = { total: 12.5, currency: "EUR", items: [{ sku: "ABC-1", qty: 2 }], shipping: { address: { zip: "75001" } } };

/** The violations of a verdict, as [path, keyword] pairs. */
const pairs = (v: PlanVerdict) => (v.outcome === "ok" ? [] : v.violations.map((x) => [x.path, x.keyword]));

test("parsePlan: a plan from a Buffer or a string, as written", () => {
  const text = JSON.stringify(planOf());
  assert.equal(parsePlan(Buffer.from(text)), JSON.parse(text));
  assert.equal(parsePlan(text), JSON.parse(text));
});

test("parsePlan: a tombstone, junk and values of another shape are no plan", () => {
  for (const junk of [null, "", Buffer.alloc(0), "{not json", JSON.stringify(planOf()).slice(0, -1), "null", "[]", "3", '"plan"'])
    assert.is(parsePlan(junk), undefined, String(junk));
  for (const over of [{ version: 0 }, { version: 1.5 }, { version: "2" }, { unplanned: "maybe" }, { violations: "allow" }, { track: null }])
    assert.is(parsePlan(JSON.stringify(planOf(over))), undefined, JSON.stringify(over));
  const noWorkspace: Record<string, unknown> = { ...planOf() };
  delete noWorkspace.workspaceId;
  assert.is(parsePlan(JSON.stringify(noWorkspace)), undefined);
});

test("planProblems: none for a good plan, page and screen schemas and $defs refs included", () => {
  const defs = { type: "object", $defs: { id: { type: "string", minLength: 1 } }, properties: { id: { $ref: "#/$defs/id" } } };
  assert.equal(planProblems(planOf({ page: defs, screen: { type: "object" }, group: { type: "object" } })), []);
  assert.equal(planProblems(planOf({ track: { A: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" } } })), []);
});

test("planProblems: the shape, each problem at its pointer", () => {
  assert.equal(planProblems("plan"), ["the plan must be a JSON object"]);
  assert.equal(planProblems(planOf({ version: 0, unplanned: "maybe", track: { "a/b": [] }, identify: 3 })), [
    "/version: must be an integer >= 1",
    '/unplanned: must be "allow", "flag" or "block"',
    "/track/a~1b: must be a JSON Schema object",
    "/identify: must be a JSON Schema object",
  ]);
  assert.equal(planProblems({ ...planOf(), indentify: {} }), ["/indentify: is not a field of a tracking plan"]);
  assert.throws(() => CompiledPlan.compile(planOf({ createdAt: "yesterday" })), /createdAt: must be an ISO 8601 time/);
});

test("planProblems: an unknown keyword, and a type the meta-schema refuses, named by their place", () => {
  const plan = planOf({
    track: { "Signed Up": { type: "object", minimun: 3 }, "Order Completed": { type: "object", properties: { total: { type: "numbr" } } } },
  });
  assert.equal(planProblems(plan), [
    '/track/Signed Up: unknown keyword "minimun"',
    "/track/Order Completed/properties/total/type: must be equal to one of the allowed values",
  ]);
  assert.throws(() => CompiledPlan.compile(plan), /unknown keyword "minimun"/);
});

test("planProblems: a pattern RE2 cannot run (lookahead, backreference) is refused at its path", () => {
  const schema = {
    type: "object",
    properties: { sku: { type: "string", pattern: "^(?!X)[A-Z]+$" } },
    patternProperties: { "^(a)\\1$": {} },
  };
  const problems = planProblems(planOf({ track: { Viewed: schema } }));
  assert.is(problems.length, 2, problems.join("\n"));
  assert.match(problems[0]!, /^\/track\/Viewed\/properties\/sku\/pattern: RE2 cannot run this pattern/);
  assert.match(problems[1]!, /^\/track\/Viewed\/patternProperties\/\^\(a\)\\1\$: RE2 cannot run this pattern/);
});

test("planProblems: refs only within the schema, no $id, only draft 2020-12, known formats only", () => {
  const props = (p: object) => planOf({ track: { E: { type: "object", properties: p } } });
  assert.equal(planProblems(props({ a: { $ref: "#/$defs/missing" } })), [
    '/track/E/properties/a/$ref: "#/$defs/missing" is not in this schema',
  ]);
  assert.match(
    planProblems(props({ a: { $ref: "https://example.com/s.json" } })).join(),
    /^\/track\/E\/properties\/a\/\$ref: .* is outside the schema/,
  );
  assert.match(planProblems(props({ a: { $id: "a", type: "string" } })).join(), /^\/track\/E\/properties\/a\/\$id: \$id is not supported/);
  const draft7 = planOf({ track: { E: { $schema: "http://json-schema.org/draft-07/schema#", type: "object" } } });
  assert.match(planProblems(draft7).join(), /^\/track\/E\/\$schema: only draft 2020-12/);
  assert.match(
    planProblems(props({ h: { type: "string", format: "hostname" } })).join(),
    /^\/track\/E\/properties\/h\/format: format "hostname" is not supported/,
  );
});

test("planProblems: Ajv's strict checks are named by their place too", () => {
  const plan = planOf({ track: { E: { type: "object", properties: { a: { type: "object", properties: { b: {} }, required: ["c"] } } } } });
  assert.equal(planProblems(plan), ['/track/E/properties/a: strict mode: required property "c" is not defined (strictRequired)']);
});

test("planProblems: the limits, each a problem", () => {
  const { maxEvents, maxPatternLength, maxSchemaDepth, maxPlanBytes } = PLAN_LIMITS;
  const many = Object.fromEntries(Array.from({ length: maxEvents + 1 }, (_, i) => [`E${i}`, {}]));
  assert.equal(planProblems(planOf({ track: many })), [`/track: ${maxEvents + 1} events, more than ${maxEvents}`]);
  const big = planOf({ track: { E: { type: "object", description: "x".repeat(maxPlanBytes) } } });
  assert.match(planProblems(big).join(), /^the plan is \d+ bytes of JSON, more than 262144$/);
  const pattern = (n: number) =>
    planOf({ track: { E: { type: "object", properties: { a: { type: "string", pattern: "a".repeat(n) } } } } });
  assert.equal(planProblems(pattern(maxPatternLength)), []);
  assert.equal(planProblems(pattern(maxPatternLength + 1)), [
    `/track/E/properties/a/pattern: the pattern has ${maxPatternLength + 1} characters, more than ${maxPatternLength}`,
  ]);
  let deep: object = { type: "string" };
  for (let i = 0; i < maxSchemaDepth; i++) deep = { type: "object", properties: { n: deep } };
  const problems = planProblems(planOf({ track: { E: deep } }));
  assert.is(problems.length, 1);
  assert.match(problems[0]!, new RegExp(`^/track/E(/properties/n){${maxSchemaDepth / 2}}: nested deeper than ${maxSchemaDepth} levels$`));
});

test("flag: each bad field at its path (nested, in arrays, required), readable messages", () => {
  const plan = compiled();
  assert.equal(plan.check(order(GOOD_ORDER)), { outcome: "ok" });
  const verdict = plan.check(
    order({ total: "12", currency: "GBP", items: [{ sku: "abc-1" }, { qty: 1.5 }], shipping: { address: { zip: "12345678901" } } }),
  );
  assert.is(verdict.outcome, "flag");
  assert.equal(pairs(verdict), [
    ["/properties/total", "type"],
    ["/properties/currency", "enum"],
    ["/properties/items/0/sku", "pattern"],
    ["/properties/items/1/sku", "required"],
    ["/properties/items/1/qty", "type"],
    ["/properties/shipping/address/zip", "maxLength"],
  ]);
  const messages = verdict.outcome === "flag" ? verdict.violations.map((v) => v.message) : [];
  assert.is(messages[0], "must be number (got string)");
  assert.is(messages[1], 'must be one of "EUR", "USD"');
  assert.is(messages[3], "is required");
  assert.is(messages[4], "must be integer (got number)");
  assert.equal(pairs(plan.check(order(undefined))), [["/properties/total", "required"]], "missing properties count as {}");
  assert.equal(pairs(plan.check(order(null))), [["/properties/total", "required"]]);
});

test("flag: additionalProperties points at the extra property", () => {
  const verdict = compiled().check({ type: "track", event: "Signed Up", properties: { plan: "pro", coupon: "X" } });
  assert.equal(verdict, {
    outcome: "flag",
    violations: [{ path: "/properties/coupon", keyword: "additionalProperties", message: "is not allowed by the plan" }],
  });
});

test("block: a violation blocks, a good message passes", () => {
  const plan = compiled({ violations: "block" });
  assert.equal(plan.check(order(GOOD_ORDER)), { outcome: "ok" });
  const verdict = plan.check(order({ total: -1 }));
  assert.is(verdict.outcome, "block");
  assert.equal(pairs(verdict), [["/properties/total", "minimum"]]);
});

test("an unplanned event: allowed, flagged or blocked, whatever the violations mode", () => {
  const viewed = { type: "track", event: "Product Viewed", properties: { id: 1 } };
  const unplanned = [{ path: "/event", keyword: "unplanned", message: "is not in the plan" }];
  for (const violations of ["flag", "block", "omit"]) {
    assert.equal(compiled({ unplanned: "allow", violations }).check(viewed), { outcome: "ok" });
    assert.equal(compiled({ unplanned: "flag", violations }).check(viewed), { outcome: "flag", violations: unplanned });
    assert.equal(compiled({ unplanned: "block", violations }).check(viewed), { outcome: "block", violations: unplanned });
  }
  assert.equal(
    compiled().check({ type: "track", event: "constructor" }),
    { outcome: "flag", violations: unplanned },
    "not a prototype key",
  );
  assert.equal(compiled().check({ type: "track", event: 42 }), { outcome: "flag", violations: unplanned });
});

test("omit: only the unplanned top-level keys are removed, from a copy, and reported; the rest is flagged", () => {
  const plan = compiled({ violations: "omit", track: { E: { ...ORDER, patternProperties: { "^utm_": { type: "string" } } } } });
  const message = { type: "track", event: "E", messageId: "m1", properties: { total: "12", coupon: "X", utm_source: "ad", "a/b": 1 } };
  const before = JSON.stringify(message);
  const verdict = plan.check(message);
  assert.equal(verdict, {
    outcome: "omit",
    violations: [
      { path: "/properties/coupon", keyword: "unplanned", message: "is not in the plan" },
      { path: "/properties/a~1b", keyword: "unplanned", message: "is not in the plan" },
      { path: "/properties/total", keyword: "type", message: "must be number (got string)" },
    ],
    omitted: ["/properties/coupon", "/properties/a~1b"],
    message: { type: "track", event: "E", messageId: "m1", properties: { total: "12", utm_source: "ad" } },
  });
  assert.is(JSON.stringify(message), before, "the message itself is untouched");
  assert.equal(pairs(plan.check({ type: "track", event: "E", properties: { total: -1 } })), [["/properties/total", "minimum"]]);
  assert.is(plan.check({ type: "track", event: "E", properties: { total: -1 } }).outcome, "flag", "nothing omitted: flagged");
  assert.equal(plan.check({ type: "track", event: "E", properties: { total: 1, utm_x: "y" } }), { outcome: "ok" });
});

test("omit: traits of identify, and a key named __proto__ removed as any other", () => {
  const plan = compiled({ violations: "omit" });
  const verdict = plan.check(JSON.parse('{"type":"identify","userId":"u","traits":{"email":"a@b.co","__proto__":{"x":1}}}'));
  assert.is(verdict.outcome, "omit");
  if (verdict.outcome !== "omit") return;
  assert.equal(verdict.omitted, ["/traits/__proto__"]);
  assert.equal(Object.keys(verdict.message.traits as object), ["email"]);
});

test("identify and group check traits, page and screen properties; other types and types without a schema pass", () => {
  const requiring = (key: string) => ({ type: "object", properties: { [key]: {} }, required: [key] });
  const plan = compiled({ group: requiring("name"), page: requiring("url"), screen: requiring("id") });
  assert.equal(pairs(plan.check({ type: "identify", traits: { email: "nope" } })), [["/traits/email", "format"]]);
  assert.equal(pairs(plan.check({ type: "identify" })), [["/traits/email", "required"]]);
  assert.equal(pairs(plan.check({ type: "group", traits: {} })), [["/traits/name", "required"]]);
  assert.equal(pairs(plan.check({ type: "page", name: "Home", properties: {} })), [["/properties/url", "required"]]);
  assert.equal(pairs(plan.check({ type: "screen", properties: { id: 1 } })), []);
  assert.equal(pairs(plan.check({ type: "page", properties: "x" })), [["/properties", "type"]]);
  assert.equal(compiled().check({ type: "group", traits: 1 }), { outcome: "ok" }, "no group schema");
  assert.equal(compiled().check({ type: "alias" }), { outcome: "ok" });
});

test("a pattern that backtracks for ages natively (^(a|a)*$) is checked by RE2: the verdict comes back", () => {
  const plan = compiled({ track: { E: { type: "object", properties: { s: { type: "string", pattern: "^(a|a)*$" } } } } });
  assert.equal(pairs(plan.check({ type: "track", event: "E", properties: { s: `${"a".repeat(30)}b` } })), [["/properties/s", "pattern"]]);
  assert.equal(plan.check({ type: "track", event: "E", properties: { s: "a".repeat(30) } }), { outcome: "ok" });
});

test(`at most ${PLAN_LIMITS.maxViolations} violations are reported per message`, () => {
  const props = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, { type: "string" }]));
  const plan = compiled({ track: { E: { type: "object", properties: props } } });
  const bad = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, i]));
  assert.is(pairs(plan.check({ type: "track", event: "E", properties: bad })).length, PLAN_LIMITS.maxViolations);
  const omit = compiled({ violations: "omit", track: { E: { type: "object" } } }).check({ type: "track", event: "E", properties: bad });
  assert.is(pairs(omit).length, PLAN_LIMITS.maxViolations);
  assert.is(omit.outcome === "omit" && omit.omitted.length, 30, "every omitted key is listed");
});

test("check never throws: data too deep for a recursive schema is flagged, keyword error", () => {
  const tree = { type: "object", $defs: { n: { type: "array", items: { $ref: "#/$defs/n" } } }, properties: { t: { $ref: "#/$defs/n" } } };
  const plan = compiled({ violations: "block", track: { E: tree } });
  assert.equal(plan.check({ type: "track", event: "E", properties: { t: [[[]]] } }), { outcome: "ok" });
  let deep: unknown[] = [];
  for (let i = 0; i < 200_000; i++) deep = [deep];
  const verdict = plan.check({ type: "track", event: "E", properties: { t: deep } });
  assert.is(verdict.outcome, "flag");
  assert.equal(pairs(verdict), [["", "error"]]);
});

test.run();
