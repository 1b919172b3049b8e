/**
 * The deadlines (schemas/runtime/deadline.ts): the work's own result in time, the caller's error
 * past it; a stop's wait that gives up; the process's last bound on its stop.
 */
import { spawnSync } from "node:child_process";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { settledWithin, withDeadline } from "../../../../schemas/runtime/deadline";

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

test("settledWithin is true when the work resolves or rejects in time, false when it does not", async () => {
  assert.is(await settledWithin(Promise.resolve("done"), 50), true);
  assert.is(await settledWithin(Promise.reject(new Error("refused")), 50), true);
  const never = new Promise(() => {});
  const started = Date.now();
  assert.is(await settledWithin(never, 30), false);
  assert.ok(Date.now() - started >= 25, "it waited for its bound");
});

/** Runs `code` in a new node process with exitAfter in scope; its exit code and output. */
function runWithExitAfter(code: string): { status: number | null; stdout: string } {
  const script = `const { exitAfter } = require(${JSON.stringify(require.resolve("../../../../schemas/runtime/deadline"))});
const log = { fatal: (obj, msg) => console.log(JSON.stringify({ ...obj, msg })) };
${code}`;
  const child = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 });
  return { status: child.status, stdout: child.stdout };
}

test("exitAfter ends a process whose stop still runs at the bound with code 1, and says so", () => {
  const { status, stdout } = runWithExitAfter("exitAfter(100, log); setInterval(() => {}, 1000);");
  assert.is(status, 1);
  assert.equal(JSON.parse(stdout), { boundMs: 100, msg: "the stop did not finish within its bound: exiting" });
});

test("exitAfter does not keep a process alive that ends before the bound", () => {
  const started = Date.now();
  const { status, stdout } = runWithExitAfter("exitAfter(5000, log); setTimeout(() => {}, 50);");
  assert.is(status, 0);
  assert.is(stdout, "");
  assert.ok(Date.now() - started < 4_000, "the process ended before the bound");
});

test.run();
