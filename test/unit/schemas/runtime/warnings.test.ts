/**
 * Node's process warnings as log lines (schemas/runtime/warnings.ts): a service's output stays one
 * JSON object a line when Node warns (Node 24 warns of kafkajs's negative timer in every service).
 */
import { spawnSync } from "node:child_process";
import { test } from "uvu";
import * as assert from "uvu/assert";

test("a process warning is a warn-level JSON line of the service's log, nothing on stderr", () => {
  const script = `const log = require("pino")({ name: "t" });
require(${JSON.stringify(require.resolve("../../../../schemas/runtime/warnings"))}).logProcessWarnings(log);
process.emitWarning("a test warning", { type: "TestWarning", code: "T1" });
setTimeout(() => log.info("after"), 50);`;
  const child = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 });
  assert.is(child.status, 0, child.stderr);
  assert.is(child.stderr, "");
  const lines = child.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(
    lines.map((l) => [l.level, l.msg, l.warning]),
    [
      [40, "node process warning", { name: "TestWarning", code: "T1", message: "a test warning" }],
      [30, "after", undefined],
    ],
  );
});

/** The log lines (level, message, warning name) of a node that sets `timer` ms of delay, at pino's `level`. */
function timerLines(timer: string, level: string): [number, string, string][] {
  const script = `const log = require("pino")({ name: "t", level: "${level}" });
require(${JSON.stringify(require.resolve("../../../../schemas/runtime/warnings"))}).logProcessWarnings(log);
setTimeout(() => {}, ${timer});`;
  const child = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 });
  assert.is(child.stderr, "");
  return child.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: number; msg: string; warning: { name: string } })
    .map((l) => [l.level, l.msg, l.warning.name]);
}

test("kafkajs's negative idle timer (Node 23 and later warn of it) is a debug line; another negative timer a warning", () => {
  const major = Number(process.versions.node.split(".")[0]);
  const kafkajs = "node process warning: kafkajs's idle request-queue timer (kafkajs#1751), harmless";
  assert.equal(timerLines("-1 - Date.now()", "info"), [], "nothing at info");
  assert.equal(timerLines("-1 - Date.now()", "debug"), major >= 23 ? [[20, kafkajs, "TimeoutNegativeWarning"]] : []);
  assert.equal(timerLines("-5", "info"), major >= 23 ? [[40, "node process warning", "TimeoutNegativeWarning"]] : []);
});

test.run();
