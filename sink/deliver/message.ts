/**
 * An events row (the record value the ingest wrote, schemas/row.ts) -> the Segment message a
 * destination receives: the fields the client sent (those without a column come back from
 * `extra`), messageId, type, the timestamps as the ingest placed them, context, properties or
 * traits, and the enrichment under `enrichment` when the ingest derived any (a client's own
 * top-level `enrichment` is left out, so a receiver can trust that field). Pure; undefined for a
 * value that is not a row (the caller keeps it as a failure, never drops it silently).
 */
import type { EventRow } from "../../schemas/row";

/** A message as delivered: Segment's field names (camelCase), plain JSON. */
export type DeliveryMessage = Record<string, unknown> & { messageId: string; type: string; receivedAt: string };

/** The row's JSON text column as an object; {} when it is not one. */
function objectOf(text: string | undefined): Record<string, unknown> {
  if (text === undefined || text === "" || text === "{}") return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Sets `key` when `value` is a non-empty string. */
function put(target: Record<string, unknown>, key: string, value: string | undefined): void {
  if (value !== undefined && value !== "") target[key] = value;
}

/** The message of `row` (see the module comment). */
export function rowMessage(row: EventRow): DeliveryMessage {
  // The client's own fields first: a column always wins over a same-named field of `extra`.
  const message: Record<string, unknown> = Object.assign(Object.create(null) as object, objectOf(row.extra));
  message.messageId = row.message_id;
  message.type = row.type;
  put(message, "userId", row.user_id);
  put(message, "anonymousId", row.anonymous_id);
  put(message, "event", row.event);
  put(message, "name", row.name);
  put(message, "category", row.category);
  put(message, "groupId", row.group_id);
  put(message, "previousId", row.previous_id);
  message.timestamp = row.timestamp;
  put(message, "originalTimestamp", row.original_timestamp);
  put(message, "sentAt", row.sent_at);
  message.receivedAt = row.received_at;
  message.context = objectOf(row.context);
  if (row.type === "identify" || row.type === "group") message.traits = objectOf(row.traits);
  else if (row.type === "track" || row.type === "page" || row.type === "screen") message.properties = objectOf(row.properties);
  const enrichment: Record<string, unknown> = {};
  put(enrichment, "browser", row.browser);
  put(enrichment, "browserVersion", row.browser_version);
  put(enrichment, "os", row.os);
  if (row.device_type !== "other") put(enrichment, "deviceType", row.device_type);
  put(enrichment, "country", row.country);
  if (row.is_bot === 1) enrichment.isBot = true;
  // `enrichment` is the pipeline's own: a client's field of that name never reaches a receiver as if it were.
  delete message.enrichment;
  if (Object.keys(enrichment).length > 0) message.enrichment = enrichment;
  return { ...message } as DeliveryMessage;
}

/** A record value -> its row, or undefined when it is not a JSON object with the row's ids. */
export function parseRow(value: Buffer | null): EventRow | undefined {
  if (value === null) return undefined;
  try {
    const row = JSON.parse(value.toString()) as Partial<EventRow>;
    const text = (v: unknown) => typeof v === "string";
    if (
      row === null ||
      typeof row !== "object" ||
      !text(row.message_id) ||
      !text(row.type) ||
      !text(row.workspace_id) ||
      !text(row.received_at)
    )
      return undefined;
    return row as EventRow;
  } catch {
    return undefined;
  }
}
