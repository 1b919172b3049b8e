import { test } from "uvu";
import * as assert from "uvu/assert";
import { Accumulator, ProduceTimeoutError } from "../../../ingest/producer";
import type { EventRecord } from "../../../schemas/envelope";

const records = (prefix: string, n: number): EventRecord[] => Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, value: "{}" }));

test("records of concurrent requests go out in one send after the linger", async () => {
  const sends: string[][] = [];
  const acc = new Accumulator(async (r) => void sends.push(r.map((x) => x.key)), { lingerMs: 20, maxBatch: 100, timeoutMs: 1000 });
  await Promise.all([acc.produce(records("a", 2)), acc.produce(records("b", 3))]);
  assert.equal(sends, [["a0", "a1", "b0", "b1", "b2"]]);
});

test("reaching maxBatch sends at once, keeping each request whole", async () => {
  const sends: number[] = [];
  const acc = new Accumulator(async (r) => void sends.push(r.length), { lingerMs: 10_000, maxBatch: 4, timeoutMs: 1000 });
  await Promise.all([acc.produce(records("a", 3)), acc.produce(records("b", 3))]);
  assert.equal(sends, [6]);
});

test("a failed send rejects every request in it", async () => {
  const acc = new Accumulator(async () => Promise.reject(Object.assign(new Error("down"), { name: "KafkaJSConnectionError" })), {
    lingerMs: 1,
    maxBatch: 100,
    timeoutMs: 1000,
  });
  const results = await Promise.allSettled([acc.produce(records("a", 1)), acc.produce(records("b", 1))]);
  assert.equal(
    results.map((r) => r.status),
    ["rejected", "rejected"],
  );
  assert.is((results[0] as PromiseRejectedResult).reason.name, "KafkaJSConnectionError");
});

test("a send slower than the deadline rejects with ProduceTimeoutError", async () => {
  const acc = new Accumulator(() => new Promise<void>((resolve) => setTimeout(resolve, 200)), {
    lingerMs: 1,
    maxBatch: 100,
    timeoutMs: 30,
  });
  const error = await acc.produce(records("a", 1)).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(error, ProduceTimeoutError);
  await acc.drain();
});

test("drain sends what is pending and waits for it", async () => {
  let acked = 0;
  const acc = new Accumulator(async (r) => void (acked += r.length), { lingerMs: 10_000, maxBatch: 100, timeoutMs: 1000 });
  const pending = acc.produce(records("a", 2));
  await acc.drain();
  assert.is(acked, 2);
  await pending;
});

test("sends stay under maxBytes; a request spanning two sends is acked only when both are", async () => {
  const sent: string[][] = [];
  const release: (() => void)[] = [];
  const fail: ((e: Error) => void)[] = [];
  const acc = new Accumulator(
    (r) =>
      new Promise<void>((resolve, reject) => {
        sent.push(r.map((x) => x.key));
        release.push(resolve);
        fail.push(reject);
      }),
    { lingerMs: 5, maxBatch: 1_000, maxBytes: 1_024 + 3 * 200, timeoutMs: 1_000 },
  );
  const big = (prefix: string, n: number): EventRecord[] =>
    Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, value: "x".repeat(160) }));
  const a = acc.produce(big("a", 2));
  const b = acc.produce(big("b", 3));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(
    sent,
    [
      ["a0", "a1", "b0"],
      ["b1", "b2"],
    ],
    "cut at 3 records of ~200 bytes",
  );
  let aDone = false;
  void a.then(() => (aDone = true));
  release[0]!();
  await a;
  assert.ok(aDone, "a's records were all in the first send");
  fail[1]!(new Error("MESSAGE_TOO_LARGE"));
  const error = await b.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.is(error?.message, "MESSAGE_TOO_LARGE", "b had a record in the failed send");
});

test.run();
