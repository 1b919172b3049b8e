/**
 * Refused items as records for the rejected topic: the item's JSON with the ids a deletion finds
 * it by first, its reasons, and a rejectionId that makes a retried refusal one row
 * (rejected_messages, ReplacingMergeTree).
 */
import { createHash } from "node:crypto";
import type { EventRecord, RejectedEnvelope } from "../../schemas/envelope";
import { cutText } from "../../schemas/wellformed";
import type { Receipt } from "./build";
import { anonymizeIp } from "./enrich";
import { recordBytes } from "../../schemas/kafka/limits";
import { isBlankId, numberAsId } from "../../schemas/messages";

/** A refused item: the item as sent and each reason. */
export interface Refusal {
  item: unknown;
  reasons: string[];
}

/** Most reasons kept per refused item, and characters per reason (the record stays bounded). */
export const MAX_REASONS = 20;
const MAX_REASON_CHARS = 200;

/**
 * The keys `users delete` finds a refused item by in its text (schemas/privacy/refused.ts:
 * `"userId":"..."` and the like), which buildRejected writes first so a cut keeps them: an item
 * whose ids came after the cut would otherwise outlive its user's deletion. A text that begins
 * with a userId is that user's item only (a nested `"userId"` is not its owner).
 */
const DELETION_KEYS = ["userId", "anonymousId", "previousId"] as const;

/**
 * Whether `value` of DELETION_KEYS `key` is an id as the ingest reads it (ingest/records/coerce.ts): a
 * string, not blank for userId and anonymousId (blank is absent), or a number it turns into one.
 */
function isIdValue(key: (typeof DELETION_KEYS)[number], value: unknown): boolean {
  if (typeof value === "number") return numberAsId(value) !== undefined;
  return typeof value === "string" && !isBlankId(key, value);
}

/**
 * The JSON text of `fields` with its DELETION_KEYS that hold ids (isIdValue: a blank userId stays
 * in the rest, so the item reads as anonymous, as its events would) first, in that order, as
 * sent (a number stays a number), then the rest as JSON.stringify writes it. Written by hand: in
 * an object JavaScript lists number-like keys ("0") before every other, so reordering the object
 * could not put the ids first.
 */
function idsFirstText(fields: Record<string, unknown>, replacer: Replacer | undefined): string {
  const rest = { ...fields };
  const head: string[] = [];
  for (const key of DELETION_KEYS)
    if (Object.hasOwn(fields, key) && isIdValue(key, fields[key])) {
      head.push(`${JSON.stringify(key)}:${JSON.stringify(fields[key])}`);
      delete rest[key];
    }
  const tail = JSON.stringify(rest, replacer).slice(1, -1);
  return `{${[...head, ...(tail === "" ? [] : [tail])].join(",")}}`;
}

/**
 * One record per refused item for the rejected topic (key = rejectionId). The item's JSON, less
 * any `writeKey` (it never reaches the topic), with userId, anonymousId and previousId first
 * (DELETION_KEYS), is kept whole while its escaped form fits `maxRawBytes` and the whole record
 * fits `maxRecordBytes` (schemas/kafka/limits.ts recordBytes; the producer's limit, so the broker
 * never refuses it), else cut (and a reason says so). Reasons are capped too (MAX_REASONS of
 * MAX_REASON_CHARS, their escaped text within a quarter of `maxRecordBytes`), so one record stays
 * within maxRawBytes + about 25 KB. With `anonymize` (IP_ANONYMIZE) every `ip` in the item is
 * anonymized or left out (anonymizedIps). The rejectionId hashes the item (less writeKey, IP
 * anonymized as asked) in the order it was sent, as before the ids came first. Pure.
 */
export function buildRejected(
  refusals: readonly Refusal[],
  receipt: Receipt,
  maxRawBytes: number,
  anonymize = false,
  maxRecordBytes = Number.POSITIVE_INFINITY,
): EventRecord[] {
  const replacer = anonymize ? anonymizedIps : undefined;
  return refusals.map(({ item, reasons }) => {
    const fields = isRecord(item) ? item : undefined;
    const { writeKey: _writeKey, ...withoutKey } = fields ?? {};
    const whole = (fields === undefined ? JSON.stringify(item, replacer) : JSON.stringify(withoutKey, replacer)) ?? "null";
    let raw = fields === undefined ? whole : idsFirstText(withoutKey, replacer);
    const messageId = typeof fields?.messageId === "string" && fields.messageId.length <= 200 ? fields.messageId : "";
    const envelope: RejectedEnvelope = {
      workspaceId: receipt.workspaceId,
      receivedAt: receipt.receivedAt,
      // The whole item, not the kept text: two items that differ only past the cut stay two rows.
      rejectionId: createHash("sha256").update(`${receipt.workspaceId}\n${whole}`).digest("hex"),
      messageId,
      type: typeof fields?.type === "string" ? cutText(fields.type, 100) : "",
      reasons: keptReasons(reasons, maxRecordBytes / 4),
      raw: "",
    };
    const fullBytes = Buffer.byteLength(raw, "utf8");
    const cutNote = `raw: cut to ${fullBytes} bytes of ${fullBytes}`;
    // The record less raw's 2 quotes, with room for the cut note: what raw's escaped text may add.
    const rest = recordBytes({ key: envelope.rejectionId, value: JSON.stringify(envelope) }) - 2 + escapedBytes(cutNote) + 1;
    const rawRoom = Math.min(maxRawBytes, maxRecordBytes - rest);
    // The envelope escapes raw again (quotes, control characters): cut until the escaped form fits.
    while (raw !== "" && escapedBytes(raw) > rawRoom) raw = cutText(raw, Math.floor(raw.length * 0.8));
    const keptBytes = Buffer.byteLength(raw, "utf8");
    if (keptBytes < fullBytes) envelope.reasons.push(`raw: cut to ${keptBytes} bytes of ${fullBytes}`);
    envelope.raw = raw;
    return { key: envelope.rejectionId, value: JSON.stringify(envelope), rejected: true };
  });
}

/** A JSON.stringify replacer. */
type Replacer = (key: string, value: unknown) => unknown;

/**
 * IP_ANONYMIZE in a refused item: every `ip` key, at any depth and whatever holds it (the item may
 * be an array, its context a list, its ip a number or an object), is written anonymized when it is
 * an address in text (anonymizeIp) and left out otherwise. A refused item's shape is not known, so
 * no place is trusted to hold something else than an address: accepted messages anonymize their
 * context.ip alone (ingest/records/build.ts). A JSON.stringify replacer: stringify walks the item.
 */
function anonymizedIps(key: string, value: unknown): unknown {
  if (key !== "ip") return value;
  return typeof value === "string" ? anonymizeIp(value) : undefined;
}

/**
 * The reasons kept in a record: the first MAX_REASONS, each cut to MAX_REASON_CHARS, while their
 * escaped text stays within `maxBytes`; then one saying how many were left out.
 */
function keptReasons(reasons: readonly string[], maxBytes: number): string[] {
  const kept: string[] = [];
  let bytes = 0;
  for (const reason of reasons) {
    const text = cutText(reason, MAX_REASON_CHARS);
    bytes += escapedBytes(text) + 1;
    if (kept.length === MAX_REASONS || bytes > maxBytes) break;
    kept.push(text);
  }
  if (kept.length < reasons.length) kept.push(`and ${reasons.length - kept.length} more reason(s)`);
  return kept;
}

/** UTF-8 bytes of a string as a JSON string literal (quotes and escapes included). */
function escapedBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), "utf8");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
