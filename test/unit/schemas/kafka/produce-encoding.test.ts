/**
 * The one-buffer Produce request and framing (schemas/kafka/produce-encoding.ts) give kafkajs's
 * bytes. kafkajs's own encoders run in a child node that never loads the stand-ins (here, the
 * module cache holds them), on the same inputs and the same clock; the framed requests must be
 * equal byte for byte. Inputs cover what the producer can be given: string, Buffer and null keys
 * and values, multi-byte text, header values that are strings, Buffers and arrays, timestamps
 * (sorted as kafkajs sorts them, by their text), deltas past 32 bits, lengths whose varints take
 * 1-4 bytes, several topics and partitions, transactional ids and producer ids. What the stand-in
 * does not take (compression, values of other types) is left to kafkajs's encoder.
 */
import { execFileSync } from "node:child_process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  encodeProduce,
  frameRequest,
  produceRequest,
  type ProduceArgs,
  type ProduceMessage,
} from "../../../../schemas/kafka/produce-encoding";
import { crc32c, crc32cReady } from "../../../../schemas/kafka/stand-ins";

const NOW = 1_795_900_000_000;

/** JSON that keeps Buffers (as {"$b": base64}). */
const pack = (v: unknown) =>
  JSON.stringify(v, function (this: Record<string, unknown>, k) {
    const raw = this[k];
    return Buffer.isBuffer(raw) ? { $b: raw.toString("base64") } : raw;
  });

/** kafkajs's framed Produce requests (hex) for each case, computed in a node without the stand-ins. */
function kafkajsBytes(cases: { version: number; args: ProduceArgs }[]): string[] {
  const script = `
    Date.now = () => ${NOW};
    const createRequest = require("kafkajs/src/protocol/request.js");
    const cases = JSON.parse(require("fs").readFileSync(0, "utf8"), (k, v) => (v && v.$b !== undefined ? Buffer.from(v.$b, "base64") : v));
    (async () => {
      const out = [];
      for (const { version, args } of cases) {
        const factory = require("kafkajs/src/protocol/requests/produce/v" + version + "/request.js");
        out.push((await createRequest({ correlationId: 7, clientId: "segment-ingest", request: factory(args) })).buffer.toString("hex"));
      }
      process.stdout.write(JSON.stringify(out));
    })();`;
  return JSON.parse(
    execFileSync(process.execPath, ["-e", script], { input: pack(cases), encoding: "utf8", timeout: 30_000, maxBuffer: 64 << 20 }),
  ) as string[];
}

/** Ours for the same cases, with the same clock. */
async function ourBytes(cases: { version: number; args: ProduceArgs }[]): Promise<string[]> {
  const realNow = Date.now;
  Date.now = () => NOW;
  try {
    const out: string[] = [];
    for (const { version, args } of cases) {
      const request = { ...produceRequest(() => assert.unreachable("left to kafkajs") as never, crc32c)(args), apiVersion: version };
      out.push((await frameRequest({ correlationId: 7, clientId: "segment-ingest", request })).buffer.toString("hex"));
    }
    return out;
  } finally {
    Date.now = realNow;
  }
}

const value953 = Buffer.from(JSON.stringify({ type: "track", event: "Order Completed", properties: { total: 42.5 } }).padEnd(953, " "));
const records = (n: number, make: (i: number) => ProduceMessage): ProduceMessage[] => Array.from({ length: n }, (_, i) => make(i));
const args = (topicData: ProduceArgs["topicData"], extra: Partial<ProduceArgs> = {}): ProduceArgs => ({
  acks: -1,
  timeout: 30_000,
  topicData,
  ...extra,
});

