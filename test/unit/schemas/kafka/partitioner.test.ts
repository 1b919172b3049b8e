/**
 * KeyPartitioner and murmur2 (schemas/kafka/partitioner.ts) against kafkajs's own murmur2 and
 * DefaultPartitioner: the same hash and the same partition for ASCII, multi-byte and odd-length
 * keys, as strings and as Buffers. Pure.
 */
import { randomUUID } from "node:crypto";
import { Partitioners, type PartitionerArgs } from "kafkajs";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { KeyPartitioner, murmur2 } from "../../../../schemas/kafka/partitioner";

// kafkajs's reference implementation (not part of its typed API).
// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs ships no types for its internal murmur2 module
const kafkajsMurmur2 = require("kafkajs/src/producer/partitioners/default/murmur2") as (key: string | Buffer) => number;

const keys = [
  "",
  "a",
  "ab",
  "abc",
  "abcd",
  "abcde",
  "ключ",
  "é",
  "😀 emoji",
  "message-\u0000-nul",
  ...Array.from({ length: 2_000 }, () => randomUUID()),
  ...Array.from({ length: 200 }, (_, i) => `ñ${"x".repeat(i)}€`),
];

test("murmur2 equals kafkajs's for every key, as a string and as a Buffer", () => {
  for (const key of keys) {
    assert.is(murmur2(key), kafkajsMurmur2(key), `string ${JSON.stringify(key)}`);
    assert.is(murmur2(Buffer.from(key)), kafkajsMurmur2(Buffer.from(key)), `buffer ${JSON.stringify(key)}`);
  }
});

test("the Java client's vectors (org.apache.kafka.common.utils.UtilsTest#testMurmur2)", () => {
  const vectors: [string, number][] = [
    ["21", -973932308],
    ["foobar", -790332482],
    ["a-little-bit-long-string", -985981536],
    ["a-little-bit-longer-string", -1486304829],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
    ["abc", 479470107],
  ];
  for (const [key, hash] of vectors) assert.is(murmur2(key), hash, key);
});

test("KeyPartitioner picks kafkajs DefaultPartitioner's partition for keyed records; a set partition wins", () => {
  const ours = KeyPartitioner();
  const theirs = Partitioners.DefaultPartitioner();
  for (const partitions of [1, 3, 6, 7]) {
    const partitionMetadata = Array.from({ length: partitions }, (_, p) => ({
      partitionId: p,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    }));
    for (const key of keys) {
      const args: PartitionerArgs = { topic: "events", partitionMetadata, message: { key, value: "v" } };
      assert.is(ours(args), theirs(args), `${partitions} partitions, key ${JSON.stringify(key)}`);
    }
    assert.is(ours({ topic: "events", partitionMetadata, message: { key: "k", value: "v", partition: partitions - 1 } }), partitions - 1);
  }
});

test("an unkeyed record is spread over the partitions (kafkajs's round robin)", () => {
  const ours = KeyPartitioner();
  const partitionMetadata = [0, 1, 2].map((p) => ({ partitionId: p, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
  const seen = new Set(Array.from({ length: 6 }, () => ours({ topic: "events", partitionMetadata, message: { value: "v" } })));
  assert.equal([...seen].sort(), [0, 1, 2]);
});

test.run();
