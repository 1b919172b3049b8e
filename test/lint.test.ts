/**
 * The house style as tests: prettier (layout) and typescript-eslint (recommended rules) over the
 * source tree, so `npm test` and CI fail on an unformatted file or a lint error. `npm run format`
 * fixes the layout.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";

const root = join(__dirname, "..", "..");

/** Runs a tool's bin from node_modules at the project root; returns its exit code and output. */
function run(bin: string, args: string[]): { code: number | null; output: string } {
  const result = spawnSync(process.execPath, [join(root, "node_modules", bin), ...args], { cwd: root, encoding: "utf8", timeout: 240_000 });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

test("prettier: every source file is formatted (npm run format fixes it)", () => {
  const { code, output } = run("prettier/bin/prettier.cjs", ["--check", "."]);
  assert.is(code, 0, output);
});

test("typescript-eslint: no lint error, and every disabled rule says why", () => {
  const { code, output } = run("eslint/bin/eslint.js", [".", "--max-warnings", "0"]);
  assert.is(code, 0, output);
  const unexplained = spawnSync(
    "grep",
    ["-rnE", "eslint-disable(-next-line)? [^ ]+$", "ingest", "sink", "schemas", "test", "deploy", "--include=*.ts"],
    {
      cwd: root,
      encoding: "utf8",
    },
  ).stdout;
  assert.is(unexplained, "", `disabled without a reason after --:\n${unexplained}`);
});

test.run();