const CASES: { name: string; version: number; args: ProduceArgs }[] = [
  {
    name: "the ingest's shape: 100 records, messageId keys, 953-byte Buffer values",
    version: 7,
    args: args([
      { topic: "events", partitions: [{ partition: 2, messages: records(100, (i) => ({ key: `0f8c-${i}`, value: value953 })) }] },
    ]),
  },
  {
    name: "strings, Buffers and nulls, multi-byte text, empty values",
    version: 3,
    args: args([
      {
        topic: "événements",
        partitions: [
          {
            partition: 0,
            messages: [
              { key: null, value: "é€😀" },
              { key: Buffer.from([0, 255, 7]), value: null },
              { value: "" },
              { key: "", value: Buffer.alloc(0) },
            ],
          },
        ],
      },
    ]),
  },
  {
    name: "headers: strings, Buffers, arrays, an empty object",
    version: 5,
    args: args([
      {
        topic: "t",
        partitions: [
          {
            partition: 1,
            messages: [
              { key: "a", value: "1", headers: { workspaceId: "ws-1", raw: Buffer.from("bytes"), many: ["x", Buffer.from("y"), "ζ"] } },
              { key: "b", value: "2", headers: {} },
              { key: "c", value: "3", headers: { empty: [] } },
            ],
          },
        ],
      },
    ]),
  },
  {
    name: "timestamps: kafkajs's text sort, a delta past 32 bits, a negative delta, some unset",
    version: 4,
    args: args([
      {
        topic: "t",
        partitions: [
          {
            partition: 0,
            messages: [
              { key: "a", value: "1", timestamp: NOW - 5_000 },
              { key: "b", value: "2", timestamp: 999 },
              { key: "c", value: "3" },
              { key: "d", value: "4", timestamp: NOW + 2 ** 33 },
              { key: "e", value: "5", timestamp: 100_000 },
            ],
          },
        ],
      },
    ]),
  },
  {
    name: "lengths whose varints take 1 to 4 bytes",
    version: 6,
    args: args([
      {
        topic: "t",
        partitions: [
          {
            partition: 0,
            messages: [127, 128, 16_383, 16_384, 2_097_152].map((n, i) => ({ key: `k${i}`, value: Buffer.alloc(n, 97 + i) })),
          },
        ],
      },
    ]),
  },
  {
    name: "several topics and partitions, transactional, a producer id, epoch and first sequences, acks 1",
    version: 7,
    args: args(
      [
        {
          topic: "a",
          partitions: [
            { partition: 0, firstSequence: 41, messages: records(3, (i) => ({ key: `a${i}`, value: `v${i}` })) },
            { partition: 5, messages: records(130, (i) => ({ key: `b${i}`, value: value953.subarray(0, 200 + i) })) },
          ],
        },
        {
          topic: "b",
          partitions: [{ partition: 3, firstSequence: 2 ** 31 - 1, messages: records(2, (i) => ({ key: `c${i}`, value: "x" })) }],
        },
      ],
      { acks: 1, transactionalId: "tx-1", producerId: 123_456_789_012, producerEpoch: 3 },
    ),
  },
];

const test = suite("one-buffer produce requests");

test("each case's framed request is kafkajs's, byte for byte", async () => {
  await crc32cReady;
  const theirs = kafkajsBytes(CASES);
  const ours = await ourBytes(CASES);
  CASES.forEach((c, i) => assert.is(ours[i], theirs[i], c.name));
});

test("the body is written into a buffer of exactly its size, and the frame copies it once", async () => {
  const c = CASES[0]!.args;
  const body = encodeProduce(c, crc32c);
  assert.is(body.offset, body.buf.length);
  const framed = await frameRequest({ correlationId: 1, clientId: null, request: { apiKey: 0, apiVersion: 3, encode: () => body } });
  assert.is(framed.buf.length, 4 + 2 + 2 + 4 + 2 + body.size());
  assert.is(framed.buffer.readInt32BE(0), framed.buf.length - 4);
  assert.is(framed.buffer.readInt16BE(12), -1, "a null client id is written as length -1");
  assert.ok(framed.buffer.subarray(14).equals(body.buffer));
});

test("what it does not take is left to kafkajs's encoder: compression, values of other types, a null headers object", () => {
  const left: ProduceArgs[] = [];
  const kafkajs = (a: ProduceArgs) => {
    left.push(a);
    return { apiKey: 0, apiVersion: 3, apiName: "Produce", expectResponse: () => true, encode: () => assert.unreachable() as never };
  };
  const factory = produceRequest(kafkajs, crc32c);
  const plain = { key: "k", value: "v" };
  const given: ProduceArgs[] = [
    args([{ topic: "t", partitions: [{ partition: 0, messages: [plain] }] }], { compression: 1 }),
    args([{ topic: "t", partitions: [{ partition: 0, messages: [{ key: "k", value: 42 as unknown as string }] }] }]),
    args([{ topic: "t", partitions: [{ partition: 0, messages: [{ ...plain, headers: null as unknown as undefined }] }] }]),
    args([{ topic: "t", partitions: [{ partition: 0, messages: [{ ...plain, headers: { h: null as unknown as string } }] }] }]),
    args([{ topic: "t", partitions: [{ partition: 0, messages: [{ ...plain, timestamp: "1795900000000" as unknown as number }] }] }]),
  ];
  for (const a of given) factory(a);
  assert.is(left.length, given.length);
  assert.is(factory(args([{ topic: "t", partitions: [{ partition: 0, messages: [plain] }] }])).apiName, "Produce");
  assert.is(left.length, given.length, "a plain request is ours");
});

test("acks 0 expects no response, as kafkajs's request says", () => {
  const factory = produceRequest(() => assert.unreachable() as never, crc32c);
  assert.is(factory(args([], { acks: 0 })).expectResponse(), false);
  assert.is(factory(args([], { acks: -1 })).expectResponse(), true);
});

test.run();
