/**
 * A Kafka record value -> a row, or the reason it cannot be one (a DLQ decision). Pure. The
 * value is checked again with the envelope guard: records may come from producers other than
 * our ingest (replays, tools, an older ingest), and one bad record must not stop a partition.
 * Lone surrogates are replaced here too (schemas/wellformed.ts), for records already on the
 * topic before the ingest replaced them.
 */
import type { IValidation } from "typia";
import type { Envelope } from "../schemas/envelope";
import { validateEnvelope, validateRejectedEnvelope } from "../schemas/guards";
import type { Message } from "../schemas/messages";
import type { EventRow, RejectedRow } from "../schemas/row";
import { mayHoldLoneSurrogate, wellFormed } from "../schemas/wellformed";

/** A row to insert, or why the record goes to the DLQ instead. */
export type DecodeResult<Row = EventRow> = { ok: true; row: Row } | { ok: false; reason: string };

/** Decodes one record value of the events topic (UTF-8 JSON Envelope). */
export function decode(value: Buffer | null): DecodeResult<EventRow> {
  const checked = parseChecked(value, validateEnvelope);
  return checked.ok ? { ok: true, row: toRow(checked.row) } : checked;
}

/** Decodes one record value of the rejected topic (UTF-8 JSON RejectedEnvelope). */
export function decodeRejected(value: Buffer | null): DecodeResult<RejectedRow> {
  const checked = parseChecked(value, validateRejectedEnvelope);
  if (!checked.ok) return checked;
  const r = checked.row;
  return {
    ok: true,
    row: {
      workspace_id: r.workspaceId,
      received_at: r.receivedAt,
      rejection_id: r.rejectionId,
      message_id: r.messageId,
      type: r.type,
      reasons: r.reasons,
      raw: r.raw,
    },
  };
}

/** UTF-8 JSON -> well-formed value -> guard. */
function parseChecked<T>(value: Buffer | null, validate: (input: unknown) => IValidation<T>): DecodeResult<T> {
  if (value === null || value.length === 0) return { ok: false, reason: "empty value" };
  const text = value.toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `invalid JSON: ${(error as Error).message}` };
  }
  if (mayHoldLoneSurrogate(text)) parsed = wellFormed(parsed);
  const checked = validate(parsed);
  if (!checked.success) {
    const first = checked.errors.slice(0, 3).map((e) => `${e.path} expected ${e.expected}`);
    return { ok: false, reason: `not an envelope: ${first.join("; ")}` };
  }
  return { ok: true, row: checked.data };
}

/** Maps an envelope to its row; fields a type lacks are '' and objects absent are '{}'. */
export function toRow(envelope: Envelope): EventRow {
  const m: Message = envelope.message;
  return {
    workspace_id: envelope.workspaceId,
    message_id: m.messageId,
    type: m.type,
    event: m.type === "track" ? m.event : "",
    name: m.type === "page" || m.type === "screen" ? (m.name ?? "") : "",
    category: m.type === "page" || m.type === "screen" ? (m.category ?? "") : "",
    user_id: m.userId ?? "",
    anonymous_id: m.anonymousId ?? "",
    group_id: m.type === "group" ? m.groupId : "",
    previous_id: m.type === "alias" ? m.previousId : "",
    timestamp: m.timestamp ?? envelope.receivedAt,
    original_timestamp: envelope.originalTimestamp ?? null,
    sent_at: envelope.sentAt ?? null,
    received_at: envelope.receivedAt,
    properties: jsonText("properties" in m ? m.properties : undefined),
    traits: jsonText("traits" in m ? m.traits : undefined),
    context: jsonText(m.context),
    extra: extraText(m),
  };
}

/** Message fields that have a column of their own (or are the envelope's). */
const MAPPED = new Set([
  "type",
  "messageId",
  "userId",
  "anonymousId",
  "timestamp",
  "sentAt",
  "originalTimestamp",
  "context",
  "event",
  "name",
  "category",
  "groupId",
  "previousId",
  "properties",
  "traits",
]);

/** Every other top-level field (integrations, channel, _metadata, ...) as JSON text, '{}' when none. */
function extraText(message: Message): string {
  let extra: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(message)) {
    if (MAPPED.has(key)) continue;
    (extra ??= Object.create(null) as Record<string, unknown>)[key] = value; // no prototype: "__proto__" stays data
  }
  return extra === undefined ? "{}" : JSON.stringify(extra);
}

function jsonText(value: object | null | undefined): string {
  return value === undefined || value === null ? "{}" : JSON.stringify(value);
}
