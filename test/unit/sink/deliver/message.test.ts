/**
 * An events row -> the Segment message a destination receives (sink/deliver/message.ts): Segment's
 * camelCase field names, the fields of `extra` back at the top level (a column winning over them),
 * properties or traits by type, the enrichment only when the ingest derived some, and the record
 * values that are not rows.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { EventRow } from "../../../../schemas/row";
import { parseRow, rowMessage } from "../../../../sink/deliver/message";

/** A row as the ingest writes it: snake_case columns, JSON text for the free-form objects. */
const row = (over: Partial<EventRow> = {}): EventRow => ({
  workspace_id: "w1",
  message_id: "m-1",
  type: "track",
  event: "Order Completed",
  user_id: "u-1",
  anonymous_id: "a-1",
  timestamp: "2026-03-01T10:00:00.000Z",
  original_timestamp: "2026-03-01T09:59:58.000Z",
  sent_at: "2026-03-01T10:00:01.000Z",
  received_at: "2026-03-01T10:00:02.000Z",
  properties: '{"revenue":12.5,"currency":"EUR"}',
  traits: "{}",
  context: '{"ip":"203.0.113.9","library":{"name":"analytics.js","version":"1.0"}}',
  extra: "{}",
  device_type: "other",
  catalog_keys: undefined,
  catalog_shape: 0,
  ...over,
});

test("a track row becomes a message with Segment's camelCase fields", () => {
  const message = rowMessage(row());
  assert.equal(message, {
    messageId: "m-1",
    type: "track",
    userId: "u-1",
    anonymousId: "a-1",
    event: "Order Completed",
    timestamp: "2026-03-01T10:00:00.000Z",
    originalTimestamp: "2026-03-01T09:59:58.000Z",
    sentAt: "2026-03-01T10:00:01.000Z",
    receivedAt: "2026-03-01T10:00:02.000Z",
    context: { ip: "203.0.113.9", library: { name: "analytics.js", version: "1.0" } },
    properties: { revenue: 12.5, currency: "EUR" },
  });
  assert.not.ok("workspace_id" in message, "no column name leaks through");
  assert.not.ok("catalog_shape" in message);
  assert.is(Object.getPrototypeOf(message), Object.prototype, "a plain object, as JSON.stringify and receivers expect");
});

test("page, group and alias columns come back under their Segment names", () => {
  const page = rowMessage(row({ type: "page", event: undefined, name: "Home", category: "Docs" }));
  assert.is(page.name, "Home");
  assert.is(page.category, "Docs");
  assert.not.ok("event" in page);
  const group = rowMessage(row({ type: "group", event: undefined, group_id: "g-9", traits: '{"plan":"pro"}' }));
  assert.is(group.groupId, "g-9");
  const alias = rowMessage(row({ type: "alias", event: undefined, previous_id: "old-id" }));
  assert.is(alias.previousId, "old-id");
});

test("the fields the client sent without a column (in extra) come back at the top level", () => {
  const message = rowMessage(
    row({ extra: JSON.stringify({ integrations: { All: false, Webhooks: true }, channel: "server", _metadata: { bundled: ["x"] } }) }),
  );
  assert.equal(message.integrations, { All: false, Webhooks: true });
  assert.is(message.channel, "server");
  assert.equal(message._metadata, { bundled: ["x"] });
  assert.not.ok("extra" in message);
});

test("a column wins over a same-named field of extra", () => {
  const message = rowMessage(
    row({
      extra: JSON.stringify({
        messageId: "evil",
        type: "x",
        userId: "someone-else",
        receivedAt: "1999-01-01T00:00:00.000Z",
        timestamp: "1999-01-01T00:00:00.000Z",
        context: { forged: true },
        properties: { forged: true },
        channel: "server",
      }),
    }),
  );
  assert.is(message.messageId, "m-1");
  assert.is(message.type, "track");
  assert.is(message.userId, "u-1");
  assert.is(message.receivedAt, "2026-03-01T10:00:02.000Z");
  assert.is(message.timestamp, "2026-03-01T10:00:00.000Z");
  assert.equal(message.context, { ip: "203.0.113.9", library: { name: "analytics.js", version: "1.0" } });
  assert.equal(message.properties, { revenue: 12.5, currency: "EUR" });
  assert.is(message.channel, "server", "the field without a column is still kept");
});

test('"__proto__" in extra stays a data field and pollutes no prototype', () => {
  const message = rowMessage(row({ extra: '{"__proto__":{"polluted":true,"isAdmin":true},"channel":"web"}' }));
  assert.ok(Object.hasOwn(message, "__proto__"), "kept as the client's own field");
  assert.equal(Object.getOwnPropertyDescriptor(message, "__proto__")?.value, { polluted: true, isAdmin: true });
  assert.is(Object.getPrototypeOf(message), Object.prototype, "the message's prototype is not replaced");
  assert.is((message as Record<string, unknown>).polluted, undefined);
  assert.is(({} as Record<string, unknown>).polluted, undefined, "Object.prototype is untouched");
  assert.is(({} as Record<string, unknown>).isAdmin, undefined);
  assert.is(message.channel, "web");
  assert.ok(JSON.stringify(message).includes('"__proto__":{"polluted":true,"isAdmin":true}'), "and it is delivered as sent");
});

