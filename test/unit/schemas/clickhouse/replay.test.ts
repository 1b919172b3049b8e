/** The replay's page of stored events: its SQL on both dialects, rows back to ISO times, and the position an operator resumes from. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { parsePosition, positionText, replayCountQuery, replayPageQuery, replayRow } from "../../../../schemas/clickhouse/replay";

/** Whether `text` holds a C0 or C1 control character (or DEL). */
const hasControl = (text: string) => [...text].some((c) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f));

/** 2025-11-01T00:00:00Z to 2025-11-02T00:00:00.500Z. */
const range = { workspaceId: "ws-1", fromMs: 1761955200000, toMs: 1762041600500 };

test("a page reads FINAL in (received_at, message_id, type) order within the workspace and range", () => {
  const q = replayPageQuery("current", "db", "events", range, undefined, 1000);
  assert.match(q, /FROM `db`\.`events` FINAL/);
  assert.match(q, /workspace_id = 'ws-1'/);
  assert.match(q, /received_at >= fromUnixTimestamp64Milli\(toInt64\(1761955200000\), 'UTC'\)/);
  assert.match(q, /received_at < fromUnixTimestamp64Milli\(toInt64\(1762041600500\), 'UTC'\)/);
  assert.match(q, /ORDER BY received_at, message_id, type\nLIMIT 1000$/);
  assert.match(q, /toUnixTimestamp64Milli\(received_at\) AS received_at_ms/);
  assert.not.match(q, /catalog_keys/);
});

test("on 18.16 the bounds are whole seconds: from rounded down, to rounded up, so nothing of the range is left out", () => {
  const q = replayPageQuery("legacy", "db", "events", range, undefined, 10);
  assert.match(q, /received_at >= toDateTime\(1761955200\)/);
  assert.match(q, /received_at < toDateTime\(1762041601\)/);
  assert.match(q, /toUInt64\(toUnixTimestamp\(sent_at\)\) \* 1000 AS sent_at_ms/);
});

test("a page after a position takes what follows it: a later receipt, the same one with a greater messageId, or the same messageId with a greater type", () => {
  const q = replayPageQuery("legacy", "db", "events", range, { receivedMs: 1761955205000, messageId: "m'9", type: "track" }, 10);
  assert.ok(
    q.includes(
      "AND (received_at > toDateTime(1761955205) OR (received_at = toDateTime(1761955205) AND (message_id > 'm\\'9' OR (message_id = 'm\\'9' AND type > 'track'))))",
    ),
    q,
  );
  assert.not.match(q, /\(received_at, message_id/, "no tuple comparison: 18.16 has none");
  const current = replayPageQuery("current", "db", "events", range, { receivedMs: 1761955205123, messageId: "m1", type: "identify" }, 10);
  assert.ok(current.includes("(message_id = 'm1' AND type > 'identify')"), current);
  assert.match(current, /received_at = fromUnixTimestamp64Milli\(toInt64\(1761955205123\), 'UTC'\)/);
});

test("the count is of distinct messages under FINAL", () => {
  assert.match(
    replayCountQuery("current", "db", "events", range),
    /^SELECT count\(\) AS n FROM \(SELECT message_id FROM `db`\.`events` FINAL\n/,
  );
});

test("a row comes back with ISO 8601 times, its nulls left out, and its position", () => {
  const { row, position } = replayRow({
    workspace_id: "ws-1",
    message_id: "m1",
    type: "track",
    event: "Order Completed",
    user_id: "u1",
    anonymous_id: "",
    properties: '{"total":3}',
    traits: "{}",
    context: "{}",
    extra: "{}",
    timestamp_ms: "1761955200123",
    original_timestamp_ms: null,
    sent_at_ms: 1761955200000,
    received_at_ms: "1761955201000",
  });
  assert.is(row.timestamp, "2025-11-01T00:00:00.123Z");
  assert.is(row.received_at, "2025-11-01T00:00:01.000Z");
  assert.is(row.sent_at, "2025-11-01T00:00:00.000Z");
  assert.is("original_timestamp" in row, false);
  assert.is(row.properties, '{"total":3}');
  assert.equal(position, { receivedMs: 1761955201000, messageId: "m1", type: "track" });
});

test("a position round-trips through its text; anything else is not one", () => {
  const p = { receivedMs: 1761955201000, messageId: "a/b c", type: "track" };
  assert.equal(parsePosition(positionText(p)), p);
  for (const bad of ["", "/m1", "12/", "x/m1", "-5/m1", "1.5/m1", "12/m1/track/x", "12/%E0%A4%A/track"])
    assert.is(parsePosition(bad), undefined, bad);
  assert.equal(
    parsePosition("12/m1"),
    { receivedMs: 12, messageId: "m1", type: "" },
    "a position printed before types: every type of m1 follows",
  );
});

test("the messageId and type of a position are encoded: a client's control characters never reach the terminal raw", () => {
  const p = { receivedMs: 5, messageId: "x\u001b[2J\u001b]0;owned\u0007\r\nresume with --after 0/evil", type: "tr\u001back" };
  const text = positionText(p);
  assert.not.ok(hasControl(text) || text.includes(" "), "no control character or space");
  assert.is(text.split("/").length, 3, "no slash but the two separators");
  assert.equal(parsePosition(text), p);
});

test.run();
