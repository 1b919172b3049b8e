/**
 * `delivery_failures`: the messages a webhook destination refused (a 4xx, a redirect) or did not
 * take before the horizon passed, kept where an operator can query them and send them again
 * (`destinations replay-failures`). One row per destination and messageId
 * (ReplacingMergeTree on `version`, ms since the epoch: a message that fails again, or is
 * delivered by a replay, is one row under FINAL with its latest state). Times are DateTime64(3)
 * on current ClickHouse and DateTime on 18.16 (TYPES), written as ISO 8601 text read with
 * `date_time_input_format=best_effort`. The user's ids are columns, so `users delete` removes a
 * user's kept failures as it removes their events.
 */
import { type Dialect, TYPES, distributedDdl, engine, onCluster, quoteIdent, quoteString, storageName } from "./sql";

/** The table's name. */
export const DELIVERY_FAILURES_TABLE = "delivery_failures";

/** Bytes of a receiver's answer kept with a failure. */
export const ANSWER_SNIPPET_BYTES = 1_024;

/** One row of `delivery_failures` (JSONEachRow; times as ISO 8601 UTC). */
export interface DeliveryFailureRow {
  destination_id: string;
  workspace_id: string;
  message_id: string;
  user_id: string;
  anonymous_id: string;
  /** The last answer's HTTP status; 0 when there was none (timeout, refused connection). */
  status: number;
  reason: string;
  /** The start of the last answer's body, at most ANSWER_SNIPPET_BYTES. */
  answer: string;
  attempts: number;
  first_attempt_at: string;
  last_attempt_at: string;
  received_at: string;
  /** The message as it was to be sent (JSON): what a replay sends. */
  message: string;
  /** 1 once a replay delivered it. */
  resolved: 0 | 1;
  /** ms since the epoch of this row's state: the latest wins under FINAL. */
  version: number;
}

/** What a failure row records of the attempts that ended in it. */
export interface FailureOutcome {
  /** The last answer's HTTP status; 0 without one. */
  status: number;
  reason: string;
  /** The last answer's body (cut to ANSWER_SNIPPET_BYTES). */
  answer: string;
  attempts: number;
  /** When the first attempt was made, ms since the epoch. */
  firstMs: number;
}

/** The failure rows of `messages` (Segment messages as they were to be sent) for a destination, stamped `nowMs`. */
export function failureRows(
  destination: { destinationId: string; workspaceId: string },
  messages: readonly ({ messageId: string; receivedAt: string } & Record<string, unknown>)[],
  f: FailureOutcome,
  nowMs: number,
): DeliveryFailureRow[] {
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  return messages.map((m) => ({
    destination_id: destination.destinationId,
    workspace_id: destination.workspaceId,
    message_id: m.messageId,
    user_id: text(m.userId),
    anonymous_id: text(m.anonymousId),
    status: f.status,
    reason: f.reason.slice(0, 500),
    answer: Buffer.from(f.answer).subarray(0, ANSWER_SNIPPET_BYTES).toString("utf8"),
    attempts: f.attempts,
    first_attempt_at: new Date(f.firstMs).toISOString(),
    last_attempt_at: new Date(nowMs).toISOString(),
    received_at: m.receivedAt,
    message: JSON.stringify(m),
    resolved: 0,
    version: nowMs,
  }));
}

/** The columns, in the order of the DDL. */
export const DELIVERY_FAILURE_COLUMNS = [
  "destination_id",
  "workspace_id",
  "message_id",
  "user_id",
  "anonymous_id",
  "status",
  "reason",
  "answer",
  "attempts",
  "first_attempt_at",
  "last_attempt_at",
  "received_at",
  "message",
  "resolved",
  "version",
] as const;

/** `CREATE TABLE IF NOT EXISTS` of the table; on a cluster `_local` replicated and a Distributed table over it. */
export function deliveryFailuresDdl(dialect: Dialect, database: string, cluster?: string): string[] {
  const local = storageName(DELIVERY_FAILURES_TABLE, cluster);
  const time = TYPES[dialect].time;
  const storage = `CREATE TABLE IF NOT EXISTS ${quoteIdent(database)}.${quoteIdent(local)}${onCluster(cluster)} (
  destination_id String,
  workspace_id String,
  message_id String,
  user_id String,
  anonymous_id String,
  status UInt16,
  reason String,
  answer String,
  attempts UInt32,
  first_attempt_at ${time},
  last_attempt_at ${time},
  received_at ${time},
  message String,
  resolved UInt8,
  version UInt64
)
ENGINE = ${engine("ReplacingMergeTree", "version", database, local, cluster)}
ORDER BY (destination_id, message_id)`;
  return cluster === undefined
    ? [storage]
    : [storage, distributedDdl(database, DELIVERY_FAILURES_TABLE, cluster, "cityHash64(destination_id, message_id)")];
}

/**
 * The failures of `destinationId` in `workspaceId` not yet delivered again, oldest first, at most
 * `limit`, after message `afterId` (paging). The workspace is checked too: a destination id reused
 * for another workspace's destination never sends the first workspace's kept messages onward.
 */
export function pendingFailuresQuery(database: string, destinationId: string, workspaceId: string, limit: number, afterId = ""): string {
  return `SELECT ${DELIVERY_FAILURE_COLUMNS.join(", ")}
FROM ${quoteIdent(database)}.${quoteIdent(DELIVERY_FAILURES_TABLE)} FINAL
WHERE destination_id = ${quoteString(destinationId)} AND workspace_id = ${quoteString(workspaceId)} AND resolved = 0 AND message_id > ${quoteString(afterId)}
ORDER BY message_id
LIMIT ${Math.max(1, Math.floor(limit))}`;
}
