/**
 * Refused items as records for the rejected topic (buildRejected, ingest/records/rejected.ts).
 */
import { type RejectedEnvelope } from "../../../../schemas/envelope";
import { createHash } from "node:crypto";
import { test } from "uvu";
import { buildRejected } from "../../../../ingest/records/rejected";
import * as assert from "uvu/assert";
import { recordBytes } from "../../../../schemas/kafka/limits";

const receipt = { workspaceId: "ws1", receivedAt: "2026-11-23T10:00:00.000Z" };
const envelopeOf = (value: string) => JSON.parse(value) as RejectedEnvelope;

test("a refused item never carries the writeKey onto the topic", () => {
  const [record] = buildRejected(
    [{ item: { writeKey: "secret-key", messageId: "m1", type: "track" }, reasons: ["event: string"] }],
    receipt,
    32_768,
  );
  assert.not.ok(record!.value.includes("secret-key"));
  const envelope = envelopeOf(record!.value);
  assert.equal(JSON.parse(envelope.raw), { messageId: "m1", type: "track" });
  assert.is(envelope.messageId, "m1");
  assert.is(record!.key, envelope.rejectionId);
});

test("the record stays bounded: raw cut so its escaped form fits, reasons capped, and both say so", () => {
  const quotes = '"'.repeat(50_000); // each quote doubles when escaped again
  const reasons = Array.from({ length: 30 }, (_, i) => `batch[${i}].x: ${"y".repeat(500)}`);
  const [record] = buildRejected([{ item: { note: quotes }, reasons }], receipt, 32_768);
  const envelope = envelopeOf(record!.value);
  assert.ok(Buffer.byteLength(JSON.stringify(envelope.raw)) <= 32_768);
  assert.ok(Buffer.byteLength(record!.value) <= 32_768 + 8_192, `record ${Buffer.byteLength(record!.value)} bytes`);
  assert.is(envelope.reasons.filter((r) => r.startsWith("batch[")).length, 20);
  assert.ok(envelope.reasons.every((r) => r.length <= 200));
  assert.ok(envelope.reasons.some((r) => r === "and 10 more reason(s)"));
  assert.ok(envelope.reasons.some((r) => r.startsWith("raw: cut to ")));
});

test("a refused item's record fits maxRecordBytes (the producer's limit) whatever its text escapes to", () => {
  const controls = "\u0001".repeat(40_000); // 6 bytes each once escaped, 12 escaped again
  const reasons = Array.from({ length: 30 }, (_, i) => `batch[${i}]["${"\u0002".repeat(190)}"]: string`);
  for (const limit of [64_512, 16_384]) {
    const [record] = buildRejected([{ item: { userId: "u", note: controls }, reasons }], receipt, 57_344, false, limit);
    assert.ok(recordBytes(record!) <= limit, `record ${recordBytes(record!)} bytes, limit ${limit}`);
    const envelope = envelopeOf(record!.value);
    assert.ok(envelope.raw.startsWith('{"userId":"u"'), "the ids are kept");
    assert.ok(envelope.reasons.some((r) => r.startsWith("raw: cut to ")));
    assert.ok(envelope.reasons.some((r) => r.startsWith("and ") && r.endsWith("more reason(s)")));
  }
});

test("the same item refused twice has the same rejectionId (one row); another workspace's does not", () => {
  const item = { messageId: "m", event: 5 };
  const [a] = buildRejected([{ item, reasons: ["event: string"] }], receipt, 32_768);
  const [b] = buildRejected([{ item, reasons: ["event: string"] }], { ...receipt, receivedAt: "2026-11-23T11:00:00.000Z" }, 32_768);
  const [c] = buildRejected([{ item, reasons: ["event: string"] }], { ...receipt, workspaceId: "ws2" }, 32_768);
  assert.is(a!.key, b!.key);
  assert.is.not(a!.key, c!.key);
});

test("two over-long items alike in their first 26 KB and different after are two rows; each retry is still one", () => {
  const head = "x".repeat(40_000);
  const refuse = (tail: string) =>
    buildRejected([{ item: { messageId: "m", note: head + tail }, reasons: ["event: string"] }], receipt, 32_768)[0]!;
  const [a, b, again] = [refuse("a"), refuse("b"), refuse("a")];
  const raw = (r: typeof a) => (JSON.parse(r.value) as { raw: string }).raw;
  assert.is(raw(a), raw(b), "the kept text is the same cut");
  assert.is.not(a.key, b.key);
  assert.is(a.key, again.key);
});

