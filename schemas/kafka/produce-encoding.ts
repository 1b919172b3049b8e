/**
 * kafkajs 2.2.4's Produce request (the body its versions 3-7 share) and its request framing,
 * written once into a buffer of the exact size: what schemas/kafka/stand-ins.ts puts in place
 * of kafkajs's `protocol/requests/produce/v3/request.js` and `protocol/request.js`.
 *
 * kafkajs encodes each record into its own encoder, copies the records into the batch body, the
 * body into the batch, the batch into its partition, the partition into its topic, the topic into
 * the request, and the request into its frame: eight copies of every record value, each into a
 * new zero-filled buffer grown by doubling, 11-16 KB of allocation for a 953-byte record
 * (docs/PERFORMANCE.md, "The batch path, third pass"), plus the objects of its varint and 64-bit
 * helpers. Here the sizes are computed first (the formulas are kafkajs's own: `Encoder.sizeOf*`),
 * the record batch, its partition and its topic are written straight into the request's buffer,
 * the checksum is computed over the batch's bytes where they lie, and the frame is one more copy.
 * The bytes are kafkajs's: the unit tests compare them with its encoders' on every kind of record
 * the producer can be given, and every integration test's broker checks each batch's CRC.
 *
 * Only the shapes kafkajs itself encodes are taken: no compression, keys and values that are
 * strings, Buffers or null, header values that are strings or Buffers (or arrays of them). Any
 * other request goes to kafkajs's own encoder unchanged, so its answers, errors included, stay
 * kafkajs's.
 */

/** kafkajs's Encoder, as far as this module uses it. */
interface KafkaEncoder {
  buf: Buffer;
  offset: number;
  readonly buffer: Buffer;
  size(): number;
  writeInt16(value: number): KafkaEncoder;
  writeInt32(value: number): KafkaEncoder;
  writeString(value: string | null): KafkaEncoder;
  writeVarLong(value: unknown): KafkaEncoder;
  writeEncoder(value: KafkaEncoder): KafkaEncoder;
}
interface EncoderClass {
  new (initialSize?: number): KafkaEncoder;
  sizeOfVarInt(value: number): number;
  sizeOfVarLong(value: unknown): number;
}
interface LongValue {
  getHighBits(): number;
  getLowBits(): number;
}

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's files, not its public API */
const Encoder = require("kafkajs/src/protocol/encoder") as EncoderClass;
const Long = require("kafkajs/src/utils/long") as { fromValue(value: unknown): LongValue; fromInt(value: number): LongValue };
const { Produce: PRODUCE } = require("kafkajs/src/protocol/requests/apiKeys") as { Produce: number };
/* eslint-enable @typescript-eslint/no-require-imports */

/** Record batch constants (Kafka protocol guide, "Record Batch"; kafkajs recordBatch/v0). */
const MAGIC_BYTE = 2;
const TRANSACTIONAL = 16;
/** Batch body bytes before the records: attributes 2, last offset delta 4, first and max timestamps 8 + 8, producer id 8, epoch 2, first sequence 4, record count 4. */
const BODY_HEADER = 40;
/** Batch bytes before the body: first offset 8, length 4, leader epoch 4, magic 1, CRC 4. */
const BATCH_HEADER = 21;

/** A header value as kafkajs takes it. */
type HeaderValue = string | Buffer;

/** One message of a Produce request, as kafkajs's producer hands it to the request. */
export interface ProduceMessage {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, HeaderValue | HeaderValue[]>;
  timestamp?: number;
}

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

/** Bytes of a varint-length-prefixed key or value (null: the length -1 alone). */
const sizeOfVarIntBytes = (v: string | Buffer | null | undefined): number => {
  if (v === null || v === undefined) return 1;
  const n = typeof v === "string" ? Buffer.byteLength(v, "utf8") : v.length;
  return Encoder.sizeOfVarInt(n) + n;
};

/** A header list in kafkajs's order: each key once, or once per element of an array value. */
function headerList(headers: ProduceMessage["headers"]): [string, HeaderValue][] {
  const list: [string, HeaderValue][] = [];
  if (headers === undefined) return list;
  for (const key of Object.keys(headers)) {
    const v = headers[key]!;
    if (Array.isArray(v)) for (const each of v) list.push([key, each]);
    else list.push([key, v]);
  }
  return list;
}

/** Whether a timestamp delta is written as a 32-bit zigzag varint (its bytes equal the 64-bit one's). */
const smallDelta = (d: number): boolean => Number.isSafeInteger(d) && d >= -(2 ** 30) && d < 2 ** 30;

/** A partition's records, sized: what writing them needs, computed once. */
interface SizedPartition {
  partition: number;
  firstSequence: number;
  messages: ProduceMessage[];
  headers: [string, HeaderValue][][];
  deltas: number[];
  bodies: number[];
  firstTimestamp: number;
  maxTimestamp: number;
  /** Bytes of the record batch, first offset to the last record. */
  batchBytes: number;
}

