import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  buildRecords,
  CLIENT_TIME_WINDOW,
  inClientTimeWindow,
  skewCorrected,
  type BatchDefaults,
  type Receipt,
} from "../../../../ingest/records/build";
import type { EventRecord } from "../../../../schemas/envelope";
import type { Message } from "../../../../schemas/messages";
import { EVENT_ROW_COLUMNS, ROW_VALUE_PREFIX, type EventRow } from "../../../../schemas/row";
import { recordBytes } from "../../../../schemas/kafka/limits";

const receipt: Receipt = { workspaceId: "ws1", receivedAt: "2026-11-22T10:00:00.123Z", clientIp: "203.0.113.9" };
const parse = (record: EventRecord) => JSON.parse(record.value) as EventRow;

function build(messages: Message[], defaults: BatchDefaults = {}, max = 32 * 1024): EventRow[] {
  const result = buildRecords(messages, defaults, receipt, max);
  if (result.oversized.length > 0) throw new Error(`message ${result.oversized[0]!.index} too large`);
  return result.records.map(parse);
}

test("one record per message, keyed by messageId, in order; the value is the row", () => {
  const result = buildRecords(
    [
      { type: "identify", messageId: "a", userId: "u" },
      { type: "track", messageId: "b", userId: "u", event: "E" },
    ],
    {},
    receipt,
    1000,
  );
  assert.equal(result.oversized, []);
  assert.equal(
    result.records.map((r) => r.key),
    ["a", "b"],
  );
  assert.ok(result.records[0]!.value.startsWith(ROW_VALUE_PREFIX.toString()));
  const first = parse(result.records[0]!);
  assert.is(first.workspace_id, "ws1");
  assert.is(first.received_at, receipt.receivedAt);
  assert.is(first.type, "identify");
});

test("a missing timestamp is receivedAt; a given one without sentAt is kept as is", () => {
  const [a, b] = build([
    { type: "track", messageId: "a", userId: "u", event: "E" },
    { type: "track", messageId: "b", userId: "u", event: "E", timestamp: "2026-01-01T00:00:00.000Z" },
  ]);
  assert.is(a!.timestamp, receipt.receivedAt);
  assert.is(a!.original_timestamp, undefined);
  assert.is(b!.timestamp, "2026-01-01T00:00:00.000Z");
  assert.is(b!.original_timestamp, "2026-01-01T00:00:00.000Z");
});

test("with sentAt, timestamp = receivedAt - (sentAt - timestamp); the client's value is kept", () => {
  // The client's clock is 1 h fast: it stamped the event 5 s before it sent the batch.
  const [e] = build([{ type: "track", messageId: "a", userId: "u", event: "E", timestamp: "2026-11-22T10:59:55.123Z" }], {
    sentAt: "2026-11-22T11:00:00.123Z",
  });
  assert.is(e!.timestamp, "2026-11-22T09:59:55.123Z");
  assert.is(e!.original_timestamp, "2026-11-22T10:59:55.123Z");
  assert.is(e!.sent_at, "2026-11-22T11:00:00.123Z");
});

test("a message's own sentAt wins over the batch's", () => {
  const [e] = build(
    [{ type: "track", messageId: "a", userId: "u", event: "E", timestamp: "2026-11-22T10:00:00.000Z", sentAt: "2026-11-22T10:00:02.000Z" }],
    { sentAt: "2026-11-22T12:00:00.000Z" },
  );
  assert.is(e!.sent_at, "2026-11-22T10:00:02.000Z");
  assert.is(e!.timestamp, "2026-11-22T09:59:58.123Z");
  assert.is(e!.extra, "{}");
});

test("RudderStack's originalTimestamp is the client time when timestamp is absent", () => {
  const [e] = build([
    {
      type: "track",
      messageId: "a",
      userId: "u",
      event: "E",
      originalTimestamp: "2026-11-22T10:59:55.123Z",
      sentAt: "2026-11-22T11:00:00.123Z",
    },
  ]);
  assert.is(e!.timestamp, "2026-11-22T09:59:55.123Z");
  assert.is(e!.original_timestamp, "2026-11-22T10:59:55.123Z");
  assert.is(e!.extra, "{}");
});