test("identify and group get traits, never properties", () => {
  for (const type of ["identify", "group"]) {
    const message = rowMessage(row({ type, event: undefined, traits: '{"email":"a@example.com"}', properties: '{"stray":1}' }));
    assert.equal(message.traits, { email: "a@example.com" }, type);
    assert.not.ok("properties" in message, type);
  }
  assert.equal(rowMessage(row({ type: "identify", event: undefined, traits: "{}" })).traits, {}, "empty traits are an empty object");
});

test("track, page and screen get properties, never traits", () => {
  for (const type of ["track", "page", "screen"]) {
    const message = rowMessage(row({ type, properties: '{"path":"/"}', traits: '{"stray":1}' }));
    assert.equal(message.properties, { path: "/" }, type);
    assert.not.ok("traits" in message, type);
  }
});

test("alias gets neither properties nor traits", () => {
  const message = rowMessage(row({ type: "alias", event: undefined, previous_id: "p", properties: '{"a":1}', traits: '{"b":2}' }));
  assert.not.ok("properties" in message);
  assert.not.ok("traits" in message);
});

test("an empty-string column is absent from the message", () => {
  const message = rowMessage(
    row({
      user_id: "",
      anonymous_id: "a-1",
      event: "",
      name: "",
      category: "",
      group_id: "",
      previous_id: "",
      original_timestamp: "",
      sent_at: "",
    }),
  );
  for (const field of ["userId", "event", "name", "category", "groupId", "previousId", "originalTimestamp", "sentAt"])
    assert.not.ok(field in message, field);
  assert.is(message.anonymousId, "a-1");
  const noAnon = rowMessage(row({ anonymous_id: "" }));
  assert.not.ok("anonymousId" in noAnon);
  assert.is(noAnon.userId, "u-1");
});

test("the enrichment is present only when the ingest derived some", () => {
  assert.not.ok("enrichment" in rowMessage(row()), "nothing derived");
  assert.not.ok(
    "enrichment" in rowMessage(row({ device_type: "other", browser: "", os: "", country: "" })),
    'deviceType "other" alone is nothing',
  );
  assert.equal(rowMessage(row({ is_bot: 1 })).enrichment, { isBot: true });
  assert.equal(rowMessage(row({ device_type: "mobile" })).enrichment, { deviceType: "mobile" });
  assert.equal(
    rowMessage(row({ browser: "Chrome", browser_version: "131.0.0.0", os: "Windows", device_type: "desktop", country: "GB" })).enrichment,
    {
      browser: "Chrome",
      browserVersion: "131.0.0.0",
      os: "Windows",
      deviceType: "desktop",
      country: "GB",
    },
  );
  const some = rowMessage(row({ country: "FR" }));
  assert.equal(some.enrichment, { country: "FR" }, "only the columns set; isBot absent when is_bot is not 1");
});

test("context or extra that is not a JSON object becomes {}", () => {
  const broken = rowMessage(row({ context: "{not json", extra: "[1,2" }));
  assert.equal(broken.context, {});
  assert.is(broken.messageId, "m-1");
  assert.equal(rowMessage(row({ context: "[1,2]" })).context, {}, "an array");
  assert.equal(rowMessage(row({ context: "null" })).context, {}, "null");
  assert.equal(rowMessage(row({ context: '"text"' })).context, {}, "a string");
  assert.equal(rowMessage(row({ context: "" })).context, {}, "empty");
  assert.equal(rowMessage(row({ properties: "{oops" })).properties, {}, "properties too");
  const arrayExtra = rowMessage(row({ extra: '["channel"]' }));
  assert.not.ok("0" in arrayExtra, "an array in extra adds no fields");
  assert.equal(Object.keys(rowMessage(row({ extra: "{bad" }))).sort(), Object.keys(rowMessage(row())).sort(), "a bad extra adds nothing");
});

test("parseRow reads a row from a record value", () => {
  const original = row({ is_bot: 1, extra: '{"channel":"server"}' });
  const parsed = parseRow(Buffer.from(JSON.stringify(original)));
  assert.ok(parsed);
  assert.is(parsed.message_id, "m-1");
  assert.is(parsed.is_bot, 1);
  assert.equal(rowMessage(parsed), rowMessage(original));
});

test("parseRow refuses what is not a JSON object with the row's ids", () => {
  const text = (v: unknown) => Buffer.from(JSON.stringify(v));
  const full = row() as unknown as Record<string, unknown>;
  assert.is(parseRow(null), undefined, "a tombstone");
  assert.is(parseRow(Buffer.from("{not json")), undefined, "not JSON");
  assert.is(parseRow(Buffer.from("")), undefined, "empty");
  assert.is(parseRow(text(null)), undefined, "JSON null");
  assert.is(parseRow(text([full])), undefined, "an array");
  assert.is(parseRow(text("m-1")), undefined, "a string");
  for (const field of ["message_id", "type", "workspace_id", "received_at"]) {
    const missing = { ...full };
    delete missing[field];
    assert.is(parseRow(text(missing)), undefined, `missing ${field}`);
    assert.is(parseRow(text({ ...full, [field]: 7 })), undefined, `${field} not a string`);
  }
});

test.run();