/** Sizes a partition's record batch (kafkajs produce v3 partitionsEncoder and record/v0's rules). */
function sizePartition(partition: number, firstSequence: number | undefined, messages: ProduceMessage[]): SizedPartition {
  const now = Date.now();
  // kafkajs sorts as Array.prototype.sort does by default (by the numbers' text): kept, so the batch's bytes are its.
  const stamps = messages
    .map((m) => m.timestamp)
    .filter((t) => t !== undefined && t !== null)
    .sort() as number[];
  const firstTimestamp = stamps.length === 0 ? now : stamps[0]!;
  const maxTimestamp = stamps.length === 0 ? now : stamps[stamps.length - 1]!;
  const headers: [string, HeaderValue][][] = [];
  const deltas: number[] = [];
  const bodies: number[] = [];
  let records = 0;
  messages.forEach((m, i) => {
    const list = headerList(m.headers);
    const delta = ((m.timestamp as number | undefined) || now) - firstTimestamp;
    let body = 1 + (smallDelta(delta) ? Encoder.sizeOfVarInt(delta) : Encoder.sizeOfVarLong(delta)) + Encoder.sizeOfVarInt(i);
    body += sizeOfVarIntBytes(m.key) + sizeOfVarIntBytes(m.value) + Encoder.sizeOfVarInt(list.length);
    for (const [key, value] of list) body += sizeOfVarIntBytes(key) + sizeOfVarIntBytes(value);
    headers.push(list);
    deltas.push(delta);
    bodies.push(body);
    records += Encoder.sizeOfVarInt(body) + body;
  });
  return {
    partition,
    firstSequence: firstSequence ?? 0,
    messages,
    headers,
    deltas,
    bodies,
    firstTimestamp,
    maxTimestamp,
    batchBytes: BATCH_HEADER + BODY_HEADER + records,
  };
}

/** Writes value as an unsigned LEB128 varint at `at` (kafkajs Encoder.writeUVarInt's loop); returns the next offset. */
function putUVarInt(buf: Buffer, at: number, value: number): number {
  while ((value & 0xffffff80) !== 0) {
    buf[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  buf[at++] = value;
  return at;
}

/** Writes a zigzag varint (kafkajs Encoder.writeVarInt). */
const putVarInt = (buf: Buffer, at: number, value: number): number => putUVarInt(buf, at, (value << 1) ^ (value >> 31));

/** Writes a varint-length-prefixed key or value (kafkajs Encoder.writeVarIntBytes). */
function putVarIntBytes(buf: Buffer, at: number, v: string | Buffer | null | undefined): number {
  if (v === null || v === undefined) return putVarInt(buf, at, -1);
  if (typeof v === "string") {
    const n = Buffer.byteLength(v, "utf8");
    at = putVarInt(buf, at, n);
    return at + buf.write(v, at, n, "utf8");
  }
  at = putVarInt(buf, at, v.length);
  return at + v.copy(buf, at);
}

/** Writes a 64-bit integer as kafkajs Encoder.writeInt64 does (through its Long). */
function putInt64(buf: Buffer, at: number, value: unknown): number {
  const long = Long.fromValue(value);
  buf.writeInt32BE(long.getHighBits(), at);
  buf.writeInt32BE(long.getLowBits(), at + 4);
  return at + 8;
}

/** Writes a sized partition's record batch at `at` (kafkajs RecordBatch v0, uncompressed); returns the next offset. */
function putBatch(
  buf: Buffer,
  at: number,
  p: SizedPartition,
  batch: { producerId: unknown; producerEpoch: number; transactional: boolean },
  crc32c: (bytes: Buffer) => number,
): number {
  at = putInt64(buf, at, 0); // first offset
  at = buf.writeInt32BE(p.batchBytes - 12, at);
  at = buf.writeInt32BE(0, at); // partition leader epoch
  at = buf.writeInt8(MAGIC_BYTE, at);
  const crcAt = at;
  const bodyAt = at + 4;
  at = buf.writeInt16BE(batch.transactional ? TRANSACTIONAL : 0, bodyAt);
  at = buf.writeInt32BE(p.messages.length - 1, at);
  at = putInt64(buf, at, p.firstTimestamp);
  at = putInt64(buf, at, p.maxTimestamp);
  at = putInt64(buf, at, batch.producerId);
  at = buf.writeInt16BE(batch.producerEpoch, at);
  at = buf.writeInt32BE(p.firstSequence, at);
  at = buf.writeInt32BE(p.messages.length, at);
  p.messages.forEach((m, i) => {
    at = putVarInt(buf, at, p.bodies[i]!);
    buf[at++] = 0; // record attributes
    const delta = p.deltas[i]!;
    if (smallDelta(delta)) at = putVarInt(buf, at, delta);
    else at += new Encoder(16).writeVarLong(delta).buffer.copy(buf, at);
    at = putVarInt(buf, at, i);
    at = putVarIntBytes(buf, at, m.key);
    at = putVarIntBytes(buf, at, m.value);
    const list = p.headers[i]!;
    at = putVarInt(buf, at, list.length);
    for (const [key, value] of list) at = putVarIntBytes(buf, putVarIntBytes(buf, at, key), value);
  });
  buf.writeUInt32BE(crc32c(buf.subarray(bodyAt, at)), crcAt);
  return at;
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
