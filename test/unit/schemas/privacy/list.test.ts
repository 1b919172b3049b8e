/**
 * The pure side of deleting and suppressing users (schemas/privacy/list.ts, parts.ts): which messages a
 * request drops, the ids of an events row read without parsing it, the topic entry's shape
 * (the SQL of a deletion: test/unit/schemas/privacy/deletion.test.ts). The live side is test/live/privacy.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { messageRow } from "../../../../schemas/row";
import type { Message } from "../../../../schemas/messages";
import { deletionTargets } from "../../../../schemas/privacy/deletion";
import { entryKey, itemIds, parseEntry, PrivacyList, rowIds, rowReceivedAt, type PrivacyEntry } from "../../../../schemas/privacy/list";
import { ENTRY_PART_BYTES, entryParts, partKey } from "../../../../schemas/privacy/parts";

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

test("itemIds reads a refused item's ids as the ingest reads a message's: numbers as their text, blank ones absent", () => {
  assert.equal(itemIds({ userId: "u", anonymousId: "a" }), ["u", "a"]);
  assert.equal(itemIds({ userId: 42, anonymousId: 7 }), ["42", "7"], "analytics-ruby's numeric ids");
  assert.equal(itemIds({ userId: "   ", anonymousId: "a1" }), [undefined, "a1"], "a blank userId: the anonymousId decides");
  assert.equal(itemIds({ userId: "", anonymousId: " " }), [undefined, undefined]);
  assert.equal(itemIds({ userId: 2 ** 60, anonymousId: Number.NaN }), [undefined, undefined], "a number that lost digits names nobody");
  assert.equal(itemIds({ userId: { id: "u" }, anonymousId: ["a"] }), [undefined, undefined]);
  assert.equal(itemIds("text"), [undefined, undefined]);
  assert.equal(itemIds(null), [undefined, undefined]);
  // The question the ingest and the sink ask of a refused item.
  const list = new PrivacyList();
  list.apply(entryKey("w", "42"), entry({ userId: "42", ids: ["42", "dev-1"], suppressed: true, suppressedFrom: 0 }));
  assert.ok(list.drops("w", ...itemIds({ userId: 42 }), 1), "suppressed user 42 sent as a number");
  assert.ok(list.drops("w", ...itemIds({ userId: " ", anonymousId: "dev-1" }), 1), "a blank userId on the user's device");
  assert.not.ok(list.drops("w", ...itemIds({ userId: 43 }), 1));
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

test("hostile link: mallory's identify names alice's userId as its anonymousId; deleting or suppressing mallory never matches alice", () => {
  // What linkedIdsQuery finds for mallory after `identify {userId: "mallory", anonymousId: "alice"}`.
  const linked = ["alice"];
  const [events, users, identities, rejected] = deletionTargets("db", "events", "w", "mallory", linked, 1_700_000_000);
  assert.not.match(events!.where, /user_id IN/);
  assert.match(events!.where, "user_id = 'mallory' OR (user_id = '' AND anonymous_id IN ('mallory', 'alice'))");
  assert.not.match(users!.where, /alice/);
  assert.not.match(identities!.where, /alice/);
  assert.not.match(rejected!.where, `'"userId":"alice"'`);
  const list = new PrivacyList();
  list.apply(entryKey("w", "mallory"), entry({ userId: "mallory", ids: ["mallory", "alice"], suppressed: true, deletedBefore: 1_000 }));
  assert.not.ok(list.drops("w", "alice", undefined, 500), "alice's identified message, covered by the deletion's time");
  assert.not.ok(list.drops("w", "alice", "alice-device", Number.POSITIVE_INFINITY), "alice's new messages are not suppressed");
  assert.ok(list.drops("w", "mallory", undefined, Number.POSITIVE_INFINITY));
  assert.ok(list.drops("w", undefined, "alice", Number.POSITIVE_INFINITY), "an anonymous message naming the linked id: mallory's link");
  // Entries written by earlier releases list a previousId that is another user's userId: same rule.
  list.apply(entryKey("w", "bob"), entry({ userId: "bob", ids: ["bob", "carol"], suppressed: true }));
  assert.not.ok(list.drops("w", "carol", undefined, Number.POSITIVE_INFINITY));
});

test("entryParts: any number of linked ids in records of at most the part size, each a whole entry; together every id once", () => {
  // 1,400 linked ids of 200 characters: one record of them would be about 290 KB.
  const ids = ["victim", ...[...Array(1_400).keys()].map((i) => `${i}-${"x".repeat(195)}`.slice(0, 200))];
  const whole = entry({ userId: "victim", ids, suppressed: true, suppressedFrom: 5, deletedBefore: 7 });
  const parts = entryParts(whole, 64 * 1024);
  assert.ok(parts.length >= 5, `${parts.length} parts`);
  assert.equal(
    parts.map((p) => p.key),
    parts.map((_, i) => partKey("w", "victim", i)),
  );
  assert.is(parts[0]!.key, entryKey("w", "victim"), "the first part has the key of a one-record entry");
  for (const { entry: part } of parts) {
    assert.ok(Buffer.byteLength(JSON.stringify(part.ids)) <= 64 * 1024, `${Buffer.byteLength(JSON.stringify(part.ids))} bytes of ids`);
    assert.equal({ ...part, ids: [] }, { ...whole, ids: [] }, "each part carries the user and the flags");
    assert.equal(parseEntry(JSON.stringify(part)), part, "each part is an entry the followers read");
  }
  assert.equal(
    parts.flatMap((p) => p.entry.ids),
    ids,
  );
  assert.is(entryParts(entry({ ids: ["u", "a1"] })).length, 1, "a small entry stays one record");
  assert.ok(ENTRY_PART_BYTES <= (1024 * 1024) / 4, "a part's ids stay far below Kafka's default 1 MB");
});

test("PrivacyList over an entry in parts: every part's ids match, get() joins them, a later request empties the parts it no longer needs", () => {
  const ids = ["victim", ...[...Array(300).keys()].map((i) => `dev-${i}`)];
  const list = new PrivacyList();
  const parts = entryParts(entry({ userId: "victim", ids, suppressed: true }), 500);
  assert.ok(parts.length > 3);
  for (const p of parts) list.apply(p.key, p.entry);
  assert.is(list.size, 1, "one user");
  assert.equal(
    list.keysOf("w", "victim"),
    parts.map((p) => p.key),
  );
  assert.equal(new Set(list.get("w", "victim")!.ids), new Set(ids));
  for (const id of ["dev-0", "dev-150", "dev-299"]) assert.ok(list.drops("w", undefined, id, Number.POSITIVE_INFINITY), id);
  assert.ok(list.drops("w", "victim", undefined, Number.POSITIVE_INFINITY));

  // unsuppressed, with fewer ids: one part with ids, the earlier keys emptied (not tombstones:
  // a release before parts forgets a user's whole entry on a tombstone of any of its keys)
  const later = entryParts(entry({ userId: "victim", ids: ["victim", "dev-0"], suppressed: false }), 500, list.keysOf("w", "victim"));
  assert.equal(
    later.map((p) => p.key),
    parts.map((p) => p.key),
  );
  for (const p of later) assert.equal(parseEntry(JSON.stringify(p.entry)), p.entry, "every record is an entry");
  assert.equal(
    later.slice(1).map((p) => p.entry.ids),
    parts.slice(1).map(() => []),
  );
  for (const p of later) list.apply(p.key, p.entry);
  assert.equal(list.get("w", "victim")!.ids, ["victim", "dev-0"]);
  // "victim" as an anonymousId: every part named the userId; ids no part names are forgotten
  for (const id of ["dev-0", "dev-299", "victim"]) assert.not.ok(list.drops("w", undefined, id, Number.POSITIVE_INFINITY), id);
  assert.not.ok(list.drops("w", "victim", undefined, Number.POSITIVE_INFINITY));
  // tombstones (a hand's cleanup, or compaction's) remove records one by one
  for (const key of later.slice(1).map((p) => p.key)) list.apply(key, parseEntry(null));
  assert.equal(list.keysOf("w", "victim"), [entryKey("w", "victim")]);
  for (const id of ["dev-0", "victim"]) assert.not.ok(list.drops("w", undefined, id, Number.POSITIVE_INFINITY), id);
  list.apply(entryKey("w", "victim"), undefined);
  assert.is(list.size, 0);
  assert.is(list.get("w", "victim"), undefined);
});

test("refused-item targets list their matches' rejectionIds (an item can match two of them); other tables' targets count", () => {
  const ids = [...Array(400).keys()].map((i) => `c${i}-`.padEnd(200, "\u0001"));
  const targets = deletionTargets("d", "events", "ws", "u", ids, 1_800_000_000);
  const refused = targets.filter((t) => t.table === "rejected_messages");
  assert.ok(refused.length > 1, `${refused.length} refused-item statements`);
  for (const t of refused) assert.is(t.keys, `SELECT rejection_id AS id FROM \`d\`.\`rejected_messages\` WHERE ${t.where}`);
  for (const t of targets.filter((t) => t.table !== "rejected_messages")) assert.is(t.keys, undefined);
});
