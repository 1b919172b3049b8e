/**
 * The events topic's contract (schemas/events-record.schema.json, read by test/support/record-contract.ts):
 * its version, every record the ingest app builds in process for the contract traffic matches it,
 * and each way a record can drift from it is refused, naming the field. The same checks against
 * the real ingest and broker: test/live/record-contract.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { buildRecords } from "../../../ingest/records/build";
import { SentShapes } from "../../../ingest/records/catalog";
import { defaultCountryDbPath, Enricher, openCountryDb } from "../../../ingest/records/enrich";
import type { Message } from "../../../schemas/messages";
import { AGENTS, contractTraffic, offsetTime, postTraffic } from "../../support/contract-traffic";
import { inProcessIngest } from "../../support/ingest-app";
import { loadRecordSchema, recordChecker, schemaVersion, topicRecord, type TopicRecord } from "../../support/record-contract";

const schema = loadRecordSchema();
const check = recordChecker(schema);
const enricher = new Enricher(openCountryDb(defaultCountryDbPath()));

test("the schema is version 1, and its $id says so; schemaVersion refuses an $id of another version", () => {
  assert.is(schemaVersion(schema), 1);
  assert.is(schema.$id, "urn:segment-ingest:schemas/events-record/v1");
  assert.throws(() => schemaVersion({ $id: "urn:segment-ingest:schemas/events-record/v1", version: 2 }), /does not end with \/v2/);
  assert.throws(() => schemaVersion({ $id: "urn:x/v0", version: 0 }), /positive integer/);
});

test("every event record the app produces for the contract traffic matches the schema; the refused item is not among them", async () => {
  const app = await inProcessIngest({ contextPolicy: { enricher, anonymizeIp: false, shapes: new SentShapes() } });
  try {
    const traffic = contractTraffic("unit", "wk");
    await postTraffic(app.base, "wk", traffic);
    const events = app.produced.filter((r) => r.rejected !== true);
    assert.equal(events.map((r) => r.key).sort(), [...traffic.accepted].sort());
    for (const r of events) assert.equal(check(topicRecord({ key: Buffer.from(r.key), value: Buffer.from(r.value) })), [], r.value);
    const rows = events.map((r) => JSON.parse(r.value) as Record<string, unknown>);
    assert.equal([...new Set(rows.map((r) => r.type))].sort(), ["alias", "group", "identify", "page", "screen", "track"]);
    assert.ok(
      rows.some((r) => r.is_bot === 1 && r.device_type === "bot"),
      "the crawler is flagged",
    );
    assert.ok(
      rows.some((r) => r.country === "US" && r.browser === "Chrome"),
      "8.8.8.8 and the Chrome agent are enriched",
    );
    assert.ok(
      rows.some((r) => r.catalog_keys === undefined),
      "the repeated shape leaves its key list out",
    );
  } finally {
    await app.close();
  }
});

/** The record of one message built as the ingest builds it (received now, enriched, catalog on). */
function recordOf(message: Record<string, unknown>): TopicRecord {
  const receipt = { workspaceId: "ws", receivedAt: new Date().toISOString(), clientIp: "8.8.8.8" };
  const policy = { enricher, anonymizeIp: false, shapes: new SentShapes() };
  const [record] = buildRecords([message as unknown as Message], { sentAt: receipt.receivedAt }, receipt, 32_768, policy).records;
  return topicRecord({ key: Buffer.from(record!.key), value: Buffer.from(record!.value) });
}

const track = () =>
  recordOf({
    type: "track",
    messageId: "m-track",
    userId: "u",
    event: "E",
    timestamp: offsetTime(Date.now() - 5_000),
    properties: { a: 1 },
    context: { userAgent: AGENTS.chrome },
  });
const typed = (type: string, fields: Record<string, unknown>) => recordOf({ type, messageId: `m-${type}`, userId: "u", ...fields });

