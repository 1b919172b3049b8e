/**
 * kafkajs sendBatch, retried whole by us. kafkajs's own retry of a send re-sends only to the
 * brokers that did not answer the failed attempt; when a partition's leader has moved to a broker
 * that did answer, that partition's records are never sent again and the send still resolves
 * (kafkajs issue 1303; reproduced by test/faults-cluster, a leader SIGKILLed under load, before
 * this). So every producer of ours is made with kafkajs retries 0 (PRODUCER_RETRY), and a failed
 * send is sent again in full: records that did land are sent twice, and ClickHouse keeps one row
 * per messageId. Throws the last error at the deadline, or at once for an error kafkajs deems final.
 */
import type { Producer, ProducerBatch, RecordMetadata } from "kafkajs";

/** kafkajs retry options for our producers: none of its own (see above). */
export const PRODUCER_RETRY = { retries: 0 } as const;

/** Sends `batch` until the broker acknowledges all of it or `deadlineMs` (ms from now) passes. */
export async function sendWhole(producer: Producer, batch: ProducerBatch, deadlineMs: number): Promise<RecordMetadata[]> {
  const deadline = Date.now() + deadlineMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await producer.sendBatch(batch);
    } catch (error) {
      const { name, retriable } = error as { name?: string; retriable?: boolean };
      const again = name === "KafkaJSNumberOfRetriesExceeded" || retriable === true;
      const waitMs = Math.min(1_000, 50 * 2 ** attempt);
      if (!again || Date.now() + waitMs >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
