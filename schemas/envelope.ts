/**
 * The Kafka contract between ingest and sink: one record per message, key = messageId,
 * value = JSON `Envelope`. Retries of a message carry the same key, so they land in the same
 * partition and collapse to one ClickHouse row.
 */
import type { Id, IsoDateTime, Message } from "./messages";

/** Value of one record on the events topic (JSON, UTF-8). */
export interface Envelope {
  /** Owner of the writeKey that sent the message; never the key itself. */
  workspaceId: Id;
  /** Server time the HTTP request arrived (ISO 8601, ms). */
  receivedAt: IsoDateTime;
  /** Client time the message was sent: its own `sentAt`, else the batch's (Segment). */
  sentAt?: IsoDateTime | null;
  /** The `timestamp` the client sent, before clock-skew correction; absent when it sent none. */
  originalTimestamp?: IsoDateTime | null;
  /**
   * The validated message as stored: `timestamp` is receivedAt when the client sent none, and
   * `receivedAt - (sentAt - timestamp)` when it sent both (Segment's skew correction); batch
   * context merged under its own; `context.ip` filled from the client address when absent;
   * `writeKey` removed.
   */
  message: Message;
}

/** A record as produced: key and value as the broker stores them. */
export interface EventRecord {
  /** The messageId. */
  key: string;
  /** `JSON.stringify(envelope)`. */
  value: string;
}

/** Header names of a dead-letter record; key and value are the original record's, unchanged. */
export const DLQ_HEADERS = {
  /** Why the record was not stored (human-readable). */
  reason: "dlq-reason",
  /** Which step refused it: `decode` or `insert`. */
  step: "dlq-step",
  /** When it was dead-lettered (ISO 8601). */
  time: "dlq-time",
  /** topic/partition/offset it came from, `events/2/1234`. */
  source: "dlq-source",
} as const;