test("an oversized item keeps the ids a deletion finds it by, wherever they were sent; its rejectionId is the item's as sent", () => {
  const item = {
    messageId: "m1",
    type: "track",
    properties: { pad: "x".repeat(40_000) },
    previousId: "p-late",
    anonymousId: "a-late",
    userId: "u-late",
  };
  const [record] = buildRejected([{ item, reasons: ["size: over 32 KB"] }], receipt, 32_768);
  const envelope = envelopeOf(record!.value);
  assert.ok(envelope.reasons.some((r) => r.startsWith("raw: cut to ")));
  assert.ok(
    envelope.raw.startsWith('{"userId":"u-late","anonymousId":"a-late","previousId":"p-late","messageId":"m1"'),
    envelope.raw.slice(0, 120),
  );
  const sent = JSON.stringify(item);
  assert.is(record!.key, createHash("sha256").update(`ws1\n${sent}`).digest("hex"));
  // Number-like keys first in the item, a non-string userId: the string ids still lead the text.
  const numbered = { "0": '"'.repeat(12_000), userId: { nested: true }, anonymousId: "a-n", type: "track" };
  const [cut] = buildRejected([{ item: numbered, reasons: ["event: required"] }], receipt, 32_768);
  assert.ok(envelopeOf(cut!.value).raw.startsWith('{"anonymousId":"a-n","0":"'), envelopeOf(cut!.value).raw.slice(0, 40));
  // Whole when it fits: the same keys and values.
  const small = { type: "track", properties: { a: 1 }, userId: "u" };
  assert.equal(
    JSON.parse(envelopeOf(buildRejected([{ item: small, reasons: ["event: required"] }], receipt, 32_768)[0]!.value).raw),
    small,
  );
});

test("IP_ANONYMIZE: every ip of a refused item is anonymized or left out, whatever holds it (issue 46, row 8)", () => {
  const items: unknown[] = [
    { type: "track", messageId: "a", context: { ip: "2002:cb00:714d::1" } }, // 6to4
    { type: "track", messageId: "b", context: { ip: 3405803853 } }, // 203.0.113.77 as a number
    { type: "track", messageId: "c", context: { ip: { v4: "203.0.113.77" } } },
    { type: "track", messageId: "d", context: [{ ip: "203.0.113.77" }] },
    [{ type: "track", messageId: "e", context: { ip: "203.0.113.77" } }],
    { type: "track", messageId: "f", ip: "203.0.113.77", properties: { ip: ["203.0.113.77"] } },
    { type: "track", messageId: "g", context: { ip: "not an address 203.0.113.77" } },
  ];
  const records = buildRejected(
    items.map((item) => ({ item, reasons: ["event: required"] })),
    receipt,
    32_768,
    true,
  );
  const raws = records.map((r) => envelopeOf(r.value).raw);
  for (const raw of raws) {
    assert.not.match(raw, /203\.0\.113\.77|3405803853|cb00:714d/, raw);
    assert.not.match(raw, /"ip":\{|"ip":\[|"ip":\d/, raw);
  }
  assert.equal(JSON.parse(raws[0]!).context, { ip: "203.0.113.0" });
  assert.equal(JSON.parse(raws[1]!).context, {});
  assert.equal(JSON.parse(raws[2]!).context, {});
  assert.equal(JSON.parse(raws[3]!).context, [{ ip: "203.0.113.0" }]);
  assert.equal(JSON.parse(raws[4]!), [{ type: "track", messageId: "e", context: { ip: "203.0.113.0" } }]);
  assert.equal(JSON.parse(raws[5]!), { type: "track", messageId: "f", ip: "203.0.113.0", properties: {} });
  assert.equal(JSON.parse(raws[6]!).context, {});
  // without IP_ANONYMIZE an item is kept as sent
  const [plain] = buildRejected([{ item: items[1], reasons: ["event: required"] }], receipt, 32_768);
  assert.match(envelopeOf(plain!.value).raw, /3405803853/);
});

test.run();
