/**
 * kafkajs's stand-ins (schemas/kafka/stand-ins.ts): the CRC-32C hash-wasm computes is kafkajs's,
 * on every length and on views into a larger buffer; the linear grouping is kafkajs's; kafkajs
 * uses both; and each entry point installs them before anything loads kafkajs.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import "../../../../schemas/kafka/client";
import { KAFKAJS_FILES, crc32c, groupByPartition, standInState } from "../../../../schemas/kafka/stand-ins";

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's own files, outside its public API */
const kafkajsLoop = require(KAFKAJS_FILES.crc32cLoop) as (buffer: Buffer) => number;
const recordBatch = (): { RecordBatch: (batch: { records: unknown[] }) => Promise<{ buffer: Buffer }> } =>
  require("kafkajs/src/protocol/recordBatch/v0/index.js");
const record = (): ((record: { offsetDelta: number; key: string; value: string }) => unknown) =>
  require("kafkajs/src/protocol/recordBatch/record/v0/index.js");
/* eslint-enable @typescript-eslint/no-require-imports */

/** kafkajs's own grouping, read from its file (the module cache holds the stand-in). */
function kafkajsGrouping(): typeof groupByPartition {
  const path = require.resolve(KAFKAJS_FILES.grouping);
  const module = { exports: undefined as unknown };
  // kafkajs's file, evaluated apart from the module cache (it requires nothing).
  new Function("module", readFileSync(path, "utf8"))(module);
  return module.exports as typeof groupByPartition;
}

const test = suite("kafkajs stand-ins");

/** Waits (at most 2 s) for the WebAssembly module to be ready. */
async function ready(): Promise<void> {
  for (let i = 0; i < 200 && standInState().crc32c === "pending"; i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

test("the WebAssembly CRC-32C is ready, and gives the check value of RFC 3720", async () => {
  await ready();
  assert.equal(standInState(), { crc32c: "wasm", grouping: "linear" });
  assert.is(crc32c(Buffer.from("123456789")), 0xe3069283);
});

test("it equals kafkajs's own loop on every length tried, and on views into a larger buffer", async () => {
  await ready();
  const pool = randomBytes(100_000);
  for (const length of [0, 1, 3, 7, 8, 63, 511, 512, 513, 4_096, 90_000]) {
    const whole = pool.subarray(0, length);
    assert.is(crc32c(whole), kafkajsLoop(whole), `length ${length}`);
    const view = pool.subarray(17, 17 + length);
    assert.is(crc32c(view), kafkajsLoop(view), `view of length ${length} at 17`);
  }
});

test("kafkajs's record batch carries it: the CRC field is the CRC-32C of the bytes after it", async () => {
  await ready();
  assert.is(require.cache[require.resolve(KAFKAJS_FILES.crc32c)]?.exports, crc32c, "the module kafkajs requires is ours");
  const records = Array.from({ length: 20 }, (_, i) => record()({ offsetDelta: i, key: `k${i}`, value: "é".repeat(300 + i) }));
  const { buffer } = await recordBatch().RecordBatch({ records });
  // firstOffset (8), length (4), partitionLeaderEpoch (4), magic (1), then the CRC (4) of the rest.
  assert.is(buffer.readInt8(16), 2, "magic 2");
  assert.is(buffer.readUInt32BE(17), kafkajsLoop(buffer.subarray(21)));
});

test("the grouping gives kafkajs's answer: the same partitions, the same records in the same order", () => {
  assert.is(require.cache[require.resolve(KAFKAJS_FILES.grouping)]?.exports, groupByPartition, "the module kafkajs requires is ours");
  const theirs = kafkajsGrouping();
  const messages = Array.from({ length: 1_000 }, (_, i) => ({ key: `k${(i * 7919) % 613}`, value: String(i) }));
  const partitioner = ({ message }: { message: { key: string } }) => Number(message.key.slice(1)) % 6;
  const args = { topic: "t", partitionMetadata: [{}, {}, {}, {}, {}, {}], messages, partitioner };
  assert.equal(groupByPartition(args), theirs(args));
  assert.equal(Object.keys(groupByPartition(args)), ["0", "1", "2", "3", "4", "5"]);
  assert.equal(groupByPartition({ ...args, partitionMetadata: [] }), theirs({ ...args, partitionMetadata: [] }), "no metadata: empty");
});

test("each entry point installs them before anything it imports loads kafkajs", () => {
  const dist = join(__dirname, "../../../..");
  for (const entry of ["ingest/main.js", "sink/main.js", "deploy/cli.js"]) {
    const script = `require(${JSON.stringify(join(dist, entry))}); process.stdout.write(JSON.stringify(require(${JSON.stringify(join(dist, "schemas/kafka/stand-ins.js"))}).standInState().grouping))`;
    assert.is(execFileSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 20_000 }), '"linear"', entry);
  }
});

test.run();
