/** The one deadline (schemas/runtime/deadline.ts): the work's own result in time, the caller's error past it. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { withDeadline } from "../../../../schemas/runtime/deadline";

const late = () => new Error("late");
const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error: error as Error }),
  );

test("withDeadline passes on the work's value or error when it settles in time", async () => {
  assert.equal(await settle(withDeadline(Promise.resolve(7), 50, late)), { value: 7 });
  const refused = new Error("refused");
  assert.equal(await settle(withDeadline(Promise.reject(refused), 50, late)), { error: refused });
});

test("withDeadline rejects with the caller's error when the work is slower", async () => {
  const slow = new Promise((resolve) => setTimeout(() => resolve("too late"), 200));
  const result = await settle(withDeadline(slow, 10, late));
  assert.is((result as { error: Error }).error.message, "late");
});

test.run();
