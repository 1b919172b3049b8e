import { test } from "uvu";
import * as assert from "uvu/assert";
import { cutText, mayHoldLoneSurrogate, nonFinitePath, wellFormed } from "../../../schemas/wellformed";

const horse = "🐎";
const lone = horse.slice(0, 1);

test("lone surrogates become U+FFFD in values and keys at any depth; pairs stay", () => {
  const text = JSON.stringify({ event: `Clicked ${lone}`, properties: { [`k${lone}`]: [1, { deep: [`x${lone}y`] }], ok: horse } });
  assert.ok(mayHoldLoneSurrogate(text));
  const fixed = wellFormed(JSON.parse(text) as Record<string, unknown>);
  assert.equal(fixed, { event: "Clicked \ufffd", properties: { "k\ufffd": [1, { deep: ["x\ufffdy"] }], ok: horse } });
  assert.ok(JSON.stringify(fixed).isWellFormed());
  assert.not.ok(/\\ud[89a-f]/i.test(JSON.stringify(fixed)), "JSON.stringify writes no surrogate escape any more");
});

test("a low surrogate alone and a reversed pair are replaced too", () => {
  assert.is(wellFormed("\udc0e"), "\ufffd");
  assert.is(wellFormed("\udc0e\ud83d"), "\ufffd\ufffd");
});

test("well-formed input is returned as it is (same objects), and plain text is not walked", () => {
  const value = { a: [1, "b", { c: horse }], __proto__: { d: 1 } };
  assert.is(wellFormed(value), value);
  assert.not.ok(mayHoldLoneSurrogate(JSON.stringify({ a: "plain", b: horse })), "a raw pair is not an escape");
  assert.ok(mayHoldLoneSurrogate('{"a":"\\uD83D"}'), "upper-case escapes count");
});

test("a __proto__ key beside a fixed one stays plain data", () => {
  const parsed = JSON.parse(`{"__proto__": {"polluted": true}, "x": "${"\\ud83d"}"}`) as Record<string, unknown>;
  const fixed = wellFormed(parsed);
  assert.is(Object.getPrototypeOf(fixed), Object.prototype);
  assert.equal(Object.keys(fixed), ["__proto__", "x"]);
  assert.is(({} as Record<string, unknown>).polluted, undefined);
});

test("cutText never splits a surrogate pair: every cut of a text with pairs is a well-formed prefix", () => {
  assert.is(cutText("ab\u{1F40E}", 3), "ab", "the pair's first half goes with its second");
  assert.is(cutText("ab\u{1F40E}", 4), "ab\u{1F40E}");
  assert.is(cutText("a\u{1F40E}b", 3), "a\u{1F40E}");
  assert.is(cutText("short", 100), "short");
  const text = `x${horse}${horse}y${horse}`;
  for (let n = 0; n <= text.length; n++) {
    const cut = cutText(text, n);
    assert.ok(cut.isWellFormed() && text.startsWith(cut) && cut.length <= n && cut.length >= n - 1, `cut at ${n}: ${JSON.stringify(cut)}`);
  }
});

test("nonFinitePath names where a number JSON.parse read as Infinity is", () => {
  assert.is(nonFinitePath(JSON.parse('{"p":{"list":[1,2,1e400]}}')), "p.list[2]");
  assert.is(nonFinitePath(JSON.parse('{"p":"1e400","q":1e300}')), undefined, "a string that looks so is no number");
  assert.is(nonFinitePath(JSON.parse("-1e999")), "$");
});

test.run();
