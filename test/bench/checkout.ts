/**
 * Another commit of this repository, built beside the working tree for a same-sitting comparison
 * (bench:compare, bench:profile): cloned into .stack/compare/<sha>, installed with npm ci and
 * built once; later runs reuse it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The working tree's root (this file is compiled to dist/test/bench/). */
export const ROOT = join(__dirname, "..", "..", "..");

/** Clones, installs and builds `commit` once under .stack/compare; its directory. Throws when a step fails. */
export function checkout(commit: string): string {
  const sha = execFileSync("git", ["-C", ROOT, "rev-parse", "--verify", `${commit}^{commit}`], { encoding: "utf8" }).trim();
  const dir = join(ROOT, ".stack", "compare", sha);
  const built = join(dir, ".built");
  if (existsSync(built)) return dir;
  execFileSync("rm", ["-rf", dir]);
  const run = (cmd: string, args: string[], cwd = dir) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "ignore", "inherit"] });
  process.stdout.write(`building ${sha} in ${dir}\n`);
  run("git", ["clone", "--quiet", "--no-checkout", ROOT, dir], ROOT);
  run("git", ["checkout", "--quiet", sha]);
  run("npm", ["ci", "--no-audit", "--no-fund"]);
  run("npm", ["run", "--silent", "build"]);
  writeFileSync(built, `${sha}\n`);
  return dir;
}
