/**
 * Dead letters -> the DLQ topic, with the original key and value and the reason, step, time and
 * source in headers. A failed send throws (retriable); the sink retries it before committing,
 * so a record is never both uncommitted-lost and un-dead-lettered.
 */
import type { Producer } from "kafkajs";
import { DLQ_HEADERS } from "../schemas/envelope";
import type { DeadLetter } from "./batch";

/** Sends dead letters of one topic to the DLQ topic (acks=all). */
export async function sendDeadLetters(
  producer: Producer,
  dlqTopic: string,
  sourceTopic: string,
  letters: DeadLetter[],
  now: Date,
): Promise<void> {
  if (letters.length === 0) return;
  await producer.send({
    topic: dlqTopic,
    acks: -1,
    messages: letters.map((letter) => ({
      key: letter.key,
      value: letter.value,
      headers: {
        [DLQ_HEADERS.reason]: letter.reason,
        [DLQ_HEADERS.step]: letter.step,
        [DLQ_HEADERS.time]: now.toISOString(),
        [DLQ_HEADERS.source]: `${sourceTopic}/${letter.partition}/${letter.offset}`,
      },
    })),
  });
}
