import { test } from "uvu";
import * as assert from "uvu/assert";
import type { BatchItem } from "../sink/batch";
import { insertOrSplit, isDataError, retry } from "../sink/writer";
import type { EventRow } from "../schemas/row";

const items = (ids: string[]): BatchItem[] =>
  ids.map((id, i) => ({ row: { message_id: id } as EventRow, partition: 0, offset: String(i), key: Buffer.from(id), value: Buffer.from(`v-${id}`) }));

test("ClickHouse data errors are not retriable, in the current and the 18.16 message forms", () => {
  assert.ok(isDataError(Object.assign(new Error("Cannot parse input"), { code: "27" })));
  assert.ok(isDataError(new Error("Code: 41, e.displayText() = DB::Exception: Cannot parse datetime")));
  assert.not.ok(isDataError(new Error("connect ECONNREFUSED 127.0.0.1:8123")));
  assert.not.ok(isDataError(Object.assign(new Error("Memory limit exceeded"), { code: "241" })));
});

test("refused rows are isolated and dead-lettered; the rest are inserted", async () => {
  const inserted: string[] = [];
  const insert = async (rows: EventRow[]) => {
    if (rows.some((r) => r.message_id.startsWith("bad"))) throw new Error("Code: 27, e.displayText() = DB::Exception: Cannot parse input");
    inserted.push(...rows.map((r) => r.message_id));
  };
  const letters = await insertOrSplit(insert, items(["a", "bad1", "b", "c", "bad2", "d", "e"]));
  assert.equal(inserted.sort(), ["a", "b", "c", "d", "e"]);
  assert.equal(letters.map((l) => l.key?.toString()), ["bad1", "bad2"]);
  assert.equal(letters.map((l) => l.value?.toString()), ["v-bad1", "v-bad2"]);
  assert.ok(letters.every((l) => l.step === "insert" && l.reason.includes("Cannot parse")));
});

test("a retriable insert error is thrown, not dead-lettered", async () => {
  const insert = async () => {
    throw new Error("connect ECONNREFUSED");
  };
  const error = await insertOrSplit(insert, items(["a"])).then(() => undefined, (e: unknown) => e);
  assert.instance(error, Error);
});

test("retry backs off until success and reports each failure", async () => {
  let calls = 0;
  const waits: number[] = [];
  const value = await retry(
    async () => {
      if (++calls < 4) throw new Error("down");
      return "ok";
    },
    { minMs: 1, maxMs: 4, signal: new AbortController().signal, onRetry: (_e, _a, waitMs) => void waits.push(waitMs) },
  );
  assert.is(value, "ok");
  assert.equal(waits, [1, 2, 4]);
});

test("retry gives up with the last error once aborted", async () => {
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 20);
  const error = await retry(() => Promise.reject(new Error("still down")), { minMs: 5, maxMs: 5, signal: abort.signal, onRetry: () => {} }).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.is(error?.message, "still down");
});

test.run();