test("times are rewritten in canonical UTC form ClickHouse reads", () => {
  const [e] = build([{ type: "track", messageId: "a", userId: "u", event: "E", timestamp: "2026-11-22t12:00:00+02:00" }]);
  assert.is(e!.timestamp, "2026-11-22T10:00:00.000Z");
  assert.is(e!.original_timestamp, "2026-11-22T10:00:00.000Z");
});

test("a canonical time is kept as sent; a day the month lacks is rolled over as Date.parse reads it", () => {
  const [a, b] = build([
    { type: "track", messageId: "a", userId: "u", event: "E", timestamp: "2026-11-22T10:00:00.000Z" },
    { type: "track", messageId: "b", userId: "u", event: "E", timestamp: "2026-02-30T10:00:00.000Z" },
  ]);
  assert.is(a!.timestamp, "2026-11-22T10:00:00.000Z");
  assert.is(b!.timestamp, "2026-03-02T10:00:00.000Z");
});

test("a client time outside the window does not place the event: the row gets the day it arrived, the text stays in extra", () => {
  const [far, broken, rudder, edge] = build([
    // a hostile or broken clock, no sentAt
    { type: "track", messageId: "a", userId: "u", event: "E", timestamp: "1975-03-02T00:00:00.000Z" },
    // a device clock 14 years ahead that sent sentAt too: the skew correction is good, the client's own time is not
    {
      type: "track",
      messageId: "b",
      userId: "u",
      event: "E",
      timestamp: "2040-11-22T10:59:55.000Z",
      sentAt: "2040-11-22T11:00:00.000Z",
    } as Message,
    { type: "track", messageId: "c", userId: "u", event: "E", originalTimestamp: "2105-01-01T00:00:00.000Z" } as Message,
    // just inside the window: placed by the client's time
    { type: "track", messageId: "d", userId: "u", event: "E", timestamp: "2026-11-23T10:00:00.123Z" },
  ]);
  assert.is(far!.original_timestamp, undefined);
  assert.is(far!.timestamp, receipt.receivedAt);
  assert.equal(JSON.parse(far!.extra), { timestamp: "1975-03-02T00:00:00.000Z" });
  assert.is(broken!.original_timestamp, undefined);
  assert.is(broken!.timestamp, "2026-11-22T09:59:55.123Z");
  assert.equal(JSON.parse(broken!.extra), { timestamp: "2040-11-22T10:59:55.000Z" });
  assert.is(rudder!.original_timestamp, undefined);
  assert.equal(JSON.parse(rudder!.extra), { originalTimestamp: "2105-01-01T00:00:00.000Z" });
  assert.is(edge!.original_timestamp, "2026-11-23T10:00:00.123Z");
  assert.is(edge!.extra, "{}");
});

test("a wrong sentAt alone does not carry a good client time out of the window: the client's time is stored", () => {
  // timestamp + (receivedAt - sentAt) with sentAt 1970 would be 2083: the user's latest traits for ever.
  const [pinned, fine] = build([
    { type: "identify", messageId: "p", userId: "u", timestamp: "2026-11-22T10:00:00.000Z", sentAt: "1970-01-01T00:00:00.000Z" } as Message,
    { type: "identify", messageId: "f", userId: "u", timestamp: "2026-11-22T10:00:00.000Z", sentAt: "2026-11-22T10:00:05.000Z" } as Message,
  ]);
  assert.is(pinned!.timestamp, "2026-11-22T10:00:00.000Z");
  assert.is(pinned!.original_timestamp, "2026-11-22T10:00:00.000Z");
  assert.is(fine!.timestamp, new Date(Date.parse(receipt.receivedAt) - 5_000).toISOString(), "a sane sentAt still corrects");
});

