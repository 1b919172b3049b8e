import { test } from "uvu";
import * as assert from "uvu/assert";
import { jsonDepthOver, jsonShape, sortBatch, validateBatch, validateSingle } from "../../../../ingest/records/validate";

const validateIdentify = (body: unknown) => validateSingle("identify", body);
import { samples } from "../../../support/samples";
import { nonFinitePath } from "../../../../schemas/wellformed";

test("the spec's identify sample is valid", () => {
  const result = validateIdentify(samples.identify);
  assert.ok(result.ok);
});

test("the spec's mixed identify+track batch sample is valid", () => {
  const result = validateBatch(samples.batch);
  assert.ok(result.ok);
  if (result.ok) assert.is(result.value.batch.length, 2);
});

test("every message type is accepted in a batch", () => {
  const result = validateBatch(samples.everyType);
  assert.ok(result.ok, JSON.stringify(result));
});

test("a day its month lacks is refused by name, as a leap second is; real leap days and 30/31 pass (review-data 4)", () => {
  const impossible = [
    "2026-02-29T12:00:00.000Z",
    "2024-02-30T00:00:00Z",
    "2025-11-31T23:59:59.999Z",
    "2026-04-31T01:00:00+02:00",
    "2100-02-29T00:00:00Z",
  ];
  const fine = ["2024-02-29T12:00:00.000Z", "2000-02-29T00:00:00Z", "2025-12-31T23:59:59.999Z", "2026-04-30t01:00:00+02:00"];
  const item = (timestamp: string, i: number) => ({ type: "track", messageId: `m${i}`, userId: "u", event: "E", timestamp });
  const sorted = sortBatch({ batch: [...impossible, ...fine].map(item) });
  assert.ok(sorted.ok);
  if (!sorted.ok) return;
  assert.equal(
    sorted.value.rejected.map((r) => r.issues),
    impossible.map((_, i) => [{ path: `batch[${i}].timestamp`, expected: "string & CalendarDate" }]),
  );
  assert.equal(
    sorted.value.accepted.map((m) => m.timestamp),
    fine,
  );
  const sent = validateSingle("track", { messageId: "s", userId: "u", event: "E", sentAt: "2026-06-31T00:00:00Z" });
  assert.equal(sent, { ok: false, issues: [{ path: "sentAt", expected: "string & CalendarDate" }] });
  const leap = validateSingle("track", { messageId: "l", userId: "u", event: "E", timestamp: "2026-06-30T23:59:60Z" });
  assert.not.ok(leap.ok, "a leap second is refused too");
});

test("each bad field of a batch is named, with its item index", () => {
  const result = validateBatch({
    batch: [
      { type: "track", messageId: "m1", userId: "u1" },
      { type: "identify", messageId: "", userId: "u2", traits: 5 },
      { type: "group", messageId: "m3", anonymousId: "a3" },
      { type: "alias", messageId: "m4", previousId: "p4" },
      { type: "track", messageId: "m5", userId: "u5", event: "E", timestamp: "yesterday" },
    ],
  });
  assert.not.ok(result.ok);
  if (result.ok) return;
  const paths = result.issues.map((i) => i.path).sort();
  assert.equal(paths, [
    "batch[0].event",
    "batch[1].messageId",
    "batch[1].traits",
    "batch[2].groupId",
    "batch[3].userId",
    "batch[4].timestamp",
  ]);
  assert.ok(result.issues.every((i) => i.expected.length > 0));
});

test("a message with neither userId nor anonymousId is refused by name", () => {
  const result = validateBatch({ batch: [{ type: "track", messageId: "m", event: "E" }] });
  assert.equal(result, { ok: false, issues: [{ path: "batch[0].userId", expected: "userId or anonymousId (one is required)" }] });
  const single = validateIdentify({ messageId: "m", userId: null });
  assert.equal(single, { ok: false, issues: [{ path: "userId", expected: "userId or anonymousId (one is required)" }] });
});

test("an unknown type, an empty batch and a non-object body are refused", () => {
  const unknownType = validateBatch({ batch: [{ type: "purchase", messageId: "m", userId: "u" }, { messageId: "n", userId: "u" }, 5] });
  assert.not.ok(unknownType.ok);
  if (!unknownType.ok) {
    // The field is named, with the values it may take; a non-object item is the item itself.
    assert.equal(
      unknownType.issues.map((i) => i.path),
      ["batch[0].type", "batch[1].type", "batch[2]"],
    );
    assert.is(unknownType.issues[0]!.expected, '"identify" | "track" | "page" | "screen" | "group" | "alias" (required)');
  }
  const empty = validateBatch({ batch: [] });
  assert.not.ok(empty.ok);
  if (!empty.ok) assert.is(empty.issues[0]!.path, "batch");
  const scalar = validateIdentify("hello");
  assert.not.ok(scalar.ok);
  if (!scalar.ok) assert.is(scalar.issues[0]!.path, "$");
});

test("extra fields that SDKs send are allowed", () => {
  const result = validateIdentify({ ...samples.identify, integrations: { All: true }, _metadata: { x: 1 } });
  assert.ok(result.ok);
});

