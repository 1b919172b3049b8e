/**
 * The schema side of tracking plans (schemas/plan-check.ts): the formats written here, RE2 patterns
 * (ECMA-262's `\uXXXX` read, patterns kept apart by Ajv), Ajv's errors as violations at their
 * paths, and a compile that does not run an operator's pattern on the native engine.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { compileSchema, escapePointer, FORMATS, newAjv, re2, toViolation } from "../../../schemas/plan-check";

/** The violations of `data` under `schema`, compiled as a plan compiles it. */
function violations(schema: object, data: unknown) {
  const { problems, validate } = compileSchema(newAjv(), schema, "/track/E");
  assert.equal(problems, []);
  return validate!(data) ? [] : validate!.errors!.map((e) => toViolation(e, "/properties"));
}

test("date-time: RFC 3339, with a day the month has and an offset", () => {
  const ok = FORMATS["date-time"]!;
  for (const s of ["2026-11-28T10:00:00Z", "2024-02-29T23:59:60.123+05:30", "2026-01-01 00:00:00z", "2026-12-31T00:00:00.5-00:00"])
    assert.ok(ok(s), s);
  for (const s of [
    "2025-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-11-28T24:00:00Z",
    "2026-11-28T10:00:00",
    "2026-11-28",
    "x",
  ])
    assert.not.ok(ok(s), s);
  assert.ok(FORMATS.date!("2000-02-29"));
  assert.not.ok(FORMATS.date!("1900-02-29"));
});

test("email, uri, uuid", () => {
  assert.ok(FORMATS.email!("ada@example.co.uk"));
  for (const s of ["ada@", "@x.io", "ada@localhost", "a b@x.io", "a@@x.io", `${"a".repeat(250)}@x.io`]) assert.not.ok(FORMATS.email!(s), s);
  assert.ok(FORMATS.uri!("https://example.com/a?b=c"));
  assert.ok(FORMATS.uri!("mailto:ada@example.com"));
  for (const s of ["/relative/path", "example.com", "http://exa mple.com"]) assert.not.ok(FORMATS.uri!(s), s);
  assert.ok(FORMATS.uuid!("0f8fad5b-d9cb-469f-a165-70867728950e"));
  assert.ok(FORMATS.uuid!("urn:uuid:0F8FAD5B-D9CB-469F-A165-70867728950E"));
  assert.not.ok(FORMATS.uuid!("0f8fad5b-d9cb-469f-a165-70867728950"));
});

test("re2: \\uXXXX read as a code point, an escaped backslash kept, unsupported syntax thrown", () => {
  assert.ok(re2("^\\u00e9t\\u00E9$").test("été"));
  assert.ok(re2("^\\\\u0041$").test("\\u0041"), "\\\\u0041 is a backslash then u0041");
  assert.not.ok(re2("^\\\\u0041$").test("A"));
  assert.throws(() => re2("a(?=b)"));
  assert.throws(() => re2("(a)\\1"));
  assert.is.not(String(re2("^a$")), String(re2("^b$")), "Ajv keeps patterns apart by their text");
});

test("two patterns of one schema each check their own property", () => {
  const schema = { type: "object", properties: { a: { type: "string", pattern: "^a+$" }, b: { type: "string", pattern: "^b+$" } } };
  assert.equal(violations(schema, { a: "aa", b: "bb" }), []);
  assert.equal(
    violations(schema, { a: "aa", b: "aa" }).map((v) => v.path),
    ["/properties/b"],
  );
});

test("violations: union types, const, dependentRequired, unevaluatedProperties, property names, escaped keys", () => {
  const schema = {
    type: "object",
    properties: { "a/b~c": { type: ["string", "null"] }, kind: { const: "x" }, card: { type: "string" }, cvc: { type: "string" } },
    dependentRequired: { card: ["cvc"] },
    propertyNames: { maxLength: 6 },
    unevaluatedProperties: false,
  };
  assert.equal(violations(schema, { "a/b~c": 1, kind: "y", card: "4111", toolong: 1 }), [
    { path: "/properties/toolong", keyword: "maxLength", message: "its name must NOT have more than 6 characters" },
    { path: "/properties/toolong", keyword: "propertyNames", message: "has a name the plan does not allow" },
    { path: "/properties/a~1b~0c", keyword: "type", message: "must be string or null (got number)" },
    { path: "/properties/kind", keyword: "const", message: 'must be "x"' },
    { path: "/properties/cvc", keyword: "dependentRequired", message: 'is required when "card" is present' },
    { path: "/properties/toolong", keyword: "unevaluatedProperties", message: "is not allowed by the plan" },
  ]);
  assert.is(escapePointer("~/"), "~0~1");
});

test("a long message is cut", () => {
  const values = Array.from({ length: 100 }, (_, i) => `value-${i}`);
  const [v] = violations({ type: "object", properties: { a: { enum: values } } }, { a: "z" });
  assert.ok(v!.message.length <= 300);
  assert.match(v!.message, /^must be one of "value-0", "value-1"/);
});

test("compile: a backtracking patternProperties next to a property it would match is compiled (not run natively)", () => {
  const name = `${"a".repeat(40)}b`;
  const schema = { type: "object", properties: { [name]: { type: "string" } }, patternProperties: { "^(a|a)*$": { type: "number" } } };
  assert.equal(violations(schema, { aaaa: "x", [name]: "y" }), [
    { path: "/properties/aaaa", keyword: "type", message: "must be number (got string)" },
  ]);
});

test("compile: a strict-mode error deep in the schema is named at its place, URI-decoded", () => {
  const { problems } = compileSchema(newAjv(), { type: "object", properties: { "total price": { properties: {} } } }, "/track/E");
  assert.equal(problems, ['/track/E/properties/total price: strict mode: missing type "object" for keyword "properties" (strictTypes)']);
});

test.run();
