/** A tracking plan applied to a request's messages: flagged ones kept with their violations, blocked ones refused beside the others, omitted ones trimmed. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { Message } from "../../../../schemas/messages";
import { CompiledPlan, type TrackingPlan } from "../../../../schemas/plans";
import { applyPlan, PlanBook, violationTexts } from "../../../../ingest/records/plan";

const plan = (over: Partial<TrackingPlan>): CompiledPlan =>
  CompiledPlan.compile({
    workspaceId: "ws1",
    version: 3,
    createdAt: "2026-11-29T10:00:00.000Z",
    unplanned: "flag",
    violations: "flag",
    track: {
      "Order Completed": { type: "object", properties: { total: { type: "number" }, currency: { type: "string" } }, required: ["total"] },
    },
    ...over,
  });
const track = (messageId: string, event: string, properties: Record<string, unknown>) =>
  ({ type: "track", messageId, userId: "u1", event, properties }) as Message;
const sorted = (...messages: Message[]) => ({
  messages,
  rejected: [{ index: 0, item: { bad: true }, issues: [{ path: "$input.type", expected: "a type" }] }],
});

test("no plan: the request as it is", () => {
  const s = sorted(track("m1", "Order Completed", { total: "x" }));
  assert.is(applyPlan(s, undefined).sorted, s);
});

test("flag: every message stored, the violating ones with their violations as row text, counted", () => {
  const planned = applyPlan(
    sorted(track("m1", "Order Completed", { total: 5 }), track("m2", "Order Completed", { total: "5" }), track("m3", "Mystery", {})),
    plan({}),
  );
  assert.equal(
    planned.sorted.messages.map((m) => m.messageId),
    ["m1", "m2", "m3"],
  );
  assert.is(planned.violations[0], undefined);
  assert.equal(JSON.parse(planned.violations[1]![0]!), {
    path: "/properties/total",
    keyword: "type",
    message: JSON.parse(planned.violations[1]![0]!).message,
  });
  assert.equal(JSON.parse(planned.violations[2]![0]!).path, "/event");
  assert.equal(planned.counts, { flag: 2 });
  assert.is(planned.sorted.rejected.length, 1, "the request's own refused item stays");
});

test("block: the violating message refused as an item naming the path and the plan's version; the valid ones beside it stored", () => {
  const planned = applyPlan(
    sorted(track("m1", "Order Completed", { total: 5 }), track("m2", "Order Completed", { currency: "EUR" })),
    plan({ violations: "block" }),
  );
  assert.equal(
    planned.sorted.messages.map((m) => m.messageId),
    ["m1"],
  );
  const refused = planned.sorted.rejected[1]!;
  assert.is((refused.item as unknown as Message).messageId, "m2");
  assert.equal(
    refused.issues.map((i) => i.path),
    ["/properties/total"],
  );
  assert.match(refused.issues[0]!.expected, /\(tracking plan v3\)$/);
  assert.equal(planned.counts, { block: 1 });
  assert.equal(planned.violations, [undefined]);
});

test("omit: the unplanned properties removed from the stored message, and said among its violations", () => {
  const planned = applyPlan(sorted(track("m1", "Order Completed", { total: 5, debug: true })), plan({ violations: "omit" }));
  assert.equal((planned.sorted.messages[0] as { properties: object }).properties, { total: 5 });
  assert.equal(
    planned.violations[0]!.map((v) => JSON.parse(v).path),
    ["/properties/debug"],
  );
  assert.equal(planned.counts, { omit: 1 });
});

test("violation text is the three fields only, in order", () => {
  assert.equal(violationTexts([{ path: "/a", keyword: "type", message: "m", extra: 1 } as never]), [
    '{"path":"/a","keyword":"type","message":"m"}',
  ]);
});

test("the book holds one compiled plan per workspace; undefined removes it", () => {
  const book = new PlanBook();
  const p = plan({});
  book.set("ws1", p);
  assert.is(book.get("ws1"), p);
  assert.is(book.size, 1);
  book.set("ws1", undefined);
  assert.is(book.get("ws1"), undefined);
});

test.run();
