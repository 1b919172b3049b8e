import type { Envelope } from "./envelope";
import type { Message } from "./messages";
import { catalogKeys, catalogShape } from "./catalog";
import { extraText } from "./row-extra";
import { ENRICHMENT_COLUMNS, NO_ENRICHMENT, type Enrichment } from "./enrichment";

/**
 * One row of the ClickHouse `events` table, as the sink inserts it (JSONEachRow). Column names
 * are snake_case; free-form objects are JSON text. Times are ISO 8601 strings parsed by the
 * server with `date_time_input_format=best_effort` (DateTime64(3) on current ClickHouse, whole
 * seconds on 18.16). Optional columns are left out of the line when they hold their column's
 * default ('', 0, null), which ClickHouse fills in for a field a JSONEachRow line omits (both
 * engines): every record is shorter through Kafka, the sink and the server's parser.
 */
export interface EventRow extends Pick<Enrichment, "device_type"> {
  workspace_id: string;
  message_id: string;
  type: string;
  /** track: the event name; absent ('') otherwise. */
  event?: string;
  /** page/screen: the name; absent ('') otherwise. */
  name?: string;
  /** page/screen: the category; absent ('') otherwise. */
  category?: string;
  /** Always present, '' when none (the privacy filter reads both, schemas/privacy/list.ts rowIds). */
  user_id: string;
  anonymous_id: string;
  /** group: the groupId; absent ('') otherwise. */
  group_id?: string;
  /** alias: the previousId; absent ('') otherwise. */
  previous_id?: string;
  /** When it happened: the client's timestamp corrected for clock skew, or receivedAt when it sent none. */
  timestamp: string;
  /** The timestamp the client sent, before skew correction; absent (null) when it sent none. */
  original_timestamp?: string;
  /** When the client sent the message; absent (null) when unknown. */
  sent_at?: string;
  /** When the ingest received it. Also the ReplacingMergeTree version: the latest retry wins. */
  received_at: string;
  /** JSON text of properties, '{}' when absent: an object for track/page/screen; another type keeps any JSON value sent under the name. */
  properties: string;
  /** JSON text of traits, '{}' when absent: an object for identify/group; another type keeps any JSON value sent under the name. */
  traits: string;
  /** JSON text of context, '{}' when absent. */
  context: string;
  /** JSON text of every other top-level field the client sent (integrations, channel, ...). */
  extra: string;
  /** The enrichment (schemas/enrichment.ts); each absent when '' (is_bot when 0). */
  browser?: string;
  browser_version?: string;
  os?: string;
  is_bot?: 1;
  country?: string;
  /**
   * Each top-level key of properties, traits and context with its JSON type (schemas/catalog.ts);
   * undefined when the ingest sent this shape's list lately (ingest/records/catalog.ts): JSON.stringify
   * leaves it out of the line and ClickHouse stores [].
   */
  catalog_keys: string[] | undefined;
  /** catalogShape of the same keys: the catalog's group (its list is sent once in a while, schemas/clickhouse/catalog.ts). */
  catalog_shape: number;
  /**
   * The workspace's tracking plan's violations of this message (schemas/plans.ts Violation), each
   * as JSON text `{"path":..,"keyword":..,"message":..}`; absent ([]) when it had none or no plan
   * applies. JSON text, not tuples, so both engines read it with their JSON functions.
   */
  violations?: string[];
}

/** One row of the ClickHouse `rejected_messages` table (see RejectedEnvelope). */
export interface RejectedRow {
  workspace_id: string;
  received_at: string;
  rejection_id: string;
  message_id: string;
  type: string;
  reasons: string[];
  raw: string;
}

/** Every column the sink writes to the events table (checked against the table at start). */
export const EVENT_ROW_COLUMNS = [
  "workspace_id",
  "message_id",
  "type",
  "event",
  "name",
  "category",
  "user_id",
  "anonymous_id",
  "group_id",
  "previous_id",
  "timestamp",
  "original_timestamp",
  "sent_at",
  "received_at",
  "properties",
  "traits",
  "context",
  "extra",
  ...ENRICHMENT_COLUMNS,
  "catalog_keys",
  "catalog_shape",
  "violations",
] as const satisfies readonly (keyof EventRow)[];

/** Every column the sink writes to `rejected_messages`. */
export const REJECTED_ROW_COLUMNS = [
  "workspace_id",
  "received_at",
  "rejection_id",
  "message_id",
  "type",
  "reasons",
  "raw",
] as const satisfies readonly (keyof RejectedRow)[];

// Both lists name every field of their row: adding a field without its column fails to compile.
type Missing<Row, Listed> = Exclude<keyof Row, Listed>;
const _eventsComplete: Missing<EventRow, (typeof EVENT_ROW_COLUMNS)[number]> extends never ? true : never = true;
const _rejectedComplete: Missing<RejectedRow, (typeof REJECTED_ROW_COLUMNS)[number]> extends never ? true : never = true;
void _eventsComplete;
void _rejectedComplete;

/**
 * The first bytes of every events-topic value the ingest writes since the row format (format 2):
 * `JSON.stringify(eventRow)` puts `workspace_id` first. A value that does not start with them is
 * an `Envelope` (format 1) of an earlier ingest, a replay or a tool, and the sink decodes it.
 */
export const ROW_VALUE_PREFIX = Buffer.from('{"workspace_id":');

/** Whether a record value is an events row (format 2) the sink may pass to ClickHouse as it is. */
export function isRowValue(value: Buffer): boolean {
  if (value.length <= ROW_VALUE_PREFIX.length) return false;
  // Byte by byte, not Buffer.compare: that native call per record was 4% of the sink's CPU (issue 28).
  for (let i = 0; i < ROW_VALUE_PREFIX.length; i++) if (value[i] !== ROW_VALUE_PREFIX[i]) return false;
  return true;
}

