import { test } from "uvu";
import * as assert from "uvu/assert";
import { buildRecords, skewCorrected, type BatchDefaults, type Receipt } from "../ingest/envelope";
import type { EventRecord } from "../schemas/envelope";
import type { Message } from "../schemas/messages";
import { EVENT_ROW_COLUMNS, ROW_VALUE_PREFIX, type EventRow } from "../schemas/row";

const receipt: Receipt = { workspaceId: "ws1", receivedAt: "2026-11-22T10:00:00.123Z", clientIp: "203.0.113.9" };
const parse = (record: EventRecord) => JSON.parse(record.value) as EventRow;

function build(messages: Message[], defaults: BatchDefaults = {}, max = 32 * 1024): EventRow[] {
  const result = buildRecords(messages, defaults, receipt, max);
  if (!result.ok) throw new Error(`message ${result.index} too large`);
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
  assert.ok(result.ok);
  if (!result.ok) return;
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
  assert.is(a!.original_timestamp, null);
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

test("a correction that would leave the storable range keeps the client's timestamp", () => {
  const [e] = build([{ type: "track", messageId: "a", userId: "u", event: "E", timestamp: "1970-01-01T00:00:01.000Z" }], {
    sentAt: "2100-01-01T00:00:00.000Z",
  });
  assert.is(e!.timestamp, "1970-01-01T00:00:01.000Z");
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
  assert.ok(result.ok);
  if (result.ok) assert.not.match(result.records[0]!.value, "secret");
});

test("a message over maxMessageBytes is reported with its index and size", () => {
  const big = { type: "track", messageId: "b", userId: "u", event: "E", properties: { blob: "x".repeat(2000) } } as Message;
  const result = buildRecords([{ type: "track", messageId: "a", userId: "u", event: "E" }, big], {}, receipt, 1024);
  assert.not.ok(result.ok);
  if (!result.ok) {
    assert.is(result.index, 1);
    assert.ok(result.bytes > 2000);
  }
});

test("the row is valid JSON with every column, workspace_id first", () => {
  const [e] = build([{ type: "identify", messageId: 'q"uote', userId: "u", traits: { n: "ü" }, timestamp: "2026-11-22T09:00:00.000Z" }], {
    sentAt: "2026-11-22T09:00:00.000Z",
  });
  assert.equal(Object.keys(e!), [...EVENT_ROW_COLUMNS]);
  assert.is(e!.message_id, 'q"uote');
  assert.equal(JSON.parse(e!.traits), { n: "ü" });
});

test("the size limit counts the row's values unescaped: quotes do not push a message over it", () => {
  const quotes = { type: "track", messageId: "q", userId: "u", event: "E", properties: { blob: '"'.repeat(900) } } as Message;
  // properties as JSON text: 900 escaped quotes, 1,800 bytes; escaped again in the line: 3,600.
  const result = buildRecords([quotes], {}, receipt, 2048);
  assert.ok(result.ok, "the message fits in 2048 bytes although its line is longer");
  if (result.ok) assert.ok(Buffer.byteLength(result.records[0]!.value) > 3_600);
  assert.not.ok(buildRecords([quotes], {}, receipt, 1024).ok);
});

test.run();
