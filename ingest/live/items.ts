/**
 * What the live view shows of a record of the events, rejected or deliveries topic: the record decoded into a
 * LiveItem (messageId, type, event or name, userId, anonymousId, receivedAt, the library that sent
 * it, and the whole message; a refused item's reasons and its raw text; a delivery attempt's destination, outcome,
 * HTTP status and attempt, its receivedAt being the attempt's time), and the viewer's filters.
 * Records are kept as the broker gave them (LiveRecord), their workspace read without parsing
 * them (schemas/row.ts rowStringField; a refused record's leading `workspaceId`), and decoded at
 * most once, when a viewer asks for their workspace: a LiveEntry, the item's JSON text and the
 * fields the filters read (ingest/live/feed.ts keeps it on the record). Pure; nothing throws (an
 * undecodable record is undefined).
 */
import type { DeliveryReport } from "../../schemas/destinations";
import type { RejectedEnvelope } from "../../schemas/envelope";
import { isRowValue, rowStringField } from "../../schemas/row";

/**
 * Which topic a record came from: accepted events, items the ingest refused, or attempts to
 * deliver a message to a webhook destination (the deliveries topic, schemas/destinations.ts).
 */
export type LiveKind = "accepted" | "refused" | "delivery";

/** A record as the tail keeps it: its topic's kind, its workspace, its value, and where it was. */
export interface LiveRecord {
  kind: LiveKind;
  workspaceId: string;
  value: Buffer;
  /** `<topic>/<partition>/<offset>`: the SSE event id. */
  id: string;
  /** The record decoded (null: it cannot be), once a viewer asked for it (ingest/live/feed.ts). */
  entry?: LiveEntry | null;
}

/**
 * A record decoded once: what the filters read, and the LiveItem as JSON text, sent as it is to
 * every viewer and /live/recent call that asks for it (never parsed again).
 */
export interface LiveEntry {
  id: string;
  workspaceId: string;
  type: string;
  event: string;
  userId: string;
  anonymousId: string;
  /** ISO 8601, ms: the order of /live/recent. */
  receivedAt: string;
  /** `JSON.stringify(LiveItem)`. */
  json: string;
}

/** One row of the live view, as the stream and /live/recent send it (JSON). */
export interface LiveItem {
  status: LiveKind;
  /** `<topic>/<partition>/<offset>` of the record. */
  id: string;
  messageId: string;
  type: string;
  /** track: the event; page/screen: the name; '' otherwise. */
  event: string;
  userId: string;
  anonymousId: string;
  receivedAt: string;
  /** context.library as the SDK sent it (`analytics.js` 1.84.3, ...), when it did. */
  library?: { name?: unknown; version?: unknown };
  /** accepted: the stored row, its JSON columns parsed; refused: the item as received (parsed when it is JSON). */
  message: unknown;
  /** refused: each reason, `path: expected`. */
  reasons?: string[];
  /** delivery: to which destination, what the attempt meant, its HTTP status (0: no answer), which attempt, when. */
  delivery?: Pick<DeliveryReport, "destinationId" | "outcome" | "status" | "attempt" | "at">;
}

/** What a viewer asks to see; every field set must match (userId and anonymousId exactly). */
export interface LiveFilter {
  workspaceId: string;
  type?: string;
  event?: string;
  userId?: string;
  anonymousId?: string;
}

/** The key a refused record begins with (ingest/records/rejected.ts writes the envelope's workspaceId first). */
const REFUSED_PREFIX = Buffer.from('{"workspaceId":"');

/**
 * The workspace of a record, read without parsing it (a refused record that does not begin with
 * its workspaceId, from a tool or an older release, is parsed); undefined when the value is not ours.
 */
export function recordWorkspace(kind: LiveKind, value: Buffer): string | undefined {
  if (kind === "accepted") return isRowValue(value) ? rowStringField(value, "workspace_id") : undefined;
  if (value.subarray(0, REFUSED_PREFIX.length).equals(REFUSED_PREFIX)) {
    const end = value.indexOf(0x22, REFUSED_PREFIX.length);
    const text = end < 0 ? undefined : value.toString("utf8", REFUSED_PREFIX.length, end);
    // A backslash means an escape: the plain read would cut it; parse that rare one.
    if (text !== undefined && !text.includes("\\")) return text;
  }
  const workspaceId = parseJson(value.toString("utf8")) as { workspaceId?: unknown } | undefined;
  return typeof workspaceId?.workspaceId === "string" ? workspaceId.workspaceId : undefined;
}

/** The record decoded (one parse of its value and of its JSON columns); undefined when it cannot be. */
export function liveEntry(record: LiveRecord): LiveEntry | undefined {
  const item = liveItem(record);
  if (item === undefined) return undefined;
  const { id, type, event, userId, anonymousId, receivedAt } = item;
  return { id, workspaceId: record.workspaceId, type, event, userId, anonymousId, receivedAt, json: JSON.stringify(item) };
}

