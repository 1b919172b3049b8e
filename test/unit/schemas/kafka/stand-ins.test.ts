/**
 * kafkajs's stand-ins (schemas/kafka/stand-ins.ts): the CRC-32C hash-wasm computes is kafkajs's,
 * on every length and on views into a larger buffer; the linear grouping is kafkajs's; and in a
 * fresh process, each entry point installs all four (with the one-buffer Produce request and
 * framing of produce-encoding.ts) before anything it imports loads kafkajs, and kafkajs's record
 * batch then carries our checksum. (Here, in one process with every unit test,
 * another test file may have loaded kafkajs first: what is installed is checked in children.)
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KAFKAJS_FILES, crc32c, crc32cReady, groupByPartition } from "../../../../schemas/kafka/stand-ins";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own loop, outside its public API
const kafkajsLoop = require(KAFKAJS_FILES.crc32cLoop) as (buffer: Buffer) => number;

/** kafkajs's own grouping, read from its file (the module cache may hold the stand-in). */
function kafkajsGrouping(): typeof groupByPartition {
  const module = { exports: undefined as unknown };
  // kafkajs's file, evaluated apart from the module cache (it requires nothing).
  new Function("module", readFileSync(require.resolve(KAFKAJS_FILES.grouping), "utf8"))(module);
  return module.exports as typeof groupByPartition;
}

const test = suite("kafkajs stand-ins");

test("the WebAssembly CRC-32C loads, and gives the check value of RFC 3720", async () => {
  assert.is(await crc32cReady, true);
  assert.is(crc32c(Buffer.from("123456789")), 0xe3069283);
});

test("it equals kafkajs's own loop on every length tried, and on views into a larger buffer", async () => {
  await crc32cReady;
  const pool = randomBytes(100_000);
  for (const length of [0, 1, 3, 7, 8, 63, 511, 512, 513, 4_096, 90_000]) {
    const whole = pool.subarray(0, length);
    assert.is(crc32c(whole), kafkajsLoop(whole), `length ${length}`);
    const view = pool.subarray(17, 17 + length);
    assert.is(crc32c(view), kafkajsLoop(view), `view of length ${length} at 17`);
  }
});

test("the grouping gives kafkajs's answer: the same partitions, the same records in the same order", () => {
  const theirs = kafkajsGrouping();
  const messages = Array.from({ length: 1_000 }, (_, i) => ({ key: `k${(i * 7919) % 613}`, value: String(i) }));
  const partitioner = ({ message }: { message: { key: string } }) => Number(message.key.slice(1)) % 6;
  const args = { topic: "t", partitionMetadata: [{}, {}, {}, {}, {}, {}], messages, partitioner };
  assert.equal(groupByPartition(args), theirs(args));
  assert.equal(Object.keys(groupByPartition(args)), ["0", "1", "2", "3", "4", "5"]);
  assert.equal(groupByPartition({ ...args, partitionMetadata: [] }), theirs({ ...args, partitionMetadata: [] }), "no metadata: empty");
});

/**
 * Loads `entry` (a path under dist/) in a fresh node, then reports what is installed: the state
 * once the WebAssembly module is ready, whether kafkajs's modules are ours, and whether a
 * RecordBatch that kafkajs encodes carries the CRC-32C of the bytes after its CRC field.
 */
function installedBy(entry: string): { state: unknown; ours: boolean[]; crcOk: boolean } {
  const dist = join(__dirname, "../../../..");
  const script = `
    require(${JSON.stringify(join(dist, entry))});
    const s = require(${JSON.stringify(join(dist, "schemas/kafka/stand-ins.js"))});
    const ours = [[s.KAFKAJS_FILES.crc32c, s.crc32c], [s.KAFKAJS_FILES.grouping, s.groupByPartition]]
      .map(([file, fn]) => require.cache[require.resolve(file)]?.exports === fn);
    const encoding = require(${JSON.stringify(join(dist, "schemas/kafka/produce-encoding.js"))});
    ours.push(require(s.KAFKAJS_FILES.framing) === encoding.frameRequest);
    ours.push(require(s.KAFKAJS_FILES.produceRequest) === s.produceStandIn);
    const record = require("kafkajs/src/protocol/recordBatch/record/v0/index.js");
    const { RecordBatch } = require(s.KAFKAJS_FILES.recordBatch);
    const loop = require(s.KAFKAJS_FILES.crc32cLoop);
    s.crc32cReady.then(async () => {
      const records = Array.from({ length: 20 }, (_, i) => record({ offsetDelta: i, key: "k" + i, value: "é".repeat(300 + i) }));
      const { buffer } = await RecordBatch({ records });
      // firstOffset (8), length (4), partitionLeaderEpoch (4), magic (1), then the CRC (4) of the rest.
      const crcOk = buffer.readInt8(16) === 2 && buffer.readUInt32BE(17) === loop(buffer.subarray(21));
      process.stdout.write(JSON.stringify({ state: s.standInState(), ours, crcOk }));
    });`;
  return JSON.parse(execFileSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 20_000 })) as ReturnType<
    typeof installedBy
  >;
}

test("each entry point installs all four before anything it imports loads kafkajs; kafkajs's record batch carries our CRC", () => {
  for (const entry of ["ingest/main.js", "sink/main.js", "deploy/cli.js", "schemas/kafka/client.js"])
    assert.equal(
      installedBy(entry),
      {
        state: { crc32c: "wasm", grouping: "linear", produce: "one-buffer", framing: "one-copy" },
        ours: [true, true, true, true],
        crcOk: true,
      },
      entry,
    );
});

test("loaded after kafkajs, the grouping and the framing stay kafkajs's (loaded with it) and say so; the CRC and the Produce request, loaded at the first produce, are still ours", () => {
  const found = installedBy("../node_modules/kafkajs/index.js");
  assert.equal(found.ours, [true, false, false, true]);
  assert.equal(found.state, { crc32c: "wasm", grouping: "kafkajs", produce: "one-buffer", framing: "kafkajs" });
  assert.ok(found.crcOk);
});

test.run();