test("each single-message route checks its own type's rules and fills in its type", () => {
  const track = validateSingle("track", { messageId: "m", userId: "u", event: "E" });
  assert.ok(track.ok);
  if (track.ok) assert.is(track.value.type, "track");
  const noEvent = validateSingle("track", { messageId: "m", userId: "u" });
  assert.equal(noEvent.ok ? [] : noEvent.issues.map((i) => i.path), ["event"]);
  const noGroupId = validateSingle("group", { messageId: "m", userId: "u" });
  assert.equal(noGroupId.ok ? [] : noGroupId.issues.map((i) => i.path), ["groupId"]);
  const aliasNoPrevious = validateSingle("alias", { messageId: "m", userId: "u" });
  assert.equal(aliasNoPrevious.ok ? [] : aliasNoPrevious.issues.map((i) => i.path), ["previousId"]);
  assert.ok(validateSingle("page", { messageId: "m", anonymousId: "a" }).ok, "page name is optional");
  assert.ok(validateSingle("screen", { messageId: "m", anonymousId: "a", name: null }).ok, "screen name is optional");
});

test("a body whose type disagrees with its route is refused", () => {
  const result = validateSingle("identify", { type: "track", messageId: "m", userId: "u", event: "E" });
  assert.not.ok(result.ok);
  if (!result.ok)
    assert.equal(
      result.issues.map((i) => i.path),
      ["type"],
    );
});

test("messageId is required on every route", () => {
  for (const type of ["identify", "track", "page", "screen", "group", "alias"] as const) {
    const result = validateSingle(type, { userId: "u", event: "E", groupId: "g", previousId: "p" });
    assert.not.ok(result.ok, type);
    if (!result.ok)
      assert.ok(
        result.issues.some((i) => i.path === "messageId"),
        type,
      );
  }
});

test("times outside what ClickHouse can store are refused by name", () => {
  // 2106-01-15 is within DateTime's UInt32 seconds, but 18.16 stores it as 1970-01-01 (its date tables end with 2105).
  for (const timestamp of [
    "0000-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z",
    "2106-01-01T00:00:00Z",
    "2106-01-15T12:00:00.000Z",
    "2106-02-08T00:00:00Z",
  ]) {
    const result = validateSingle("track", { messageId: "m", userId: "u", event: "E", timestamp });
    assert.equal(result.ok ? [] : result.issues.map((i) => i.path), ["timestamp"], timestamp);
  }
  assert.ok(validateSingle("track", { messageId: "m", userId: "u", event: "E", timestamp: "2105-12-31T23:59:59.999Z" }).ok);
  assert.ok(validateSingle("track", { messageId: "m", userId: "u", event: "E", timestamp: "1970-01-01T00:00:00Z" }).ok);
});

test("JSON depth counts brackets outside strings only", () => {
  const nested = (n: number) => "[".repeat(n) + "]".repeat(n);
  assert.is(jsonDepthOver(nested(64), 64), false);
  assert.is(jsonDepthOver(nested(65), 64), true);
  assert.is(jsonDepthOver(`{"a":"${"[".repeat(500)}"}`, 2), false, "brackets in strings do not count");
  assert.is(jsonDepthOver(`{"a":"\\"[[["}`, 1), false, "escaped quotes do not end the string");
  assert.is(jsonDepthOver(`{"a":{"b":{"c":1}},"d":[1]}`, 3), false);
  assert.is(jsonDepthOver(`{"a":{"b":{"c":[1]}}}`, 3), true);
});

test("an anonymous visitor's message with `userId: null` beside its anonymousId is valid (analytics.js before identify)", () => {
  const track = { type: "track", messageId: "ajs-1", event: "Plan Chosen", userId: null, anonymousId: "20bc6683-ff1e-4b03" };
  assert.ok(validateSingle("track", track).ok, "single");
  assert.ok(validateBatch({ batch: [track, { ...track, type: "page", name: "Pricing", messageId: "ajs-2" }] }).ok, "batch");
  const nobody = validateSingle("track", { ...track, anonymousId: null });
  assert.not.ok(nobody.ok, "neither id: refused");
  if (!nobody.ok)
    assert.equal(
      nobody.issues.map((i) => i.path),
      ["userId"],
    );
  assert.not.ok(validateSingle("track", { ...track, anonymousId: "" }).ok, "an empty anonymousId is no id");
});

test.run();

/** jsonShape's mayOverflow of a text (its depth within 64). */
const mayOverflow = (text: string): boolean => {
  const shape = jsonShape(text, 64);
  return !shape.tooDeep && shape.mayOverflow;
};

test("jsonShape's mayOverflow finds every number JSON.parse reads as Infinity, and not a hex messageId's digits", () => {
  // Every form JSON has for such a number, after each character that may come before one.
  const huge = [
    "1e400",
    "-1.25E+309",
    "7e0308",
    "9".repeat(309),
    `-${"1".repeat(400)}.5`,
    `1${"0".repeat(300)}e10`,
    `${"2".repeat(250)}e60`,
  ];
  for (const n of huge)
    for (const text of [`{"a":${n}}`, `{"a":[${n}]}`, `{"a":[0,${n}]}`, `{"a": ${n}}`, `{"a":\n\t${n}}`, `[${n}]`]) {
      assert.ok(nonFinitePath(JSON.parse(text)) !== undefined, `${text.slice(0, 40)} holds a non-finite number`);
      assert.ok(mayOverflow(text), text.slice(0, 40));
    }
  for (const text of ['{"a":1e30}', '{"a":1.5e-7}', '{"a":123456789012345678901}', '{"a":true,"b":false,"c":null}', '{"a":1e-400}'])
    assert.not.ok(mayOverflow(text), text);
  // Inside strings, keys included, where a UUID holds such digits: not a number token.
  assert.not.ok(mayOverflow('{"messageId":"0b5e9e301c-4f1e-9e3a-af2e123","e123":"1e400"}'));
  assert.not.ok(mayOverflow(JSON.stringify({ text: "9".repeat(5_000), list: Array(300).fill(1) })), "long strings, many short numbers");
});