test("the window, in whole UTC days: 5 x 366 days back (historical imports), to the end of the next day", () => {
  const received = Date.parse(receipt.receivedAt); // 2026-11-22T10:00:00.123Z
  const day = 86_400_000;
  assert.ok(inClientTimeWindow(Date.parse("2026-11-23T23:59:59.999Z"), received), "the next UTC day, to its end");
  assert.not.ok(inClientTimeWindow(Date.parse("2026-11-24T00:00:00.000Z"), received), "two days ahead is outside");
  assert.not.ok(inClientTimeWindow(received + 2 * day, received));
  const firstDay = Date.parse("2026-11-22T00:00:00.000Z") - 5 * 366 * day;
  assert.ok(inClientTimeWindow(firstDay, received), "from the start of the arrival's day 1,830 days back");
  assert.not.ok(inClientTimeWindow(firstDay - 1, received));
  assert.equal(CLIENT_TIME_WINDOW, { pastDays: 5 * 366, futureDays: 1 });
});

/** The row of one message sent at `receivedAt` (an attempt), with the client's `sentAt` of that attempt. */
function attempt(message: Message, receivedAt: string, sentAt: string): EventRow {
  const result = buildRecords([message], { sentAt }, { ...receipt, receivedAt }, 32 * 1024);
  if (result.oversized.length > 0) throw new Error("too large");
  return parse(result.records[0]!);
}

test("a retry near the window's edges gets the same originalTimestamp decision (one row under FINAL)", () => {
  const shift = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();
  // A device dated 24 h 1 min ahead; the SDK re-stamps sentAt, and retries 2 minutes later (review-data 1, review-edge 3).
  const ahead = { type: "track", messageId: "m-1", userId: "u", event: "E", timestamp: "2026-05-11T12:01:00.000Z" } as Message;
  const first = attempt(ahead, "2026-05-10T12:00:00.000Z", "2026-05-11T12:01:00.000Z");
  const retry = attempt(ahead, "2026-05-10T12:02:00.000Z", "2026-05-11T12:03:00.000Z");
  assert.is(first.original_timestamp, "2026-05-11T12:01:00.000Z");
  assert.is(retry.original_timestamp, first.original_timestamp);
  // An import 5 x 366 days minus 10 s old, retried 10 s later.
  const old = shift("2026-05-10T12:00:00.000Z", -5 * 366 * 86_400_000 + 10_000);
  const imported = { type: "track", messageId: "m-2", userId: "u", event: "E", timestamp: old } as Message;
  const a = attempt(imported, "2026-05-10T12:00:00.000Z", old);
  const b = attempt(imported, "2026-05-10T12:00:10.000Z", shift(old, 10_000));
  assert.is(a.original_timestamp, old);
  assert.is(b.original_timestamp, a.original_timestamp);
  // Two days ahead stays outside on every attempt.
  const far = { type: "track", messageId: "m-3", userId: "u", event: "E", timestamp: "2026-05-12T12:00:00.000Z" } as Message;
  assert.is(attempt(far, "2026-05-10T12:00:00.000Z", "2026-05-12T12:00:00.000Z").original_timestamp, undefined);
  assert.is(attempt(far, "2026-05-10T12:02:00.000Z", "2026-05-12T12:02:00.000Z").original_timestamp, undefined);
});

test("a hostile batch spread over 1,500 months makes rows of at most the window's months", () => {
  const months = [...Array(1500).keys()].map(
    (i) => `${1970 + Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, "0")}-15T12:00:00.000Z`,
  );
  const rows = build(months.map((timestamp, i) => ({ type: "track", messageId: `m${i}`, userId: "u", event: "E", timestamp }) as Message));
  const month = (r: EventRow) => (r.original_timestamp ?? r.received_at).slice(0, 7);
  const distinct = new Set(rows.map(month));
  // In the window (received 2026-11-22): 2021-12 to 2026-11, placed by their own time; the 1,440 others by their arrival (2026-11).
  assert.is(rows.filter((r) => r.original_timestamp !== undefined).length, 60);
  assert.is(distinct.size, 60);
});

test("skew correction keeps offsets' meaning", () => {
  assert.is(
    skewCorrected("2026-11-22T10:00:00.000Z", "2026-11-22T12:00:00+02:00", "2026-11-22T11:59:00+02:00"),
    "2026-11-22T09:59:00.000Z",
  );
});

