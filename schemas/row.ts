/**
 * One row of the ClickHouse `events` table, as the sink inserts it (JSONEachRow). Column names
 * are snake_case; free-form objects are JSON text. Times are ISO 8601 strings parsed by the
 * server with `date_time_input_format=best_effort` (DateTime64(3) on current ClickHouse, whole
 * seconds on 18.16).
 */
export interface EventRow {
  workspace_id: string;
  message_id: string;
  type: string;
  /** track: the event name; '' otherwise. */
  event: string;
  /** page/screen: the name; '' otherwise. */
  name: string;
  /** page/screen: the category; '' otherwise. */
  category: string;
  user_id: string;
  anonymous_id: string;
  /** group: the groupId; '' otherwise. */
  group_id: string;
  /** alias: the previousId; '' otherwise. */
  previous_id: string;
  /** When it happened: the client's timestamp corrected for clock skew, or receivedAt when it sent none. */
  timestamp: string;
  /** The timestamp the client sent, before skew correction, or null when it sent none. */
  original_timestamp: string | null;
  /** When the client sent the message, or null. */
  sent_at: string | null;
  /** When the ingest received it. Also the ReplacingMergeTree version: the latest retry wins. */
  received_at: string;
  /** JSON text of properties (track/page/screen), '{}' when absent. */
  properties: string;
  /** JSON text of traits (identify/group), '{}' when absent. */
  traits: string;
  /** JSON text of context, '{}' when absent. */
  context: string;
  /** JSON text of every other top-level field the client sent (integrations, channel, ...). */
  extra: string;
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
