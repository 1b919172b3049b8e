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

test("a negative timer's warning (Node 23 and later, as kafkajs sets one) is logged the same way", () => {
  const script = `const log = require("pino")({ name: "t" });
require(${JSON.stringify(require.resolve("../../../../schemas/runtime/warnings"))}).logProcessWarnings(log);
setTimeout(() => {}, -1 - Date.now());`;
  const child = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 10_000 });
  assert.is(child.stderr, "");
  const major = Number(process.versions.node.split(".")[0]);
  const warnings = child.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { warning: { name: string } }).warning.name);
  assert.equal(warnings, major >= 23 ? ["TimeoutNegativeWarning"] : []);
});

test.run();
