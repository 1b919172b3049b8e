/**
 * Dead letters -> the DLQ topic, with the original key and value and the reason, step, time and
 * source in headers, in sends of at most `maxMessageBytes` each (schemas/kafka/limits.ts). A
 * letter over the limit (an undecodable record near the events topic's own limit, plus the
 * headers) has its value cut to fit, with the original size in `dlq-cut`, rather than be refused
 * on every retry. A send refused MESSAGE_TOO_LARGE all the same (the topic's limit lowered since
 * the sink read it) is cut again under half the limit, down to MIN_SEND_BYTES. Any other failed
 * send throws (retriable); the sink retries all of them before committing, so a record is never
 * both uncommitted-lost and un-dead-lettered (a retry may dead-letter one twice).
 */
import type { Message, Producer } from "kafkajs";
import { DLQ_HEADERS } from "../../schemas/envelope";
import { BATCH_SLACK_BYTES, chunkByBytes, recordBytes, recordLimit } from "../../schemas/kafka/limits";
import { cutText } from "../../schemas/wellformed";
import type { DeadLetter } from "./batch";

/** The smallest send limit the DLQ sends shrink to after MESSAGE_TOO_LARGE: past it the error is thrown. */
export const MIN_SEND_BYTES = BATCH_SLACK_BYTES + 4_096;

/** The most UTF-16 code units of a reason header: a reason quoting a record (a guard's path of a long key) must not outgrow the limit. */
export const MAX_REASON_CHARS = 1_000;

/** A DLQ record as sent. */
type LetterRecord = { key: Buffer | null; value: Buffer | null; headers: Record<string, string> };

/** Sends dead letters of one topic to the DLQ topic (acks=all), chunked by bytes, each cut to fit. */
export async function sendDeadLetters(
  producer: Producer,
  dlq: { topic: string; maxMessageBytes: number },
  sourceTopic: string,
  letters: DeadLetter[],
  now: Date,
): Promise<void> {
  let pending: LetterRecord[] = letters.map((letter) => ({
    key: letter.key,
    value: letter.value,
    headers: {
      [DLQ_HEADERS.reason]: cutText(letter.reason, MAX_REASON_CHARS),
      [DLQ_HEADERS.step]: letter.step,
      [DLQ_HEADERS.time]: now.toISOString(),
      [DLQ_HEADERS.source]: `${sourceTopic}/${letter.partition}/${letter.offset}`,
    },
  }));
  let limit = dlq.maxMessageBytes;
  while (pending.length > 0) {
    let sent = 0;
    try {
      const fitted = pending.map((record) => fitLetter(record, recordLimit(limit)));
      for (const chunk of chunkByBytes(fitted, limit, recordBytes)) {
        await producer.send({ topic: dlq.topic, acks: -1, messages: chunk as Message[] });
        sent += chunk.length;
      }
      return;
    } catch (error) {
      if (!isTooLarge(error) || limit <= MIN_SEND_BYTES) throw error;
      pending = pending.slice(sent);
      limit = Math.max(MIN_SEND_BYTES, Math.floor(limit / 2));
    }
  }
}

/**
 * A letter whose recordBytes exceed `maxRecordBytes` with its value cut to its first bytes so it
 * fits, and a `dlq-cut` header holding the original value's size; one that fits, unchanged. The
 * key, reason, step, time and source are kept (the value goes first). Pure.
 */
export function fitLetter(record: LetterRecord, maxRecordBytes: number): LetterRecord {
  const bytes = recordBytes(record);
  if (bytes <= maxRecordBytes || record.value === null) return record;
  const size = String(record.value.length);
  const headers = { ...record.headers, [DLQ_HEADERS.cut]: size };
  const over = bytes + recordBytes({ value: null, headers: { [DLQ_HEADERS.cut]: size } }) - maxRecordBytes;
  return { key: record.key, value: record.value.subarray(0, Math.max(0, record.value.length - over)), headers };
}

/** Whether kafkajs reports the broker refused a send as over the topic's max.message.bytes (kafkajs may wrap it). */
function isTooLarge(error: unknown): boolean {
  const { type, cause } = error as { type?: unknown; cause?: { type?: unknown } };
  return type === "MESSAGE_TOO_LARGE" || cause?.type === "MESSAGE_TOO_LARGE";
}
