/**
 * A fetch of events records -> the requests one destination is sent, and each request's body and
 * headers. Pure. A record is left out of every request when it belongs to another workspace, its
 * user is deleted or suppressed (schemas/privacy/list.ts), it is not an events row, or the
 * destination's rules keep it (sink/deliver/match.ts); its offset still counts as done.
 */
import type { WebhookDestination } from "../../schemas/destinations";
import { signature } from "../../schemas/destinations";
import type { PrivacyList } from "../../schemas/privacy/list";
import { skipReason, type SkipReason } from "./match";
import { parseRow, rowMessage, type DeliveryMessage } from "./message";

/** A record of a fetch: its offset and value. */
export interface FetchedRecord {
  offset: string;
  value: Buffer | null;
}

/** The messages of one request and the last offset it covers (with the skipped records before it). */
export interface PlannedRequest {
  messages: DeliveryMessage[];
  /** The offset whose commit (+1) this request's settling allows. */
  lastOffset: string;
}

/** Why a record is in no request. */
export type Skipped = SkipReason | "workspace" | "suppressed" | "unreadable";

/** What a fetch becomes: requests in offset order, the skipped counts, and the last offset of the fetch. */
export interface Plan {
  requests: PlannedRequest[];
  skipped: Map<Skipped, number>;
  lastOffset: string | undefined;
}

/**
 * Whether `message` must not be delivered: its user was deleted after it was received (the sink
 * drops it too), or is suppressed now. A suppressed user's message received before the
 * suppression stays stored, but is not sent onward: delivering it after the user objected would
 * be further processing.
 */
export function suppressed(privacy: PrivacyList, workspaceId: string, message: DeliveryMessage): boolean {
  const id = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  const [userId, anonymousId] = [id(message.userId), id(message.anonymousId)];
  return (
    privacy.drops(workspaceId, userId, anonymousId, () => Date.parse(message.receivedAt)) ||
    privacy.drops(workspaceId, userId, anonymousId, Infinity)
  );
}

/** Splits `records` into the destination's requests of at most `batchSize` messages. */
export function planRequests(destination: WebhookDestination, records: readonly FetchedRecord[], privacy: PrivacyList): Plan {
  const requests: PlannedRequest[] = [];
  const skipped = new Map<Skipped, number>();
  const skip = (why: Skipped) => skipped.set(why, (skipped.get(why) ?? 0) + 1);
  let open: PlannedRequest | undefined;
  for (const record of records) {
    const row = parseRow(record.value);
    const message = row === undefined ? undefined : rowMessage(row);
    const why: Skipped | undefined =
      row === undefined || message === undefined
        ? "unreadable"
        : row.workspace_id !== destination.workspaceId
          ? "workspace"
          : suppressed(privacy, row.workspace_id, message)
            ? "suppressed"
            : skipReason(destination, message);
    if (why !== undefined) {
      if (why !== "workspace") skip(why);
      if (open !== undefined) open.lastOffset = record.offset;
      continue;
    }
    if (open === undefined || open.messages.length >= destination.batchSize) {
      open = { messages: [], lastOffset: record.offset };
      requests.push(open);
    }
    open.messages.push(message!);
    open.lastOffset = record.offset;
  }
  return { requests, skipped, lastOffset: records.at(-1)?.offset };
}

/**
 * The body and headers of a request: the message itself when the destination sends one per
 * request, `{"batch": [...]}` when it batches; the operator's headers; with a secret, Segment's
 * `X-Signature` of the exact body bytes.
 */
export function requestOf(
  destination: WebhookDestination,
  messages: readonly DeliveryMessage[],
  secret: string | undefined,
): { body: Buffer; headers: Record<string, string> } {
  const body = Buffer.from(JSON.stringify(destination.batchSize === 1 && messages.length === 1 ? messages[0] : { batch: messages }));
  const headers: Record<string, string> = { ...destination.headers };
  if (secret !== undefined) headers["x-signature"] = signature(secret, body);
  return { body, headers };
}
