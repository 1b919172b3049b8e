/** The one retrier (schemas/runtime/retry.ts): backoff, giving up on abort, final errors and the deadline. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { backoffMs, retry, sleep } from "../../../../schemas/runtime/retry";

const failure = <T>(promise: Promise<T>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e as Error,
  );

test("backoffMs: the minimum first, doubling, capped at the maximum", () => {
  const backoff = { minMs: 500, maxMs: 5_000 };
  assert.equal(
    [1, 2, 3, 4, 5, 6, 100].map((a) => backoffMs(a, backoff)),
    [500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000],
  );
  assert.is(backoffMs(0, backoff), 500, "an attempt below 1 waits the minimum");
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
  const error = await failure(retry(() => Promise.reject(new Error("still down")), { minMs: 5, maxMs: 5, signal: abort.signal }));
  assert.is(error?.message, "still down");
});

test("retry throws at once an error `retriable` calls final, and retries the others", async () => {
  let calls = 0;
  const final = Object.assign(new Error("refused"), { final: true });
  const error = await failure(
    retry(
      async () => {
        calls++;
        throw calls < 3 ? new Error("again") : final;
      },
      { minMs: 1, maxMs: 1, retriable: (e) => !(e as { final?: boolean }).final },
    ),
  );
  assert.is(error, final);
  assert.is(calls, 3);
});

test("retry throws the last error when the next wait would end past the deadline", async () => {
  let calls = 0;
  const started = Date.now();
  const error = await failure(
    retry(
      async () => {
        calls++;
        throw new Error(`attempt ${calls}`);
      },
      { minMs: 10, maxMs: 40, deadlineMs: 100 },
    ),
  );
  // waits 10, 20, 40 fit in 100 ms; the next (40) would not
  assert.ok(calls >= 3 && calls <= 4, `attempts: ${calls}`);
  assert.is(error?.message, `attempt ${calls}`);
  assert.ok(Date.now() - started < 100, "no wait past the deadline");
});

test("sleep ends at once when its signal aborts", async () => {
  const abort = new AbortController();
  const started = Date.now();
  setTimeout(() => abort.abort(), 5);
  await sleep(10_000, abort.signal);
  assert.ok(Date.now() - started < 1_000);
});

test.run();
