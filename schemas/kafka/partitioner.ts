/**
 * The partitioner of every producer of the project: Kafka's default for keyed records (the Java
 * client's murmur2 of the key's UTF-8 bytes, as kafkajs's DefaultPartitioner computes it), so a
 * messageId lands on the same partition whichever client produced it. Computed in 32-bit integer
 * arithmetic: kafkajs's murmur2 runs on BigInt-backed longs and copies each key into a Buffer,
 * allocating at every step (3.5% of the ingest's CPU in issue 16's profile).
 */
import { Partitioners, type ICustomPartitioner } from "kafkajs";

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/**
 * Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2) of a key's UTF-8 bytes, as a
 * signed 32-bit integer; equal to kafkajs's for every key. A string of ASCII characters is hashed
 * from its char codes without encoding it.
 */
export function murmur2(key: string | Buffer): number {
  if (typeof key === "string") {
    for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) > 0x7f) return murmur2(Buffer.from(key, "utf8"));
  }
  const text = typeof key === "string" ? key : undefined;
  const bytes = typeof key === "string" ? undefined : key;
  const byte = (i: number) => (text !== undefined ? text.charCodeAt(i) : bytes![i]!);
  const length = key.length;
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = byte(i) | (byte(i + 1) << 8) | (byte(i + 2) << 16) | (byte(i + 3) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= byte(whole + 2) << 16;
    if (rest >= 2) h ^= byte(whole + 1) << 8;
    h ^= byte(whole);
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * kafkajs's DefaultPartitioner with the hash above: a record's own `partition` wins; a keyed
 * record goes to `(murmur2(key) & 0x7fffffff) % partitions` (the same partition kafkajs and the
 * Java client pick); an unkeyed one is left to kafkajs's round robin.
 */
export const KeyPartitioner: ICustomPartitioner = () => {
  const unkeyed = Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key === null || message.key === undefined) return unkeyed(args);
    return (murmur2(message.key) & 0x7fffffff) % partitionMetadata.length;
  };
};
