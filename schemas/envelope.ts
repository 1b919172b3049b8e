/**
 * The Kafka contract between ingest and sink: one record per message, key = messageId. The value
 * is the message's events row as one JSONEachRow line (format 2, schemas/row.ts), which the sink
 * inserts without parsing; earlier releases wrote a JSON `Envelope` (format 1), which the sink
 * still reads (records on the topic at an upgrade, DLQ replays, tools). Retries of a message
 * carry the same key, so they land in the same partition and collapse to one ClickHouse row.
 * What consumers may rely on is schemas/events-record.schema.json (docs/EVENTS-TOPIC.md).
 */
import type { Id, IsoDateTime, Message } from "./messages";

/** Value of one record on the events topic in format 1 (JSON, UTF-8); the stored message's row is `toRow(envelope)`. */
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

/**
 * Value of one record on the rejected topic (JSON, UTF-8): a batch item the ingest refused,
 * kept with its reasons so an operator can query it (table `rejected_messages`). Nothing a
 * client sends is dropped silently.
 */
export interface RejectedEnvelope {
  /** Owner of the writeKey that sent the request. */
  workspaceId: Id;
  /** Server time the HTTP request arrived (ISO 8601, ms). */
  receivedAt: IsoDateTime;
  /** Hex SHA-256 of workspaceId and raw: a retry of the same item is one row. */
  rejectionId: string;
  /** The item's messageId when it sent a usable one, else ''. */
  messageId: string;
  /** The item's `type` when it was a string, else ''. */
  type: string;
  /** Each refusal, `path: expected` (`batch[3].event: string (required)`). */
  reasons: string[];
  /** The item's JSON text as received (lone surrogates already replaced by U+FFFD). */
  raw: string;
}

/** A record as produced: key and value as the broker stores them. */
export interface EventRecord {
  /** The messageId (events topic) or the rejectionId (rejected topic). */
  key: string;
  /** `JSON.stringify` of the events row (schemas/row.ts), or of a RejectedEnvelope. */
  value: string;
  /** A refused item for the rejected topic, not an event. */
  rejected?: true;
}

/** Header names of a dead-letter record; key and value are the original record's, unchanged (but see `cut`). */
export const DLQ_HEADERS = {
  /** Why the record was not stored (human-readable). */
  reason: "dlq-reason",
  /** Which step refused it: `decode` or `insert`. */
  step: "dlq-step",
  /** When it was dead-lettered (ISO 8601). */
  time: "dlq-time",
  /** topic/partition/offset it came from, `events/2/1234`. */
  source: "dlq-source",
  /**
   * Present only on a letter whose value was cut to fit the DLQ topic's limit (sink/loop/dlq.ts): the
   * original value's size, bytes. The value is then its first bytes, not the record.
   */
  cut: "dlq-cut",
} as const;
