/**
 * kafkajs 2.2.4's Produce request (the body its versions 3-7 share) and its request framing,
 * written once into a buffer of the exact size: what schemas/kafka/stand-ins.ts puts in place
 * of kafkajs's `protocol/requests/produce/v3/request.js` and `protocol/request.js`.
 *
 * kafkajs encodes each record into its own encoder, copies the records into the batch body, the
 * body into the batch, the batch into its partition, the partition into its topic, the topic into
 * the request, and the request into its frame: eight copies of every record value, each into a
 * new zero-filled buffer grown by doubling, 11-16 KB of allocation for a 953-byte record
 * (CHANGELOG.md, Performance history: "The batch path, third pass"), plus the objects of its varint and 64-bit
 * helpers. Here the sizes are computed first (the formulas are kafkajs's own: `Encoder.sizeOf*`),
 * the record batch (record-batch.ts), its partition and its topic are written straight into the request's buffer,
 * the checksum is computed over the batch's bytes where they lie, and the frame is one more copy.
 * The bytes are kafkajs's: the unit tests compare them with its encoders' on every kind of record
 * the producer can be given, and every integration test's broker checks each batch's CRC.
 *
 * Only the shapes kafkajs itself encodes are taken: no compression, keys and values that are
 * strings, Buffers or null, header values that are strings or Buffers (or arrays of them). Any
 * other request goes to kafkajs's own encoder unchanged, so its answers, errors included, stay
 * kafkajs's.
 */

import { Encoder, Long, putBatch, sizePartition, type KafkaEncoder, type ProduceMessage } from "./record-batch";

export type { ProduceMessage } from "./record-batch";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's file, not its public API
const { Produce: PRODUCE } = require("kafkajs/src/protocol/requests/apiKeys") as { Produce: number };

/** What kafkajs's Produce request factories (v3-v7) take. */
export interface ProduceArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  producerId?: unknown;
  producerEpoch?: number;
  compression?: number;
  topicData: { topic: string; partitions: { partition: number; firstSequence?: number; messages: ProduceMessage[] }[] }[];
}

/** A request as kafkajs's connection sends it. */
export interface KafkaRequest {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  expectResponse: () => boolean;
  encode: () => Promise<KafkaEncoder> | KafkaEncoder;
}

/** The data of a key, a value or a header value as kafkajs reads it: null, a string or a Buffer. */
const plainBytes = (v: unknown): boolean => v === null || v === undefined || typeof v === "string" || Buffer.isBuffer(v);

/** Whether every message has a shape kafkajs's own encoder accepts and this one writes alike. */
function plainMessages(args: ProduceArgs): boolean {
  for (const { partitions } of args.topicData)
    for (const { messages } of partitions)
      for (const m of messages) {
        if (!plainBytes(m.key) || !plainBytes(m.value)) return false;
        if (m.timestamp !== undefined && m.timestamp !== null && typeof (m.timestamp as unknown) !== "number") return false;
        if (m.headers === undefined) continue;
        if (m.headers === null || typeof m.headers !== "object") return false;
        for (const h of Object.values(m.headers))
          for (const v of Array.isArray(h) ? h : [h]) if (typeof v !== "string" && !Buffer.isBuffer(v)) return false;
      }
  return true;
}

/** An Encoder over `buf`, written from its start, that never grows (the size is exact). */
function encoderOver(buf: Buffer): KafkaEncoder {
  const encoder = new Encoder(1);
  encoder.buf = buf;
  return encoder;
}

/** Throws unless `encoder` filled its buffer exactly: a size computed wrong is a bug, never sent. */
function filled(encoder: KafkaEncoder, what: string): KafkaEncoder {
  if (encoder.offset !== encoder.buf.length) throw new Error(`${what}: wrote ${encoder.offset} of ${encoder.buf.length} bytes`);
  return encoder;
}

/**
 * The Produce request body of kafkajs's versions 3-7 (transactional id, acks, timeout, and per
 * topic and partition an uncompressed record batch), in one buffer of its exact size. Throws what
 * Buffer's writers throw for out-of-range numbers (kafkajs's Encoder would too), or an Error if
 * the computed size is not what was written (a bug).
 */
export function encodeProduce(args: ProduceArgs, crc32c: (bytes: Buffer) => number): KafkaEncoder {
  const { acks, timeout, transactionalId = null, producerId = Long.fromInt(-1), producerEpoch = 0 } = args;
  const batch = { producerId, producerEpoch, transactional: !!transactionalId };
  const topics = args.topicData.map(({ topic, partitions }) => ({
    topic,
    partitions: partitions.map((p) => sizePartition(p.partition, p.firstSequence, p.messages)),
  }));
  let bytes = 2 + (transactionalId === null ? 0 : Buffer.byteLength(transactionalId, "utf8")) + 2 + 4 + 4;
  for (const { topic, partitions } of topics) {
    bytes += 2 + Buffer.byteLength(topic, "utf8") + 4;
    for (const p of partitions) bytes += 8 + p.batchBytes;
  }
  const encoder = encoderOver(Buffer.allocUnsafe(bytes));
  encoder.writeString(transactionalId).writeInt16(acks).writeInt32(timeout).writeInt32(topics.length);
  const buf = encoder.buf;
  for (const { topic, partitions } of topics) {
    encoder.writeString(topic).writeInt32(partitions.length);
    for (const p of partitions) {
      encoder.writeInt32(p.partition).writeInt32(p.batchBytes);
      encoder.offset = putBatch(buf, encoder.offset, p, batch, crc32c);
    }
  }
  return filled(encoder, "produce request");
}

/**
 * What stands in for kafkajs's produce v3 request module: the same factory, whose `encode`
 * writes one buffer (encodeProduce) for the requests it takes and leaves the others (compressed,
 * or messages of another shape) to `kafkajs` (the module it replaces).
 */
export function produceRequest(
  kafkajs: (args: ProduceArgs) => KafkaRequest,
  crc32c: (bytes: Buffer) => number,
): (args: ProduceArgs) => KafkaRequest {
  return (args) => {
    if ((args.compression ?? 0) !== 0 || !plainMessages(args)) return kafkajs(args);
    return {
      apiKey: PRODUCE,
      apiVersion: 3,
      apiName: "Produce",
      expectResponse: () => args.acks !== 0,
      encode: async () => encodeProduce(args, crc32c),
    };
  };
}

/**
 * What stands in for kafkajs's `protocol/request.js`: a request's frame (size, API key and
 * version, correlation id, client id) and its encoded body, in one buffer of the exact size:
 * one copy of the body where kafkajs made two into buffers of the next power of two.
 */
export async function frameRequest(args: {
  correlationId: number;
  clientId: string | null;
  request: Pick<KafkaRequest, "apiKey" | "apiVersion" | "encode">;
}): Promise<KafkaEncoder> {
  const { correlationId, clientId, request } = args;
  const payload = await request.encode();
  const size = 2 + 2 + 4 + 2 + (clientId === null || clientId === undefined ? 0 : Buffer.byteLength(clientId, "utf8")) + payload.size();
  const framed = encoderOver(Buffer.allocUnsafe(4 + size))
    .writeInt32(size)
    .writeInt16(request.apiKey)
    .writeInt16(request.apiVersion)
    .writeInt32(correlationId)
    .writeString(clientId)
    .writeEncoder(payload);
  return filled(framed, "request frame");
}
