/**
 * An admin operation's answer (schemas/admin/result.ts): refuse with and without a field, done,
 * typia's paths as field names, and invalid naming the first bad field.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { done, invalid, issuesOf, refuse } from "../../../../schemas/admin/result";

const result = suite("admin result");

result("refuse carries a field only when given one; done wraps a value", () => {
  assert.equal(refuse(404, "no key k1"), { ok: false, status: 404, error: "no key k1" });
  assert.not.ok("field" in refuse(409, "taken"));
  assert.equal(refuse(400, "bad", "url"), { ok: false, status: 400, error: "bad", field: "url" });
  assert.equal(done({ a: 1 }), { ok: true, value: { a: 1 } });
});

result("issuesOf strips $input, and the whole input is the body", () => {
  assert.equal(
    issuesOf([
      { path: "$input.a[0].b", expected: "string", value: 1 },
      { path: "$input", expected: "object", value: null },
      { path: "$input.subjectIds[3]", expected: "string & MinLength<1>", value: "" },
    ]),
    [
      { field: "a[0].b", expected: "string" },
      { field: "body", expected: "object" },
      { field: "subjectIds[3]", expected: "string & MinLength<1>" },
    ],
  );
  assert.equal(issuesOf([]), []);
});

result("invalid is a 400 naming the first bad field, listing all", () => {
  const refusal = invalid("token", [
    { path: "$input.name", expected: "string", value: undefined },
    { path: "$input.scope", expected: '("operator" | "workspace")', value: "x" },
  ]);
  assert.is(refusal.status, 400);
  assert.is(refusal.field, "name");
  assert.is(refusal.error, "invalid token: name should be string");
  assert.is(refusal.issues?.length, 2);
  assert.equal(invalid("plan", []), { ok: false, status: 400, error: "invalid plan: body should be valid", field: "body", issues: [] });
});

result.run();
