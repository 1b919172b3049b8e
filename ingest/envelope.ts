/**
 * Validated bodies -> Kafka records (key = messageId, value = JSON envelope). Pure.
 * Dittofeed: batch-level context is merged under each item's own context, the item's keys winning.
 * Spec §2.1: a missing timestamp defaults to the time the server received the message.
 */
import type { Envelope, EventRecord } from "../schemas/envelope";
import type { BatchBody, IdentifyBody, JsonObject, Message } from "../schemas/messages";

/** Who sent the request and when it arrived. */
export interface Receipt {
  workspaceId: string;
  /** ISO 8601 server time of arrival. */
  receivedAt: string;
}

/** One record per batch item, in the order of the batch. */
export function recordsFromBatch(body: BatchBody, receipt: Receipt): EventRecord[] {
  return body.batch.map((item) =>
    toRecord(withDefaults(item, body.context, receipt.receivedAt), receipt, body.sentAt),
  );
}

/** The one record of an identify body. */
export function recordFromIdentify(body: IdentifyBody, receipt: Receipt): EventRecord {
  const { sentAt, ...rest } = body;
  const message: Message = { ...rest, type: "identify" };
  return toRecord(withDefaults(message, undefined, receipt.receivedAt), receipt, sentAt);
}

/** Fills `timestamp` and merges the batch context under the message's own. */
export function withDefaults(
  message: Message,
  batchContext: JsonObject | undefined,
  receivedAt: string,
): Message {
  const context =
    batchContext === undefined ? message.context : { ...batchContext, ...message.context };
  return {
    ...message,
    timestamp: message.timestamp ?? receivedAt,
    ...(context === undefined ? {} : { context }),
  };
}

function toRecord(message: Message, receipt: Receipt, sentAt: string | undefined): EventRecord {
  const envelope: Envelope = {
    workspaceId: receipt.workspaceId,
    receivedAt: receipt.receivedAt,
    ...(sentAt === undefined ? {} : { sentAt }),
    message,
  };
  return { key: message.messageId, value: JSON.stringify(envelope) };
}
