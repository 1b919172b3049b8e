import { test } from "uvu";
import * as assert from "uvu/assert";
import { recordFromIdentify, recordsFromBatch } from "../ingest/envelope";
import type { Envelope } from "../schemas/envelope";
import type { BatchBody, IdentifyBody } from "../schemas/messages";

const receipt = { workspaceId: "ws1", receivedAt: "2026-11-22T10:00:00.123Z" };
const parse = (value: string) => JSON.parse(value) as Envelope;

test("one record per batch item, keyed by messageId, in order", () => {
  const body: BatchBody = {
    batch: [
      { type: "identify", messageId: "a", userId: "u" },
      { type: "track", messageId: "b", userId: "u", event: "E" },
    ],
  };
  const records = recordsFromBatch(body, receipt);
  assert.equal(records.map((r) => r.key), ["a", "b"]);
  const first = parse(records[0]!.value);
  assert.is(first.workspaceId, "ws1");
  assert.is(first.receivedAt, receipt.receivedAt);
  assert.is(first.message.type, "identify");
});

test("a missing timestamp defaults to receivedAt; a given one is kept", () => {
  const body: BatchBody = {
    batch: [
      { type: "track", messageId: "a", userId: "u", event: "E" },
      { type: "track", messageId: "b", userId: "u", event: "E", timestamp: "2026-01-01T00:00:00.000Z" },
    ],
  };
  const [a, b] = recordsFromBatch(body, receipt).map((r) => parse(r.value));
  assert.is(a!.message.timestamp, receipt.receivedAt);
  assert.is(b!.message.timestamp, "2026-01-01T00:00:00.000Z");
});

test("batch context is merged under the item's context; the item's keys win", () => {
  const body: BatchBody = {
    context: { ip: "1.1.1.1", library: { name: "batch-lib" } },
    batch: [
      { type: "track", messageId: "a", userId: "u", event: "E", context: { ip: "2.2.2.2" } },
      { type: "track", messageId: "b", userId: "u", event: "E" },
    ],
  };
  const [a, b] = recordsFromBatch(body, receipt).map((r) => parse(r.value));
  assert.equal(a!.message.context, { ip: "2.2.2.2", library: { name: "batch-lib" } });
  assert.equal(b!.message.context, { ip: "1.1.1.1", library: { name: "batch-lib" } });
});

test("sentAt of the batch is carried on every envelope; absent stays absent", () => {
  const body: BatchBody = { sentAt: "2026-11-22T09:59:59.000Z", batch: [{ type: "track", messageId: "a", userId: "u", event: "E" }] };
  assert.is(parse(recordsFromBatch(body, receipt)[0]!.value).sentAt, "2026-11-22T09:59:59.000Z");
  const without: BatchBody = { batch: [{ type: "track", messageId: "a", userId: "u", event: "E" }] };
  assert.is("sentAt" in parse(recordsFromBatch(without, receipt)[0]!.value), false);
});

test("an identify body becomes an identify message, sentAt moved to the envelope", () => {
  const body: IdentifyBody = { messageId: "m", userId: "u", traits: { a: 1 }, sentAt: "2026-11-22T09:00:00.000Z" };
  const record = recordFromIdentify(body, receipt);
  const envelope = parse(record.value);
  assert.is(record.key, "m");
  assert.is(envelope.message.type, "identify");
  assert.is(envelope.sentAt, "2026-11-22T09:00:00.000Z");
  assert.is("sentAt" in envelope.message, false);
  assert.equal((envelope.message as { traits?: unknown }).traits, { a: 1 });
});

test.run();