/** Whether a decoded record passes `filter`, as `matches` decides for its record. */
export function entryMatches(entry: LiveEntry, filter: LiveFilter): boolean {
  return (
    entry.workspaceId === filter.workspaceId &&
    (filter.type === undefined || entry.type === filter.type) &&
    (filter.event === undefined || entry.event === filter.event) &&
    (filter.userId === undefined || entry.userId === filter.userId) &&
    (filter.anonymousId === undefined || entry.anonymousId === filter.anonymousId)
  );
}

/** Whether a record passes `filter` (its workspace, then each field the filter sets). */
export function matches(record: LiveRecord, filter: LiveFilter): boolean {
  if (record.workspaceId !== filter.workspaceId) return false;
  if (filter.type === undefined && filter.event === undefined && filter.userId === undefined && filter.anonymousId === undefined)
    return true;
  const item = liveItem(record);
  if (item === undefined) return false;
  return (
    (filter.type === undefined || item.type === filter.type) &&
    (filter.event === undefined || item.event === filter.event) &&
    (filter.userId === undefined || item.userId === filter.userId) &&
    (filter.anonymousId === undefined || item.anonymousId === filter.anonymousId)
  );
}

/** The record as the viewer sees it; undefined when it cannot be decoded. */
export function liveItem(record: LiveRecord): LiveItem | undefined {
  const text = record.value.toString("utf8");
  if (record.kind === "delivery") return deliveryItem(record.id, text);
  return record.kind === "accepted" ? acceptedItem(record.id, text) : refusedItem(record.id, text);
}

function acceptedItem(id: string, text: string): LiveItem | undefined {
  const row = parseJson(text) as Record<string, unknown> | undefined;
  if (row === undefined || typeof row.message_id !== "string") return undefined;
  const message: Record<string, unknown> = { ...row };
  for (const column of ["properties", "traits", "context", "extra"]) {
    if (typeof row[column] === "string") message[column] = parseJson(row[column]) ?? row[column];
  }
  // A tracking plan's violations (ingest/records/plan.ts): each stored as JSON text.
  if (Array.isArray(row.violations)) message.violations = row.violations.map((v) => (typeof v === "string" ? (parseJson(v) ?? v) : v));
  const context = message.context as { library?: LiveItem["library"] } | undefined;
  const event = String(row.event ?? "") || String(row.name ?? "");
  return {
    status: "accepted",
    id,
    messageId: row.message_id,
    type: String(row.type ?? ""),
    event,
    userId: String(row.user_id ?? ""),
    anonymousId: String(row.anonymous_id ?? ""),
    receivedAt: String(row.received_at ?? ""),
    ...(context?.library && typeof context.library === "object" ? { library: context.library } : {}),
    message,
  };
}

function refusedItem(id: string, text: string): LiveItem | undefined {
  const envelope = parseJson(text) as Partial<RejectedEnvelope> | undefined;
  if (envelope === undefined || typeof envelope.raw !== "string") return undefined;
  const item = parseJson(envelope.raw) as Record<string, unknown> | undefined;
  const ids = typeof item === "object" && item !== null && !Array.isArray(item) ? item : {};
  const context = ids.context as { library?: LiveItem["library"] } | undefined;
  const event = typeof ids.event === "string" ? ids.event : typeof ids.name === "string" ? ids.name : "";
  return {
    status: "refused",
    id,
    messageId: String(envelope.messageId ?? ""),
    type: String(envelope.type ?? ""),
    event,
    userId: typeof ids.userId === "string" ? ids.userId : "",
    anonymousId: typeof ids.anonymousId === "string" ? ids.anonymousId : "",
    receivedAt: String(envelope.receivedAt ?? ""),
    ...(context?.library && typeof context.library === "object" ? { library: context.library } : {}),
    message: item ?? envelope.raw,
    reasons: Array.isArray(envelope.reasons) ? envelope.reasons.map(String) : [],
  };
}

function deliveryItem(id: string, text: string): LiveItem | undefined {
  const r = parseJson(text) as Partial<DeliveryReport> | undefined;
  if (r === undefined || r === null || typeof r.messageId !== "string" || typeof r.destinationId !== "string") return undefined;
  const outcome = r.outcome === "delivered" || r.outcome === "retry" || r.outcome === "failed" ? r.outcome : "failed";
  return {
    status: "delivery",
    id,
    messageId: r.messageId,
    type: String(r.type ?? ""),
    event: String(r.event ?? ""),
    userId: String(r.userId ?? ""),
    anonymousId: String(r.anonymousId ?? ""),
    receivedAt: String(r.at ?? r.receivedAt ?? ""),
    message: r,
    delivery: {
      destinationId: r.destinationId,
      outcome,
      status: Number(r.status ?? 0),
      attempt: Number(r.attempt ?? 0),
      at: String(r.at ?? ""),
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
