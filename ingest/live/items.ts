/**
 * What the live view shows of a record of the events or rejected topic: the record decoded into a
 * LiveItem (messageId, type, event or name, userId, anonymousId, receivedAt, the library that sent
 * it, and the whole message; a refused item's reasons and its raw text), and the viewer's filters.
 * Records are kept as the broker gave them (LiveRecord) and decoded only when a viewer asks for
 * them: the workspace, type, event and ids are read from the row line without parsing it
 * (schemas/row.ts rowStringField). Pure; nothing throws (an undecodable record is undefined).
 */
import type { RejectedEnvelope } from "../../schemas/envelope";
import { isRowValue, rowStringField } from "../../schemas/row";

/** Which topic a record came from: accepted events, or items the ingest refused. */
export type LiveKind = "accepted" | "refused";

/** A record as the tail keeps it: its topic's kind, its workspace, its value, and where it was. */
export interface LiveRecord {
  kind: LiveKind;
  workspaceId: string;
  value: Buffer;
  /** `<topic>/<partition>/<offset>`: the SSE event id. */
  id: string;
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
}

/** What a viewer asks to see; every field set must match (userId and anonymousId exactly). */
export interface LiveFilter {
  workspaceId: string;
  type?: string;
  event?: string;
  userId?: string;
  anonymousId?: string;
}

/** The workspace of a record, read without parsing it; undefined when the value is not ours. */
export function recordWorkspace(kind: LiveKind, value: Buffer): string | undefined {
  if (kind === "accepted") return isRowValue(value) ? rowStringField(value, "workspace_id") : undefined;
  const workspaceId = parseJson(value.toString("utf8")) as { workspaceId?: unknown } | undefined;
  return typeof workspaceId?.workspaceId === "string" ? workspaceId.workspaceId : undefined;
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
  return record.kind === "accepted" ? acceptedItem(record.id, text) : refusedItem(record.id, text);
}

function acceptedItem(id: string, text: string): LiveItem | undefined {
  const row = parseJson(text) as Record<string, unknown> | undefined;
  if (row === undefined || typeof row.message_id !== "string") return undefined;
  const message: Record<string, unknown> = { ...row };
  for (const column of ["properties", "traits", "context", "extra"]) {
    if (typeof row[column] === "string") message[column] = parseJson(row[column]) ?? row[column];
  }
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

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
