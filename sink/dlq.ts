/**
 * Dead letters -> the DLQ topic, with the original key and value and the reason, step, time and
 * source in headers, in sends of at most `maxMessageBytes` each (schemas/kafka/limits.ts). A
 * failed send throws (retriable); the sink retries all of them before committing, so a record
 * is never both uncommitted-lost and un-dead-lettered (a retry may dead-letter one twice).
 */
import type { Producer } from "kafkajs";
import { DLQ_HEADERS } from "../schemas/envelope";
import { chunkByBytes, recordBytes } from "../schemas/kafka/limits";
import type { DeadLetter } from "./batch";

/** Sends dead letters of one topic to the DLQ topic (acks=all), chunked by bytes. */
export async function sendDeadLetters(
  producer: Producer,
  dlq: { topic: string; maxMessageBytes: number },
  sourceTopic: string,
  letters: DeadLetter[],
  now: Date,
): Promise<void> {
  if (letters.length === 0) return;
  const messages = letters.map((letter) => ({
    key: letter.key,
    value: letter.value,
    headers: {
      [DLQ_HEADERS.reason]: letter.reason,
      [DLQ_HEADERS.step]: letter.step,
      [DLQ_HEADERS.time]: now.toISOString(),
      [DLQ_HEADERS.source]: `${sourceTopic}/${letter.partition}/${letter.offset}`,
    },
  }));
  for (const chunk of chunkByBytes(messages, dlq.maxMessageBytes, recordBytes)) {
    await producer.send({ topic: dlq.topic, acks: -1, messages: chunk });
  }
}
