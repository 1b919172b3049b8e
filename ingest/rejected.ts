/**
 * Refused items as records for the rejected topic: the item's JSON with the ids a deletion finds
 * it by first, its reasons, and a rejectionId that makes a retried refusal one row
 * (rejected_messages, ReplacingMergeTree).
 */
import { createHash } from "node:crypto";
import type { EventRecord, RejectedEnvelope } from "../schemas/envelope";
import { cutText } from "../schemas/wellformed";
import type { Receipt } from "./envelope";
import { withAnonymizedIp } from "./enrich";

/** A refused item: the item as sent and each reason. */
export interface Refusal {
  item: unknown;
  reasons: string[];
}

/** Most reasons kept per refused item, and characters per reason (the record stays bounded). */
const MAX_REASONS = 20;
const MAX_REASON_CHARS = 200;

/**
 * The keys `users delete` finds a refused item by in its text (schemas/privacy/list.ts
 * deletionTargets), which buildRejected puts first so a cut keeps them: an oversized item whose
 * ids came after 32 KB of properties would otherwise outlive its user's deletion.
 */
const DELETION_KEYS = ["userId", "anonymousId", "previousId"] as const;

/** `fields` with the DELETION_KEYS it has first, in that order, then the rest as they were. */
function idsFirst(fields: Record<string, unknown>): Record<string, unknown> {
  const first: Record<string, unknown> = {};
  for (const key of DELETION_KEYS) if (Object.hasOwn(fields, key)) first[key] = fields[key];
  return { ...first, ...fields };
}

/**
 * One record per refused item for the rejected topic (key = rejectionId). The item's JSON, less
 * any `writeKey` (it never reaches the topic), with userId, anonymousId and previousId first
 * (DELETION_KEYS), is kept whole while its escaped form fits `maxRawBytes`, else cut (and a
 * reason says so); reasons are capped too, so one record stays within maxRawBytes + about 5 KB,
 * under the broker's limit. The rejectionId hashes the item as sent. Pure.
 */
export function buildRejected(refusals: readonly Refusal[], receipt: Receipt, maxRawBytes: number, anonymize = false): EventRecord[] {
  return refusals.map(({ item, reasons }) => {
    let fields = item !== null && typeof item === "object" && !Array.isArray(item) ? (item as Record<string, unknown>) : undefined;
    if (anonymize && fields !== undefined && isRecord(fields.context) && fields.context.ip !== undefined)
      fields = { ...fields, context: withAnonymizedIp(fields.context) };
    const { writeKey: _writeKey, ...withoutKey } = fields ?? {};
    const whole = (fields === undefined ? JSON.stringify(item) : JSON.stringify(withoutKey)) ?? "null";
    let raw = fields === undefined ? whole : JSON.stringify(idsFirst(withoutKey));
    const why = reasons.slice(0, MAX_REASONS).map((r) => cutText(r, MAX_REASON_CHARS));
    if (reasons.length > MAX_REASONS) why.push(`and ${reasons.length - MAX_REASONS} more reason(s)`);
    const fullBytes = Buffer.byteLength(raw, "utf8");
    // The envelope escapes raw again (quotes, control characters): cut until the escaped form fits.
    while (Buffer.byteLength(JSON.stringify(raw), "utf8") > maxRawBytes) raw = cutText(raw, Math.floor(raw.length * 0.8));
    if (Buffer.byteLength(raw, "utf8") < fullBytes) why.push(`raw: cut to ${Buffer.byteLength(raw, "utf8")} bytes of ${fullBytes}`);
    const messageId = typeof fields?.messageId === "string" && fields.messageId.length <= 200 ? fields.messageId : "";
    const envelope: RejectedEnvelope = {
      workspaceId: receipt.workspaceId,
      receivedAt: receipt.receivedAt,
      // The whole item, not the kept text: two items that differ only past the cut stay two rows.
      rejectionId: createHash("sha256").update(`${receipt.workspaceId}\n${whole}`).digest("hex"),
      messageId,
      type: typeof fields?.type === "string" ? cutText(fields.type, 100) : "",
      reasons: why,
      raw,
    };
    return { key: envelope.rejectionId, value: JSON.stringify(envelope), rejected: true };
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
