/** What the live view makes of a record (ingest/live/items.ts): the item shown, and the filters. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { entryMatches, liveEntry, liveItem, matches, recordWorkspace } from "../../../../ingest/live/items";
import { acceptedRecord, refusedRecord } from "../../../support/live-records";
import { deliveryReports } from "../../../../schemas/destinations";

const track = {
  type: "track",
  messageId: "m-1",
  userId: "u1",
  event: "Signed Up",
  properties: { plan: "pro" },
  context: { library: { name: "analytics.js", version: "1.84.3" } },
};

test("an accepted record: its ids, event, library and the whole row with its JSON columns parsed", () => {
  const item = liveItem(acceptedRecord("ws1", track))!;
  assert.is(item.status, "accepted");
  assert.is(item.messageId, "m-1");
  assert.is(item.type, "track");
  assert.is(item.event, "Signed Up");
  assert.is(item.userId, "u1");
  assert.equal(item.library, { name: "analytics.js", version: "1.84.3" });
  const message = item.message as { properties: unknown; workspace_id: string };
  assert.equal(message.properties, { plan: "pro" });
  assert.is(message.workspace_id, "ws1");
});

test("a page's name stands in for the event", () => {
  const item = liveItem(acceptedRecord("ws1", { type: "page", messageId: "p-1", anonymousId: "a1", name: "Pricing" }))!;
  assert.is(item.event, "Pricing");
  assert.is(item.anonymousId, "a1");
});

test("a refused record: its reasons, the item as sent (without the writeKey), its ids when it had them", () => {
  const record = refusedRecord("ws1", { type: "track", messageId: "b-2", userId: "u1", event: 42, writeKey: "secret-key" }, [
    "batch[1].event: string",
  ]);
  const item = liveItem(record)!;
  assert.is(item.status, "refused");
  assert.is(item.messageId, "b-2");
  assert.equal(item.reasons, ["batch[1].event: string"]);
  assert.is(item.userId, "u1");
  assert.not.match(JSON.stringify(item), "secret-key");
});

test("the workspace is read from the record; a value that is not ours has none", () => {
  assert.is(recordWorkspace("accepted", acceptedRecord("ws9", track).value), "ws9");
  assert.is(recordWorkspace("accepted", Buffer.from("not json")), undefined);
  assert.is(recordWorkspace("refused", Buffer.from("{}")), undefined);
  assert.is(liveItem({ kind: "refused", workspaceId: "ws1", value: Buffer.from("[1"), id: "x" }), undefined);
});

test("filters: the workspace always, then type, event, userId and anonymousId exactly", () => {
  const record = acceptedRecord("ws1", track);
  assert.ok(matches(record, { workspaceId: "ws1" }));
  assert.not.ok(matches(record, { workspaceId: "ws2" }), "another workspace never");
  assert.ok(matches(record, { workspaceId: "ws1", type: "track", event: "Signed Up", userId: "u1" }));
  assert.not.ok(matches(record, { workspaceId: "ws1", type: "page" }));
  assert.not.ok(matches(record, { workspaceId: "ws1", event: "Signed" }), "no prefix match");
  assert.not.ok(matches(record, { workspaceId: "ws1", anonymousId: "u1" }));
});

test("a refused record's workspace is read from its first key without parsing; an escaped one, or another order, by parsing", () => {
  assert.is(recordWorkspace("refused", refusedRecord("ws-7", { a: 1 }, ["x"]).value), "ws-7");
  assert.is(recordWorkspace("refused", Buffer.from('{"workspaceId":"w\\"q","raw":""}')), 'w"q');
  assert.is(recordWorkspace("refused", Buffer.from('{"raw":"","workspaceId":"late"}')), "late");
});

test("an entry is the item as JSON text with the fields the filters read; entryMatches agrees with matches", () => {
  const record = acceptedRecord("ws1", track);
  const entry = liveEntry(record)!;
  assert.equal(JSON.parse(entry.json), liveItem(record));
  for (const filter of [
    { workspaceId: "ws1" },
    { workspaceId: "ws2" },
    { workspaceId: "ws1", type: "track", event: "Signed Up" },
    { workspaceId: "ws1", anonymousId: "u1" },
  ])
    assert.is(entryMatches(entry, filter), matches(record, filter), JSON.stringify(filter));
});

test("a delivery record: the destination, what the attempt meant, its status and attempt, the message's ids; its workspace read without parsing", () => {
  const [report] = deliveryReports(
    { workspaceId: "ws1", destinationId: "d-1" },
    [{ messageId: "m1", type: "track", event: "<b>Signed Up</b>", userId: "u1", receivedAt: "2026-11-29T10:00:00.000Z" }],
    { outcome: "delivered", status: 200, attempt: 3 },
    Date.UTC(2026, 10, 29, 10, 0, 9),
  );
  const value = Buffer.from(JSON.stringify(report));
  assert.is(recordWorkspace("delivery", value), "ws1");
  const record = { kind: "delivery" as const, workspaceId: "ws1", value, id: "events-deliveries/0/7" };
  const item = liveItem(record)!;
  assert.is(item.status, "delivery");
  assert.equal(item.delivery, { destinationId: "d-1", outcome: "delivered", status: 200, attempt: 3, at: "2026-11-29T10:00:09.000Z" });
  assert.is(item.event, "<b>Signed Up</b>");
  assert.is(item.receivedAt, "2026-11-29T10:00:09.000Z", "ordered by the attempt's time");
  assert.ok(matches(record, { workspaceId: "ws1", userId: "u1" }));
  assert.not.ok(matches(record, { workspaceId: "ws1", type: "identify" }));
  assert.is(liveItem({ ...record, value: Buffer.from('{"workspaceId":"ws1","messageId":"m1"}') }), undefined, "not a report");
});

test.run();
