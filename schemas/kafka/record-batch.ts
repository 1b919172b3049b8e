/**
 * A partition's record batch (Kafka's magic 2, uncompressed) sized and written in place, byte for
 * byte as kafkajs 2.2.4 writes it (its `recordBatch/v0` and `record/v0`, and the partition encoder
 * of its produce v3 request), for produce-encoding.ts. kafkajs's Encoder and Long are used where
 * this code needs their exact behaviour (sizes of varints, 64-bit values); the rest writes
 * straight into the caller's buffer. A record is: its length (varint), attributes, timestamp delta
 * (varlong), offset delta, key and value (varint lengths), headers (Kafka protocol guide, "Record").
 */

/** kafkajs's Encoder, as far as this module uses it. */
export interface KafkaEncoder {
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
/** kafkajs's Encoder class (its varint sizes, and the buffers produce-encoding.ts writes through). */
export const Encoder = require("kafkajs/src/protocol/encoder") as EncoderClass;
/** kafkajs's 64-bit integer (BigInt-backed): how it reads timestamps and producer ids. */
export const Long = require("kafkajs/src/utils/long") as { fromValue(value: unknown): LongValue; fromInt(value: number): LongValue };
/* eslint-enable @typescript-eslint/no-require-imports */

/** Record batch constants (Kafka protocol guide, "Record Batch"; kafkajs recordBatch/v0). */
const MAGIC_BYTE = 2;
const TRANSACTIONAL = 16;
/** Batch body bytes before the records: attributes 2, last offset delta 4, first and max timestamps 8 + 8, producer id 8, epoch 2, first sequence 4, record count 4. */
const BODY_HEADER = 40;
/** Batch bytes before the body: first offset 8, length 4, leader epoch 4, magic 1, CRC 4. */
const BATCH_HEADER = 21;

/** A header value as kafkajs takes it. */
export type HeaderValue = string | Buffer;

/** One message of a Produce request, as kafkajs's producer hands it to the request. */
export interface ProduceMessage {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, HeaderValue | HeaderValue[]>;
  timestamp?: number;
}

/** Bytes of a varint-length-prefixed key or value (null: the length -1 alone). */
const sizeOfVarIntBytes = (v: string | Buffer | null | undefined): number => {
  if (v === null || v === undefined) return 1;
  const n = typeof v === "string" ? Buffer.byteLength(v, "utf8") : v.length;
  return Encoder.sizeOfVarInt(n) + n;
};

/** The header list of a message without headers (most of ours): shared, never written to. */
const NO_HEADERS: readonly [string, HeaderValue][] = [];

/** A header list in kafkajs's order: each key once, or once per element of an array value. */
function headerList(headers: ProduceMessage["headers"]): readonly [string, HeaderValue][] {
  if (headers === undefined) return NO_HEADERS;
  const list: [string, HeaderValue][] = [];
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
export interface SizedPartition {
  partition: number;
  firstSequence: number;
  messages: ProduceMessage[];
  headers: (readonly [string, HeaderValue][])[];
  deltas: number[];
  bodies: number[];
  firstTimestamp: number;
  maxTimestamp: number;
  /** Bytes of the record batch, first offset to the last record. */
  batchBytes: number;
}

/** Sizes a partition's record batch (kafkajs produce v3 partitionsEncoder and record/v0's rules). */
export function sizePartition(partition: number, firstSequence: number | undefined, messages: ProduceMessage[]): SizedPartition {
  const now = Date.now();
  // kafkajs sorts as Array.prototype.sort does by default (by the numbers' text): kept, so the batch's bytes are its.
  const stamps = messages
    .map((m) => m.timestamp)
    .filter((t) => t !== undefined && t !== null)
    .sort() as number[];
  const firstTimestamp = stamps.length === 0 ? now : stamps[0]!;
  const maxTimestamp = stamps.length === 0 ? now : stamps[stamps.length - 1]!;
  const headers: (readonly [string, HeaderValue][])[] = [];
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
export function putBatch(
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