test("batch context is merged under the item's; the item's keys win; ip filled when absent", () => {
  const [a, b, c] = build(
    [
      { type: "track", messageId: "a", userId: "u", event: "E", context: { ip: "2.2.2.2" } },
      { type: "track", messageId: "b", userId: "u", event: "E" },
      { type: "track", messageId: "c", userId: "u", event: "E", context: { locale: "pt" } },
    ],
    { context: { library: { name: "batch-lib" } } },
  );
  assert.equal(JSON.parse(a!.context), { library: { name: "batch-lib" }, ip: "2.2.2.2" });
  assert.equal(JSON.parse(b!.context), { library: { name: "batch-lib" }, ip: "203.0.113.9" });
  assert.equal(JSON.parse(c!.context), { library: { name: "batch-lib" }, locale: "pt", ip: "203.0.113.9" });
});

test("the writeKey never reaches the topic", () => {
  const message = { type: "track", messageId: "a", userId: "u", event: "E", writeKey: "secret" } as Message;
  const result = buildRecords([message], {}, receipt, 1000);
  assert.not.match(result.records[0]!.value, "secret");
});

test("a message over maxMessageBytes gets no record and is reported with its index and size; the others are built", () => {
  const big = { type: "track", messageId: "b", userId: "u", event: "E", properties: { blob: "x".repeat(2000) } } as Message;
  const small = (id: string) => ({ type: "track", messageId: id, userId: "u", event: "E" }) as Message;
  const result = buildRecords([small("a"), big, small("c")], {}, receipt, 1024);
  assert.equal(
    result.records.map((r) => r.key),
    ["a", "c"],
  );
  assert.is(result.oversized.length, 1);
  assert.equal([result.oversized[0]!.index, result.oversized[0]!.over, result.oversized[0]!.limit], [1, "message", 1024]);
  assert.ok(result.oversized[0]!.bytes > 2000);
});

test("the row is valid JSON, workspace_id first, columns in order; only those holding their default are left out", () => {
  const [e] = build([{ type: "identify", messageId: 'q"uote', userId: "u", traits: { n: "ü" }, timestamp: "2026-11-22T09:00:00.000Z" }], {
    sentAt: "2026-11-22T09:00:00.000Z",
  });
  const omitted = [
    "event",
    "name",
    "category",
    "group_id",
    "previous_id",
    "browser",
    "browser_version",
    "os",
    "is_bot",
    "country",
    "violations",
  ];
  assert.equal(
    Object.keys(e!),
    EVENT_ROW_COLUMNS.filter((c) => !omitted.includes(c)),
  );
  const [full] = build(
    [{ type: "page", messageId: "p", anonymousId: "a", name: "Home", category: "Docs", timestamp: "2026-11-22T09:00:00.000Z" }],
    { sentAt: "2026-11-22T09:00:00.000Z", context: { userAgent: "x" } },
  );
  assert.equal(
    Object.keys(full!),
    EVENT_ROW_COLUMNS.filter(
      (c) => !["event", "group_id", "previous_id", "browser", "browser_version", "os", "is_bot", "country", "violations"].includes(c),
    ),
  );
  assert.is(e!.message_id, 'q"uote');
  assert.equal(JSON.parse(e!.traits), { n: "ü" });
});

test("the size limit counts the row's values unescaped: quotes do not push a message over it", () => {
  const quotes = { type: "track", messageId: "q", userId: "u", event: "E", properties: { blob: '"'.repeat(900) } } as Message;
  // properties as JSON text: 900 escaped quotes, 1,800 bytes; escaped again in the line: 3,600.
  const result = buildRecords([quotes], {}, receipt, 2048);
  assert.equal(result.oversized, [], "the message fits in 2048 bytes although its line is longer");
  assert.ok(Buffer.byteLength(result.records[0]!.value) > 3_600);
  assert.is(buildRecords([quotes], {}, receipt, 1024).oversized.length, 1);
});

