/**
 * A Kafka record value -> an `events` row, or the reason it cannot be one (a DLQ decision).
 * Pure. The value is checked again with the envelope guard: records may come from producers
 * other than our ingest (replays, tools), and one bad record must not stop a partition.
 */
import type { Envelope } from "../schemas/envelope";
import { validateEnvelope } from "../schemas/guards";
import type { Message } from "../schemas/messages";
import type { EventRow } from "../schemas/row";

/** A row to insert, or why the record goes to the DLQ instead. */
export type DecodeResult = { ok: true; row: EventRow } | { ok: false; reason: string };

/** Decodes one record value (UTF-8 JSON envelope). */
export function decode(value: Buffer | null): DecodeResult {
  if (value === null || value.length === 0) return { ok: false, reason: "empty value" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString("utf8"));
  } catch (error) {
    return { ok: false, reason: `invalid JSON: ${(error as Error).message}` };
  }
  const checked = validateEnvelope(parsed);
  if (!checked.success) {
    const first = checked.errors.slice(0, 3).map((e) => `${e.path} expected ${e.expected}`);
    return { ok: false, reason: `not an envelope: ${first.join("; ")}` };
  }
  return { ok: true, row: toRow(checked.data) };
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
  "type", "messageId", "userId", "anonymousId", "timestamp", "sentAt", "originalTimestamp", "context",
  "event", "name", "category", "groupId", "previousId", "properties", "traits",
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
