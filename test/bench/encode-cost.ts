/**
 * The ingest's in-process CPU per message, without I/O, best of several passes over 100-message
 * batch bodies:
 * - `build`: parse the body, sort and check its items, build their records (ingest/records/validate.ts,
 *   ingest/records/build.ts): the ingest's own work, less the enrichment (its own row, enrich-cost.ts);
 * - `encode`: kafkajs turning those records into one produce request over three partitions (each
 *   record on its key's partition, as the ingest's partitioner puts it), the work of every
 *   sendBatch before a byte is written (kafkajs 2.x: one 512-byte buffer per record, doubled when
 *   the record is longer, copied into its batch, the batch into the request; CRC32C in
 *   JavaScript);
 * - `encodeUnder512`: the same records with each value cut to 440 bytes, so that every record
 *   fits kafkajs's first buffer (what a shorter record format would pay).
 * Figures of the machine it runs on; reported by `npm run bench`, never asserted.
 */
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import type { Message } from "../../schemas/messages";
import type { EventRecord } from "../../schemas/envelope";
import { sortBatch } from "../../ingest/records/validate";
import { buildRecords } from "../../ingest/records/build";
import { murmur2 } from "../../schemas/kafka/partitioner";

/** kafkajs's produce request (v3, which v4-v7 reuse): its internal module, not in its typings. */
type ProduceRequest = (request: {
  acks: number;
  timeout: number;
  compression: number;
  topicData: { topic: string; partitions: { partition: number; firstSequence: number; messages: EventRecord[] }[] }[];
}) => { encode: () => Promise<Buffer> };
const produceRequest = createRequire(__filename)("kafkajs/src/protocol/requests/produce/v3/request") as ProduceRequest;

const PARTITIONS = 3;
/** Bytes each value keeps in the encodeUnder512 pass: with a UUID key and the varints, under 512. */
const SHORT_VALUE = 440;

/** µs per message of each step, and the mean record value in bytes. */
export interface EncodeCost {
  build: number;
  encode: number;
  encodeUnder512: number;
  valueBytes: number;
}

async function encodeMicros(batches: readonly EventRecord[][]): Promise<number> {
  // Each record on its key's partition, computed once and before the clock starts: only the
  // encoding is timed.
  const requests = batches.map((records) => {
    const partitions = Array.from({ length: PARTITIONS }, (_, p) => ({ partition: p, firstSequence: 0, messages: [] as EventRecord[] }));
    for (const r of records) partitions[(murmur2(r.key) & 0x7fffffff) % PARTITIONS]!.messages.push(r);
    return { records, partitions };
  });
  let messages = 0;
  const start = process.hrtime.bigint();
  for (const { records, partitions } of requests) {
    await produceRequest({ acks: -1, timeout: 10_000, compression: 0, topicData: [{ topic: "events", partitions }] }).encode();
    messages += records.length;
  }
  return Number(process.hrtime.bigint() - start) / 1000 / messages;
}

/**
 * The costs for batch bodies of `batchSize` of `messages` (each pass gives every message a new
 * UUID messageId), best of `passes`. Throws if a message does not become a record.
 */
export async function encodeCost(messages: readonly Message[], batchSize = 100, passes = 10): Promise<EncodeCost> {
  const receipt = { workspaceId: "ws-bench", receivedAt: new Date().toISOString(), clientIp: "203.0.113.7" };
  let best: EncodeCost = { build: Infinity, encode: Infinity, encodeUnder512: Infinity, valueBytes: 0 };
  for (let pass = 0; pass < passes; pass++) {
    const bodies: string[] = [];
    for (let i = 0; i < messages.length; i += batchSize) {
      const batch = messages.slice(i, i + batchSize).map((m) => ({ ...m, messageId: randomUUID() }));
      bodies.push(JSON.stringify({ batch, sentAt: receipt.receivedAt }));
    }
    const batches: EventRecord[][] = [];
    const start = process.hrtime.bigint();
    for (const body of bodies) {
      const sorted = sortBatch(JSON.parse(body));
      if (!sorted.ok) throw new Error("a bench body is not a batch");
      const built = buildRecords(sorted.value.accepted, { sentAt: sorted.value.frame.sentAt }, receipt, 32 * 1024);
      if (built.oversized.length > 0 || built.records.length !== sorted.value.accepted.length || sorted.value.rejected.length > 0)
        throw new Error("a bench message did not become a record");
      batches.push(built.records);
    }
    const build = Number(process.hrtime.bigint() - start) / 1000 / messages.length;
    const encode = await encodeMicros(batches);
    const encodeUnder512 = await encodeMicros(
      batches.map((records) => records.map((r) => ({ key: r.key, value: r.value.slice(0, SHORT_VALUE) }))),
    );
    const values = batches.flat();
    const valueBytes = values.reduce((sum, r) => sum + Buffer.byteLength(r.value), 0) / values.length;
    best = {
      build: Math.min(best.build, build),
      encode: Math.min(best.encode, encode),
      encodeUnder512: Math.min(best.encodeUnder512, encodeUnder512),
      valueBytes,
    };
  }
  return best;
}
