/**
 * The byte limit of one produce, shared by the ingest's sends and the sink's DLQ sends. A record
 * batch over the topic's max.message.bytes is refused whole by the broker (MESSAGE_TOO_LARGE),
 * and a retry of the same batch is refused again, so sends are cut into chunks under the limit.
 * `topicMaxMessageBytes` throws if Kafka is unreachable; the rest is pure.
 */
import { ConfigResourceTypes, type Kafka } from "kafkajs";
import { withAdmin } from "./client";

/**
 * Bytes a record adds to a record batch beyond its key, value and headers (Kafka's record
 * format v2: length, attributes, timestamp and offset deltas, varints), rounded up.
 * https://kafka.apache.org/documentation/#record
 */
export const RECORD_OVERHEAD_BYTES = 32;

/** Room kept under the limit for the record batch header (61 bytes) and request framing. */
export const BATCH_SLACK_BYTES = 1_024;

/**
 * The most bytes (recordBytes) one record may take to be sent under a send limit of `maxBytes`
 * (the smaller of KAFKA_MAX_MESSAGE_BYTES and the topic's max.message.bytes): alone in its chunk,
 * with the batch slack kept (chunkByBytes). A bigger record is refused by the broker on every retry.
 */
export function recordLimit(maxBytes: number): number {
  return maxBytes - BATCH_SLACK_BYTES;
}

/** Bytes one record takes in a produce: key + value (UTF-8) + headers + overhead. */
export function recordBytes(record: {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, string>;
}): number {
  let bytes = RECORD_OVERHEAD_BYTES + byteLength(record.key) + byteLength(record.value);
  for (const [name, value] of Object.entries(record.headers ?? {})) bytes += name.length + Buffer.byteLength(value, "utf8") + 8;
  return bytes;
}

/**
 * Cuts items, in order, into chunks whose `sizeOf` sum stays under `maxBytes` minus the batch
 * slack. An item alone over the limit gets a chunk of its own (the broker then refuses it).
 */
export function chunkByBytes<T>(items: readonly T[], maxBytes: number, sizeOf: (item: T) => number): T[][] {
  const budget = Math.max(1, maxBytes - BATCH_SLACK_BYTES);
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (chunk.length > 0 && bytes + size > budget) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * The smaller of `configured` and the topic's max.message.bytes as the broker reports it (a
 * topic without an override reports the broker's message.max.bytes). Throws if Kafka does not
 * answer.
 */
export async function topicMaxMessageBytes(kafka: Kafka, topic: string, configured: number): Promise<number> {
  return withAdmin(kafka, async (admin) => {
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ["max.message.bytes"] }],
    });
    const value = Number(described.resources[0]?.configEntries.find((e) => e.configName === "max.message.bytes")?.configValue);
    return Number.isInteger(value) && value > 0 ? Math.min(configured, value) : configured;
  });
}

function byteLength(data: string | Buffer | null | undefined): number {
  if (data === null || data === undefined) return 0;
  return typeof data === "string" ? Buffer.byteLength(data, "utf8") : data.length;
}
