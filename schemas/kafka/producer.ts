/**
 * The one producer factory, and kafkajs sendBatch retried whole by us. kafkajs's own retry of a
 * send re-sends only to the brokers that did not answer the failed attempt; when a partition's
 * leader has moved to a broker that did answer, that partition's records are never sent again and
 * the send still resolves (kafkajs issue 1303; reproduced by test/faults/cluster, a leader
 * SIGKILLed under load, before this). So every producer of ours is made by createProducer, with
 * kafkajs retries 0 (PRODUCER_RETRY), and a failed send is sent again in full (sendWhole): records
 * that did land are sent twice, and ClickHouse keeps one row per messageId.
 */
import type { Kafka, Producer, ProducerBatch, RecordMetadata } from "kafkajs";
import { retry } from "../runtime/retry";
import { KeyPartitioner } from "./partitioner";

/** kafkajs retry options for our producers: none of its own (see above). */
export const PRODUCER_RETRY = { retries: 0 } as const;

/** Backoff of sendWhole between whole sends, ms. */
const SEND_BACKOFF = { minMs: 50, maxMs: 1_000 } as const;

/**
 * A producer of ours: no kafkajs retries (PRODUCER_RETRY), no topic auto-creation (setup creates
 * topics with their settings), Kafka's default partitioner for keyed records (KeyPartitioner).
 * Not connected.
 */
export function createProducer(kafka: Kafka): Producer {
  return kafka.producer({ allowAutoTopicCreation: false, createPartitioner: KeyPartitioner, retry: PRODUCER_RETRY });
}

/**
 * Sends `batch` until the broker acknowledges all of it or `deadlineMs` (ms from now) passes.
 * Throws the last error at the deadline, or at once for an error kafkajs deems final.
 */
export function sendWhole(producer: Producer, batch: ProducerBatch, deadlineMs: number): Promise<RecordMetadata[]> {
  return retry(() => producer.sendBatch(batch), { ...SEND_BACKOFF, deadlineMs, retriable: retriableSend });
}

/** Whether a failed send may succeed when sent again: kafkajs's `retriable`, or its retries spent. */
function retriableSend(error: unknown): boolean {
  const { name, retriable } = error as { name?: string; retriable?: boolean };
  return name === "KafkaJSNumberOfRetriesExceeded" || retriable === true;
}

/** How long a one-off write (publishRecords) may retry before it fails (Kafka unreachable), ms. */
export const PUBLISH_DEADLINE_MS = 30_000;

/** One record of publishRecords: its key, and its value (null: a tombstone). */
export interface KeyedRecord {
  key: string;
  value: string | null;
}

/**
 * Writes `records` to `topic` in one send with a producer of its own (connected, then
 * disconnected), acknowledged by every in-sync replica (acks=all) before it resolves: the CLI's
 * and the admin API's writes to the compacted topics (admin, destinations, plans). Throws when
 * Kafka does not acknowledge them within PUBLISH_DEADLINE_MS (retriable: the same change may be
 * written again).
 */
export async function publishRecords(kafka: Kafka, topic: string, records: readonly KeyedRecord[]): Promise<void> {
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    await sendWhole(producer, { acks: -1, topicMessages: [{ topic, messages: [...records] }] }, PUBLISH_DEADLINE_MS);
  } finally {
    await producer.disconnect();
  }
}
