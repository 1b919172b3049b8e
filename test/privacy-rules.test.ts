/**
 * The pure side of deleting and suppressing users (schemas/privacy.ts): which messages a
 * request drops, the ids of an events row read without parsing it, the topic entry's shape,
 * and the SQL of a deletion. The live side is test/privacy.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { messageRow } from "../schemas/row";
import type { Message } from "../schemas/messages";
import {
  deletionTargets,
  entryKey,
  linkedIdsQuery,
  parseEntry,
  PrivacyList,
  rowIds,
  rowReceivedAt,
  type PrivacyEntry,
} from "../schemas/privacy";

const entry = (over: Partial<PrivacyEntry> = {}): PrivacyEntry => ({
  workspaceId: "w",
  userId: "u",
  ids: ["u", "a1"],
  suppressed: false,
  ...over,
});

test("a deletion drops messages received up to it, by userId or, without one, by a linked anonymousId; later ones are kept", () => {
  const list = new PrivacyList();
  assert.not.ok(list.drops("w", "u", undefined, 1), "empty list");
  list.apply(entryKey("w", "u"), entry({ deletedBefore: 1_000 }));
  assert.ok(list.drops("w", "u", undefined, 999));
  assert.ok(list.drops("w", "", "a1", 1_000), "the linked anonymousId, at the instant of the request");
  assert.ok(list.drops("w", undefined, "a1", 1_000));
  assert.not.ok(list.drops("w", "u", undefined, 1_001), "received after the request: stored");
  assert.not.ok(list.drops("w2", "u", undefined, 999), "another workspace's user of the same id");
  assert.not.ok(list.drops("w", "other", "a1", 999), "another user's identified message on the shared device");
  assert.not.ok(list.drops("w", "", "", 999));
  let read = 0;
  const receivedAt = () => ++read && 999;
  assert.not.ok(list.drops("w", "other", undefined, receivedAt));
  assert.is(read, 0, "the time is read only for a listed id");
  assert.ok(list.drops("w", "u", undefined, receivedAt));
});

test("suppression drops what is received from its time on; unsuppress lifts it; a removed entry drops nothing", () => {
  const list = new PrivacyList();
  list.apply(entryKey("w", "u"), entry({ suppressed: true, suppressedFrom: 2_000 }));
  assert.ok(list.drops("w", undefined, "a1", 5_000));
  assert.ok(list.drops("w", "u", undefined, Number.POSITIVE_INFINITY), "the ingest's question: any new message");
  assert.not.ok(list.drops("w", "u", undefined, 1_500), "received before the suppression, still in Kafka: kept");
  list.apply(entryKey("w", "u"), entry({ suppressed: false, deletedBefore: 1_000, ids: ["u"] }));
  assert.not.ok(list.drops("w", "u", undefined, 5_000));
  assert.ok(list.drops("w", "u", undefined, 500), "the deletion still holds for what it covered");
  assert.not.ok(list.drops("w", undefined, "a1", 500), "a1 is no longer in the user's entry");
  list.apply(entryKey("w", "u"), undefined);
  assert.is(list.size, 0);
  assert.not.ok(list.drops("w", "u", undefined, 500));
});

test("an id in two users' entries: lifting one user's suppression keeps the other's", () => {
  const list = new PrivacyList();
  list.apply(entryKey("w", "a"), entry({ userId: "a", ids: ["a", "shared"], suppressed: true }));
  list.apply(entryKey("w", "b"), entry({ userId: "b", ids: ["b", "shared"], suppressed: true }));
  list.apply(entryKey("w", "b"), entry({ userId: "b", ids: ["b", "shared"], suppressed: false }));
  assert.ok(list.drops("w", undefined, "shared", 1), "still a's");
  list.apply(entryKey("w", "a"), undefined);
  assert.not.ok(list.drops("w", undefined, "shared", 1));
});

test("parseEntry: the entry's shape, or undefined", () => {
  assert.equal(parseEntry(JSON.stringify(entry({ deletedBefore: 5 }))), entry({ deletedBefore: 5 }));
  for (const bad of [null, "", "{", "[]", JSON.stringify({ ...entry(), ids: [1] }), JSON.stringify({ ...entry(), deletedBefore: "5" })])
    assert.is(parseEntry(bad), undefined, String(bad));
});

test("rowIds reads workspace_id, user_id and anonymous_id of the row the ingest writes, escapes included", () => {
  const stamp = {
    workspaceId: 'w"1',
    receivedAt: "2026-11-23T10:00:00.000Z",
    sentAt: null,
    originalTimestamp: null,
    timestamp: "2026-11-23T10:00:00.000Z",
    context: {},
  };
  // decoys in fields before the real keys (message_id, event): their quotes are escaped in the line
  const message = {
    type: "track",
    event: ',"user_id":"x","anonymous_id":"y"',
    userId: 'u\\"q',
    anonymousId: "a-ü",
    messageId: ',"received_at":"1999-01-01T00:00:00.000Z"',
  } as unknown as Message;
  const line = Buffer.from(JSON.stringify(messageRow(message, stamp)));
  assert.equal(rowIds(line), { workspaceId: 'w"1', userId: 'u\\"q', anonymousId: "a-ü" });
  assert.is(rowIds(Buffer.from('{"version":1}')), undefined, "an envelope is not a row");
  assert.is(rowReceivedAt(line), Date.parse(stamp.receivedAt));
  assert.ok(Number.isNaN(rowReceivedAt(Buffer.from('{"version":1}'))));
});

test("deletionTargets: events up to the request by userId or, without one, anonymousId; users, identities, refused items naming an id", () => {
  const targets = deletionTargets("db", "events", "w", ["u", "a'1"], 1_700_000_000.2);
  assert.equal(
    targets.map((t) => t.table),
    ["events", "users", "identities", "rejected_messages"],
  );
  const [events, users, , rejected] = targets;
  assert.is(
    events!.where,
    "workspace_id = 'w' AND (user_id IN ('u', 'a\\'1') OR (user_id = '' AND anonymous_id IN ('u', 'a\\'1'))) AND received_at <= toDateTime(1700000001)",
  );
  assert.is(events!.mutation, `ALTER TABLE \`db\`.\`events\` DELETE WHERE ${events!.where}`);
  assert.is(users!.count, "SELECT count() AS n FROM `db`.`users` WHERE workspace_id = 'w' AND user_id IN ('u', 'a\\'1')");
  assert.match(rejected!.where, `position(raw, '"userId":"u"') > 0`);
  assert.match(rejected!.where, `position(raw, '"anonymousId":"a\\'1"') > 0`);
  assert.match(linkedIdsQuery("db", "events", "w", "u"), /FROM `db`\.`identities` WHERE workspace_id = 'w' AND user_id = 'u'/);
});

test.run();
