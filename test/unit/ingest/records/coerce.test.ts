import { test } from "uvu";
import * as assert from "uvu/assert";
import { coerceMessage } from "../../../../ingest/records/coerce";
import { sortBatch, validateSingle } from "../../../../ingest/records/validate";

test("numeric ids become strings (analytics-python groupId/previousId, analytics-ruby ids)", () => {
  const coerced = coerceMessage({ type: "group", messageId: 7, userId: 1043, groupId: 55, previousId: 3.5 });
  assert.equal(coerced, { type: "group", messageId: "7", userId: "1043", groupId: "55", previousId: "3.5" });
  assert.ok(validateSingle("group", { messageId: "m", userId: 1043, groupId: 55 }).ok);
  assert.ok(validateSingle("alias", { messageId: "m", userId: 1, previousId: 2 }).ok);
});

test("an empty or blank userId/anonymousId is absent; the other id decides", () => {
  assert.equal(coerceMessage({ userId: "", anonymousId: "a" }), { anonymousId: "a" });
  assert.equal(coerceMessage({ userId: "u", anonymousId: "  " }), { userId: "u" });
  assert.ok(validateSingle("track", { messageId: "m", userId: "", anonymousId: "a", event: "E" }).ok);
  const onlyEmpty = validateSingle("track", { messageId: "m", userId: "", event: "E" });
  assert.not.ok(onlyEmpty.ok, "a message whose only id is empty is still refused");
});

test("not coerced: a missing or empty messageId (the spec's idempotency key), objects as ids, non-finite numbers", () => {
  assert.not.ok(validateSingle("track", { userId: "u", event: "E" }).ok);
  assert.not.ok(validateSingle("track", { messageId: "", userId: "u", event: "E" }).ok);
  assert.not.ok(validateSingle("track", { messageId: "m", userId: { id: 1 }, event: "E" }).ok);
  const input = { messageId: "m", userId: "u" };
  assert.is(coerceMessage(input), input, "unchanged input is returned as it is");
  assert.is(coerceMessage("text"), "text");
});

test("a numeric id past 2^53 is refused naming its field, not rounded into another message's or user's id", () => {
  // JSON.parse reads both as 12345678901234567000: coerced, the two messages would be one row.
  const body = '{"type":"track","messageId":12345678901234567890,"userId":"u","event":"E"}';
  const parsed = JSON.parse(body) as Record<string, unknown>;
  assert.is(coerceMessage(parsed), parsed, "left a number");
  const refused = validateSingle("track", parsed);
  assert.not.ok(refused.ok);
  if (!refused.ok)
    assert.ok(
      refused.issues.some((i) => i.path === "messageId"),
      JSON.stringify(refused.issues),
    );
  const user = validateSingle("track", { messageId: "m", userId: 1e21, event: "E" });
  assert.not.ok(user.ok, "1e21 is past 2^53 too");
  assert.ok(
    validateSingle("track", { messageId: Number.MAX_SAFE_INTEGER, userId: -Number.MAX_SAFE_INTEGER, event: "E" }).ok,
    "2^53 - 1 is exact",
  );
});

test("a batch keeps its good items and names each bad one; coercion applies per item", () => {
  const sorted = sortBatch({
    batch: [
      { type: "track", event: "A", userId: 1, messageId: "m1" },
      { type: "track", userId: "u", messageId: "m2" },
      "not an object",
      { type: "identify", userId: "", anonymousId: "a", messageId: "m4" },
    ],
  });
  assert.ok(sorted.ok);
  if (!sorted.ok) return;
  assert.equal(
    sorted.value.accepted.map((m) => m.messageId),
    ["m1", "m4"],
  );
  assert.is(sorted.value.accepted[0]!.userId, "1");
  assert.equal(
    sorted.value.rejected.map((r) => [r.index, r.issues.map((i) => i.path)]),
    [
      [1, ["batch[1].event"]],
      [2, ["batch[2]"]],
    ],
  );
  assert.is(sorted.value.rejected[1]!.item, "not an object", "the item as sent is kept");
});

test("a bad frame refuses the whole body", () => {
  assert.not.ok(sortBatch({ batch: "x" }).ok);
  assert.not.ok(sortBatch({ batch: [] }).ok);
  assert.not.ok(sortBatch({ batch: [{}], sentAt: "yesterday" }).ok);
});

test.run();
