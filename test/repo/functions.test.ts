/**
 * Function sizes: every function of ingest/, sink/, schemas/ and deploy/ (declarations, methods,
 * arrow functions and function expressions, read with the TypeScript compiler's parser), its
 * lines from its first to its last, nested functions included. None may pass 80 lines: a longer
 * one is cut into named steps (issue 48 did so for the four wiring functions of the services and
 * three others). The test prints the largest, so a reviewer sees where the size is.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import ts from "typescript";
import { ROOT } from "../support/paths";

/** The longest a function may be, in lines. */
const MAX_LINES = 80;

/** A function of the source: where it starts, what it is called, how many lines it spans. */
interface Sized {
  file: string;
  line: number;
  name: string;
  lines: number;
}

/** The name a function goes by: its own, or the variable, property or export it is assigned to. */
function nameOf(node: ts.SignatureDeclaration): string {
  if (node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name !== undefined) return parent.name.getText();
  return "(anonymous)";
}

/** Every function with a body in `text` (a TypeScript file), with its size. */
export function functionSizes(file: string, text: string): Sized[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const sized: Sized[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      sized.push({ file, line: first + 1, name: nameOf(node), lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sized;
}

const sources = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
  .split("\n")
  .filter((f) => /^(ingest|sink|schemas|deploy)\/.*\.ts$/.test(f));
const all = sources.flatMap((file) => functionSizes(file, readFileSync(join(ROOT, file), "utf8"))).sort((a, b) => b.lines - a.lines);

test("functionSizes counts a function's lines, nested ones included, and names arrows by their variable", () => {
  const sized = functionSizes("x.ts", "export function outer() {\n  const inner = () => {\n    return 1;\n  };\n  return inner();\n}\n");
  assert.equal(
    sized.map((s) => [s.name, s.line, s.lines]),
    [
      ["outer", 1, 6],
      ["inner", 2, 3],
    ],
  );
});

test(`no function of ingest/, sink/, schemas/ or deploy/ is over ${MAX_LINES} lines`, () => {
  process.stdout.write(
    `\nlargest functions:\n${all
      .slice(0, 10)
      .map((s) => `  ${s.lines} ${s.file}:${s.line} ${s.name}`)
      .join("\n")}\n`,
  );
  const over = all.filter((s) => s.lines > MAX_LINES).map((s) => `${s.file}:${s.line} ${s.name}: ${s.lines} lines`);
  assert.equal(over, [], over.join("\n"));
});
test.run();
