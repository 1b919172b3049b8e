import { test } from "uvu";
import * as assert from "uvu/assert";
import { Accumulator, ProduceTimeoutError } from "../ingest/producer";
import type { EventRecord } from "../schemas/envelope";

const records = (prefix: string, n: number): EventRecord[] =>
  Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, value: "{}" }));

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
  assert.equal(results.map((r) => r.status), ["rejected", "rejected"]);
  assert.is((results[0] as PromiseRejectedResult).reason.name, "KafkaJSConnectionError");
});

test("a send slower than the deadline rejects with ProduceTimeoutError", async () => {
  const acc = new Accumulator(() => new Promise<void>((resolve) => setTimeout(resolve, 200)), { lingerMs: 1, maxBatch: 100, timeoutMs: 30 });
  const error = await acc.produce(records("a", 1)).then(() => undefined, (e: unknown) => e);
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

test.run();
