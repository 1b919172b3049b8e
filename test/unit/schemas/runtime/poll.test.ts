/** The one poll-until (schemas/runtime/poll.ts): the first answer, undefined at the deadline, errors thrown. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { pollUntil } from "../../../../schemas/runtime/poll";

test("pollUntil resolves with the probe's first answer", async () => {
  let calls = 0;
  const answer = await pollUntil(async () => (++calls === 3 ? "ready" : undefined), { intervalMs: 1, timeoutMs: 1_000 });
  assert.is(answer, "ready");
  assert.is(calls, 3);
});

test("pollUntil resolves with undefined once the time is up, having asked at least twice", async () => {
  let calls = 0;
  const answer = await pollUntil(
    async () => {
      calls++;
      return undefined;
    },
    { intervalMs: 10, timeoutMs: 35 },
  );
  assert.is(answer, undefined);
  assert.ok(calls >= 2 && calls <= 6, `asked ${calls} times`);
});

test("pollUntil throws what the probe throws, at once", async () => {
  let calls = 0;
  const error = await pollUntil(
    async () => {
      calls++;
      throw new Error("unreachable");
    },
    { intervalMs: 1, timeoutMs: 1_000 },
  ).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.is(error?.message, "unreachable");
  assert.is(calls, 1);
});

test.run();