test("a message within maxMessageBytes whose record, escaped again, passes maxRecordBytes is reported as over the record limit", () => {
  // 70 property keys of 195 quotes (review-edge 4): 27,861 bytes of properties JSON, a record of about 83 KB.
  const properties = Object.fromEntries(Array.from({ length: 70 }, (_, i) => ['"'.repeat(195) + String(i).padStart(3, "0"), 0]));
  const quotes = { type: "track", messageId: "big-1", userId: "u", event: "E", properties } as Message;
  const small = { type: "track", messageId: "s", userId: "u", event: "E" } as Message;
  const unbounded = buildRecords([small, quotes], {}, receipt, 32_768);
  assert.equal(unbounded.oversized, [], "within 32 KB as a message");
  const limit = 65_536 - 1_024;
  const bounded = buildRecords([small, quotes], {}, receipt, 32_768, undefined, limit);
  assert.is(bounded.oversized.length, 1);
  const [over] = bounded.oversized;
  assert.equal({ index: over!.index, over: over!.over, limit: over!.limit }, { index: 1, over: "record", limit });
  assert.is(over!.bytes, recordBytes(unbounded.records[1]!));
  assert.ok(over!.bytes > limit);
  assert.equal(
    bounded.records.map((r) => r.key),
    ["s"],
  );
  // Plain text near the message limit fits the record limit: nothing measured twice is refused.
  const plain = { type: "track", messageId: "p", userId: "u", event: "E", properties: { text: "x".repeat(32_000) } } as Message;
  const fits = buildRecords([plain], {}, receipt, 32_768, undefined, limit);
  assert.equal(fits.oversized, []);
  assert.ok(recordBytes(fits.records[0]!) <= limit);
});

test.run();

test("a field with a column in another type only is kept in extra (a track's name and category, an identify's event)", () => {
  const [track, identify, page, alias] = build([
    { type: "track", messageId: "a", userId: "u", event: "E", name: "n1", category: "c1" } as Message,
    { type: "identify", messageId: "b", userId: "u", event: "signed up", groupId: "g", previousId: "p" } as Message,
    { type: "page", messageId: "c", userId: "u", name: "Home", category: "Docs", event: "x" } as Message,
    { type: "alias", messageId: "d", userId: "u", previousId: "old", groupId: "g2" } as Message,
  ]);
  assert.is(track!.name, undefined, "left out: the column's default ''");
  assert.equal(JSON.parse(track!.extra), { name: "n1", category: "c1" });
  assert.equal(JSON.parse(identify!.extra), { event: "signed up", groupId: "g", previousId: "p" });
  assert.is(page!.name, "Home");
  assert.equal(JSON.parse(page!.extra), { event: "x" });
  assert.is(alias!.previous_id, "old");
  assert.equal(JSON.parse(alias!.extra), { groupId: "g2" });
});

test("originalTimestamp sent beside timestamp is kept in extra (the column holds timestamp)", () => {
  const [e] = build([
    {
      type: "track",
      messageId: "a",
      userId: "u",
      event: "E",
      timestamp: "2026-01-01T00:00:00.000Z",
      originalTimestamp: "2025-12-31T23:59:00.000Z",
    } as Message,
  ]);
  assert.is(e!.original_timestamp, "2026-01-01T00:00:00.000Z");
  assert.equal(JSON.parse(e!.extra), { originalTimestamp: "2025-12-31T23:59:00.000Z" });
});

test("a batch's own fields (integrations, ...) go to each item's extra; the item's keys win, objects merge one level", () => {
  const [a, b] = build(
    [
      { type: "track", messageId: "a", userId: "u", event: "E" },
      { type: "track", messageId: "b", userId: "u", event: "E", integrations: { Amplitude: true }, channel: "server" } as Message,
    ],
    { fields: { integrations: { All: false, Amplitude: false }, channel: "browser", library: "x" } },
  );
  assert.equal(JSON.parse(a!.extra), { integrations: { All: false, Amplitude: false }, channel: "browser", library: "x" });
  assert.equal(JSON.parse(b!.extra), { integrations: { All: false, Amplitude: true }, channel: "server", library: "x" });
});