const FIELD_KEYS = new Map<string, Buffer>();

/**
 * A string field of an events row line (JSONEachRow as messageRow writes it: `workspace_id`
 * first), found by its key without parsing the row: a key cannot occur inside a string value,
 * where every quote is escaped. Undefined when the field is absent or not a string.
 */
export function rowStringField(line: Buffer, name: string): string | undefined {
  let key = FIELD_KEYS.get(name);
  if (key === undefined) {
    key = Buffer.from(`${name === "workspace_id" ? "{" : ","}${JSON.stringify(name)}:"`);
    FIELD_KEYS.set(name, key);
  }
  const at = line.indexOf(key);
  if (at < 0 || (name === "workspace_id" && at !== 0)) return undefined;
  const start = at + key.length;
  let escaped = false;
  let end = start;
  for (; end < line.length; end++) {
    if (line[end] === 0x5c) {
      escaped = true;
      end++; // the escaped character, which may be a quote
    } else if (line[end] === 0x22) break;
  }
  if (end >= line.length) return undefined;
  if (!escaped) return line.toString("utf8", start, end);
  try {
    return JSON.parse(line.toString("utf8", start - 1, end + 1)) as string;
  } catch {
    return undefined;
  }
}

/** What the ingest adds to a message: who sent it, when, and its corrected time and context. */
export interface RowStamp {
  workspaceId: string;
  /** ISO 8601, ms. */
  receivedAt: string;
  sentAt: string | null;
  originalTimestamp: string | null;
  /** The stored timestamp (skew-corrected, or receivedAt). */
  timestamp: string;
  /** The stored context (batch context merged, ip filled); absent = '{}'. */
  context: object | null | undefined;
  /**
   * The client's time (`timestamp`, or RudderStack's `originalTimestamp`) did not place the
   * event (outside the ingest's window): its field is kept in `extra` as sent.
   */
  clientTimeInExtra?: boolean;
  /** The batch body's other fields (`integrations`, ...), kept in each item's `extra`; absent: none. */
  batchFields?: Readonly<Record<string, unknown>>;
  /** What the ingest derived from the context (ingest/records/enrich.ts); absent: the defaults ('' and 0, device_type other). */
  enrichment?: Enrichment;
  /** The message's catalogShape, and whether its key list was sent recently (then `catalog_keys` is left out); absent: computed, list sent. */
  catalog?: { shape: number; sent: boolean };
}

/** The row of a format-1 envelope (the sink's path for records of an earlier ingest). Pure. */
export function toRow(envelope: Envelope): EventRow {
  const m = envelope.message;
  return messageRow(m, {
    workspaceId: envelope.workspaceId,
    receivedAt: envelope.receivedAt,
    sentAt: envelope.sentAt ?? null,
    originalTimestamp: envelope.originalTimestamp ?? null,
    timestamp: m.timestamp ?? envelope.receivedAt,
    context: m.context,
  });
}

/**
 * The row of a message and its stamp; fields a type lacks are '' and absent objects '{}'. Pure;
 * reads `message` without copying it. Fields with a column of their own, the stamp's and
 * `writeKey` are left out of `extra`; every other field the client sent is kept there. `workspace_id` stays the first key (ROW_VALUE_PREFIX): the
 * ingest writes `JSON.stringify` of this row as the record value.
 */
export function messageRow(m: Message, stamp: RowStamp): EventRow {
  const properties = "properties" in m ? m.properties : undefined;
  const traits = "traits" in m ? m.traits : undefined;
  const enrichment = stamp.enrichment ?? NO_ENRICHMENT;
  // Fields listed, not spread: this runs for every message.
  const page = m.type === "page" || m.type === "screen";
  // undefined: left out of the line by JSON.stringify, the column's default to ClickHouse.
  return {
    workspace_id: stamp.workspaceId,
    message_id: m.messageId,
    type: m.type,
    event: m.type === "track" ? present(m.event) : undefined,
    name: page ? present(m.name) : undefined,
    category: page ? present(m.category) : undefined,
    user_id: m.userId ?? "",
    anonymous_id: m.anonymousId ?? "",
    group_id: m.type === "group" ? present(m.groupId) : undefined,
    previous_id: m.type === "alias" ? present(m.previousId) : undefined,
    timestamp: stamp.timestamp,
    original_timestamp: stamp.originalTimestamp ?? undefined,
    sent_at: stamp.sentAt ?? undefined,
    received_at: stamp.receivedAt,
    properties: jsonText(properties),
    traits: jsonText(traits),
    context: jsonText(stamp.context),
    extra: extraText(m, stamp.clientTimeInExtra === true, stamp.batchFields),
    browser: present(enrichment.browser),
    browser_version: present(enrichment.browser_version),
    os: present(enrichment.os),
    device_type: enrichment.device_type,
    is_bot: enrichment.is_bot === 1 ? 1 : undefined,
    country: present(enrichment.country),
    catalog_keys: stamp.catalog?.sent === true ? undefined : catalogKeys(properties, traits, stamp.context),
    catalog_shape: stamp.catalog?.shape ?? catalogShape(properties, traits, stamp.context),
  };
}

/** A string column's value, or undefined for '' and none (left out of the line). */
function present(value: string | null | undefined): string | undefined {
  return value === "" || value === null ? undefined : value;
}

function jsonText(value: object | null | undefined): string {
  return value === undefined || value === null ? "{}" : JSON.stringify(value);
}
