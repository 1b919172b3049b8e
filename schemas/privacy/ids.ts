/**
 * The ids a privacy entry is matched by, read from what the ingest and the sink hold: a message or
 * refused item (itemIds), and an events row line read without parsing it (rowIds, rowReceivedAt).
 */
import { isBlankId, numberAsId } from "../messages";
import { rowStringField } from "../row";

/**
 * The userId and anonymousId of a message or batch item (a refused one included) as the ingest
 * reads them (ingest/records/coerce.ts): a number is its decimal text (analytics-ruby and -python send
 * numeric ids), a blank one ("" or only spaces) is absent so the other id decides; anything else
 * is no id.
 */
export function itemIds(item: unknown): [userId: string | undefined, anonymousId: string | undefined] {
  const fields = item !== null && typeof item === "object" ? (item as Record<string, unknown>) : {};
  const id = (field: "userId" | "anonymousId") => {
    const v = fields[field];
    if (typeof v === "number") return numberAsId(v);
    return typeof v === "string" && !isBlankId(field, v) ? v : undefined;
  };
  return [id("userId"), id("anonymousId")];
}

/**
 * The workspace_id, user_id and anonymous_id of an events row line, read by key without parsing
 * the row (rowStringField). Undefined when the line does not have that shape.
 */
export function rowIds(line: Buffer): { workspaceId: string; userId: string; anonymousId: string } | undefined {
  const workspaceId = rowStringField(line, "workspace_id");
  const userId = rowStringField(line, "user_id");
  const anonymousId = rowStringField(line, "anonymous_id");
  if (workspaceId === undefined || userId === undefined || anonymousId === undefined) return undefined;
  return { workspaceId, userId, anonymousId };
}

/** The received_at of an events row line, ms since the epoch (NaN when absent or not a time). */
export function rowReceivedAt(line: Buffer): number {
  const text = rowStringField(line, "received_at");
  return text === undefined ? Number.NaN : Date.parse(text);
}
