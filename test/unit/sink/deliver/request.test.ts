/**
 * A fetch of events records -> one destination's requests (sink/deliver/request.ts): other
 * workspaces' records, suppressed users, unreadable values and filtered messages left out, the
 * offsets they cover counted with the request after them; batches of at most batchSize; the body
 * one message or `{"batch": [...]}`, and X-Signature over its exact bytes.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { createHmac } from "node:crypto";
import type { WebhookDestination } from "../../../../schemas/destinations";
import { entryKey, PrivacyList } from "../../../../schemas/privacy/list";
import { planRequests, requestOf, type FetchedRecord } from "../../../../sink/deliver/request";
import { webhookDestination } from "../../../support/admin-fixtures";

const MADE = "2026-11-29T00:00:00.000Z";
const destination = (over: Partial<WebhookDestination> = {}) =>
  webhookDestination("d1", "w1", {
    url: "http://127.0.0.1:9/",
    headers: { Authorization: "Bearer t" },
    createdAt: MADE,
    updatedAt: MADE,
    ...over,
  });

let offset = 100;
const record = (over: Record<string, unknown> = {}): FetchedRecord => ({
  offset: String(offset++),
  value: Buffer.from(
    JSON.stringify({
      workspace_id: "w1",
      message_id: `m${offset}`,
      type: "track",
      event: "Order Completed",
      user_id: "u1",
      anonymous_id: "",
      timestamp: "2026-11-29T00:00:00.000Z",
      received_at: "2026-11-29T00:00:01.000Z",
      properties: "{}",
      traits: "{}",
      context: "{}",
      extra: "{}",
      device_type: "other",
      catalog_shape: 0,
      ...over,
    }),
  ),
});

test("one request per message without batching; skipped records are counted and covered by the next request's offset", () => {
  const records = [
    record(),
    record({ workspace_id: "w2" }),
    record(),
    { offset: String(offset++), value: Buffer.from("not json") },
    record({ type: "identify" }),
  ];
  const plan = planRequests(destination({ types: ["track"] }), records, new PrivacyList());
  assert.equal(
    plan.requests.map((r) => r.messages.map((m) => m.messageId)),
    [[JSON.parse(records[0]!.value!.toString()).message_id], [JSON.parse(records[2]!.value!.toString()).message_id]],
  );
  assert.is(plan.requests[0]!.lastOffset, records[1]!.offset, "the other workspace's record rides with the first request");
  assert.is(plan.requests[1]!.lastOffset, records[4]!.offset, "the unreadable and the filtered ones with the second");
  assert.equal(Object.fromEntries(plan.skipped), { unreadable: 1, type: 1 }, "another workspace's record is not this destination's skip");
  assert.is(plan.lastOffset, records[4]!.offset);
});

test("batches hold at most batchSize messages, in offset order", () => {
  const records = Array.from({ length: 7 }, () => record());
  const plan = planRequests(destination({ batchSize: 3 }), records, new PrivacyList());
  assert.equal(
    plan.requests.map((r) => r.messages.length),
    [3, 3, 1],
  );
  assert.equal(
    plan.requests.map((r) => r.lastOffset),
    [records[2]!.offset, records[5]!.offset, records[6]!.offset],
  );
});

test("a suppressed user's messages are in no request", () => {
  const privacy = new PrivacyList();
  privacy.apply(entryKey("w1", "u-gone"), { workspaceId: "w1", userId: "u-gone", ids: ["u-gone"], suppressed: true });
  const plan = planRequests(destination(), [record({ user_id: "u-gone" }), record()], privacy);
  assert.is(plan.requests.length, 1);
  assert.is(plan.requests[0]!.messages[0]!.userId, "u1");
  assert.equal(Object.fromEntries(plan.skipped), { suppressed: 1 });
});

test("a deleted user's messages received before the deletion, and a suppressed user's received before the suppression, are in no request", () => {
  const privacy = new PrivacyList();
  const received = Date.parse("2026-11-29T00:00:01.000Z");
  privacy.apply(entryKey("w1", "u-deleted"), {
    workspaceId: "w1",
    userId: "u-deleted",
    ids: ["u-deleted"],
    suppressed: false,
    deletedBefore: received + 1,
  });
  privacy.apply(entryKey("w1", "u-late"), {
    workspaceId: "w1",
    userId: "u-late",
    ids: ["u-late"],
    suppressed: false,
    deletedBefore: received - 1,
  });
  privacy.apply(entryKey("w1", "u-supp"), {
    workspaceId: "w1",
    userId: "u-supp",
    ids: ["u-supp"],
    suppressed: true,
    suppressedFrom: received + 60_000,
  });
  const plan = planRequests(
    destination(),
    [record({ user_id: "u-deleted" }), record({ user_id: "u-late" }), record({ user_id: "u-supp" })],
    privacy,
  );
  assert.equal(
    plan.requests.map((r) => r.messages[0]!.userId),
    ["u-late"],
    "a message received after a deletion (without suppression) is sent",
  );
});

test("a fetch with nothing for the destination plans no request but still ends at its last offset", () => {
  const records = [record({ workspace_id: "w9" }), record({ workspace_id: "w9" })];
  const plan = planRequests(destination(), records, new PrivacyList());
  assert.equal(plan.requests, []);
  assert.is(plan.lastOffset, records[1]!.offset);
});

test("the body is the message alone, or a batch when the destination batches; X-Signature is over the exact bytes", () => {
  const plan = planRequests(destination(), [record()], new PrivacyList());
  const one = requestOf(destination(), plan.requests[0]!.messages, "s3cret");
  assert.is((JSON.parse(one.body.toString()) as { type: string }).type, "track");
  assert.is(one.headers["x-signature"], createHmac("sha1", "s3cret").update(one.body).digest("hex"));
  assert.is(one.headers.Authorization, "Bearer t");
  const batched = requestOf(destination({ batchSize: 10 }), plan.requests[0]!.messages, undefined);
  assert.is((JSON.parse(batched.body.toString()) as { batch: unknown[] }).batch.length, 1, "a batching destination always gets a batch");
  assert.is(batched.headers["x-signature"], undefined, "no secret, no signature");
});

test.run();