/** Each drift from the contract, the record that shows it, and a word the refusal must contain. */
const DRIFTS: [what: string, record: () => TopicRecord, expected: RegExp][] = [
  ["a field the contract does not name", () => row(track(), { write_key: "wk" }), /additional properties \(write_key\)/],
  ["no message_id", () => row(track(), { message_id: undefined }), /required property 'message_id'/],
  [
    "received_at without milliseconds",
    () => row(track(), { received_at: "2026-01-02T03:04:05Z" }),
    /\/value\/received_at must match pattern/,
  ],
  ["a day the calendar lacks", () => row(track(), { timestamp: "2026-02-30T00:00:00.000Z" }), /\/value\/timestamp must match format/],
  ["a time past 2105", () => row(track(), { sent_at: "2106-01-15T12:00:00.000Z" }), /\/value\/sent_at must match pattern/],
  ["an unknown type", () => row(track(), { type: "trak" }), /\/value\/type must be equal to one of the allowed values/],
  ["a track without event", () => row(track(), { event: undefined }), /required property 'event'/],
  ["an identify with an event column", () => row(typed("identify", {}), { event: "E" }), /\/value\/event boolean schema is false/],
  ["a group without group_id", () => row(typed("group", { groupId: "g" }), { group_id: undefined }), /required property 'group_id'/],
  ["context text of an array", () => row(track(), { context: "[1]" }), /\/value\/context must match pattern/],
  ["context text that is not JSON", () => row(track(), { context: '{"a":}' }), /\/value\/context must pass "contentSchema"/],
  ["a track's properties text of a string", () => row(track(), { properties: '"x"' }), /\/value\/properties must match pattern/],
  ["is_bot 0 (left out instead)", () => row(track(), { is_bot: 0 }), /\/value\/is_bot must be equal to constant/],
  ["a country in lowercase", () => row(track(), { country: "us" }), /\/value\/country must match pattern/],
  ["an unknown device type", () => row(track(), { device_type: "phone" }), /\/value\/device_type must be equal to one of/],
  ["neither user_id nor anonymous_id", () => row(track(), { user_id: "" }), /must match a schema in anyOf/],
  ["an alias without user_id", () => row(typed("alias", { previousId: "p" }), { user_id: "", anonymous_id: "a" }), /\/value\/user_id/],
  ["a fractional catalog_shape", () => row(track(), { catalog_shape: 1.5 }), /\/value\/catalog_shape must be integer/],
  ["a catalog key without its codes", () => row(track(), { catalog_keys: ["plan"] }), /\/value\/catalog_keys\/0 must match pattern/],
  ["an empty key", () => ({ ...track(), key: "" }), /\/key must NOT have fewer than 1 characters/],
  ["a header", () => ({ ...track(), headers: { "trace-id": "abc" } }), /\/headers must NOT have additional properties \(trace-id\)/],
  ["a value that is not JSON", () => topicRecord({ key: Buffer.from("m"), value: Buffer.from("{not json") }), /\/value must be object/],
  ["no headers", () => ({ key: "m", value: track().value }) as TopicRecord, /required property 'headers'/],
  [
    "a format-1 envelope (what an ingest before the row format wrote)",
    () => ({ key: "m", headers: {}, value: { workspaceId: "ws", receivedAt: new Date().toISOString(), message: {} } }),
    /required property 'workspace_id'/,
  ],
];

/** `record` with fields of its value replaced (undefined: removed). */
function row(record: TopicRecord, fields: Record<string, unknown>): TopicRecord {
  const value = { ...(record.value as Record<string, unknown>) };
  for (const [name, v] of Object.entries(fields)) {
    if (v === undefined) delete value[name];
    else value[name] = v;
  }
  return { ...record, value };
}

test("the records the drifts start from match the schema (each refusal below is the drift's)", () => {
  for (const record of [track(), typed("identify", {}), typed("group", { groupId: "g" }), typed("alias", { previousId: "p" })])
    assert.equal(check(record), [], JSON.stringify(record));
  const value = track().value as Record<string, unknown>;
  assert.is(value.country, "US");
  assert.ok(typeof value.original_timestamp === "string" && typeof value.sent_at === "string" && typeof value.browser === "string");
});

for (const [what, record, expected] of DRIFTS)
  test(`refused: ${what}`, () => {
    const errors = check(record());
    assert.ok(errors.length > 0, "refused");
    assert.match(errors.join("\n"), expected);
  });

test("topicRecord: key and header values as text (an array kept), a value that is not JSON kept as its text", () => {
  const record = topicRecord({ key: null, value: Buffer.from("x"), headers: { a: Buffer.from("1"), b: [Buffer.from("2"), "3"] } });
  assert.equal(record, { key: null, headers: { a: "1", b: ["2", "3"] }, value: "x" });
  assert.equal(topicRecord({ key: Buffer.from("k"), value: null }), { key: "k", headers: {}, value: null });
});

test.run();
