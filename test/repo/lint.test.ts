/**
 * The house style as tests: prettier (layout) and typescript-eslint (recommended rules) over the
 * source tree, shellcheck over every shell script (.shellcheckrc), and at most 300 lines a source
 * file, so `npm test` and CI fail on an unformatted file, a lint error or a file grown past one
 * idea. `npm run format` fixes the layout.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ROOT } from "../support/paths";

const root = ROOT;

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

test("shellcheck: every shell script passes, sourced files followed", () => {
  const scripts = execFileSync("git", ["ls-files", "*.sh", ".ci/run"], { cwd: root, encoding: "utf8" }).split("\n").filter(Boolean);
  assert.ok(scripts.length >= 10, `scripts found: ${scripts.length}`);
  const result = spawnSync(process.env.SHELLCHECK ?? "shellcheck", ["-x", ...scripts], { cwd: root, encoding: "utf8" });
  assert.is(result.error, undefined, "shellcheck is installed (test/support/tools.sh installs it)");
  assert.is(result.status, 0, `${result.stdout}${result.stderr}`);
});

test("no source file of ingest/, sink/, schemas/ or deploy/ is over 300 lines", () => {
  const files = execFileSync("git", ["ls-files", "ingest", "sink", "schemas", "deploy"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter((f) => /\.(ts|sh)$/.test(f));
  const long = files
    .map((file) => ({ file, lines: readFileSync(join(root, file), "utf8").split("\n").length - 1 }))
    .filter((f) => f.lines > 300)
    .map((f) => `${f.file}: ${f.lines} lines`);
  assert.equal(long, [], long.join("\n"));
});

test.run();
