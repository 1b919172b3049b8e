/**
 * Where the tests run from: the repository (ROOT: sources, docs, deploy/, .stack) and the build
 * tree the tests were compiled into (BUILD: `dist`, or a private `--outDir`), whose deploy/cli.js
 * and services the live tests start.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/** The repository root: the nearest directory above `from` with package.json and deploy/. */
export function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "deploy"))) return dir;
    if (dirname(dir) === dir) throw new Error(`no repository root above ${from}`);
  }
}

/** The repository root. */
export const ROOT = findRoot(__dirname);

/** The build tree: this file is its test/support/paths.js. */
export const BUILD = join(__dirname, "..", "..");
