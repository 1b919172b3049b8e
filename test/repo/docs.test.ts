/**
 * The docs stay true to the tree: every repository path named in README.md, docs/*.md and the
 * comments of the source exists (CHANGELOG.md is history and may name what has since moved), every
 * relative link resolves, and docs/DESIGN.md's path of one event names each source file under the
 * folder it lives in, and nothing that is not there.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ROOT } from "../support/paths";

const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);
const SOURCE_FOLDERS = ["ingest", "sink", "schemas", "deploy"] as const;
/** A path into one of the repository's folders, as docs and comments write it. */
const PATH = /(?<![\w./@-])((?:ingest|sink|schemas|deploy|test|docs|\.ci)\/[\w./-]*[\w/])/g;

/** Paths named in `text` that do not exist (a trailing `/` names a folder). */
export function missingPaths(text: string, exists: (path: string) => boolean): string[] {
  const missing = new Set<string>();
  for (const [, path] of text.matchAll(PATH)) if (!exists(path!)) missing.add(path!);
  return [...missing];
}

/** A path exists as written, or is a built file (`.js`) of a source that exists. */
const onDisk = (path: string) =>
  existsSync(join(ROOT, path)) || (path.endsWith(".js") && existsSync(join(ROOT, path.replace(/\.js$/, ".ts"))));

test("missingPaths finds a path that is not there and passes one that is (the check can fail)", () => {
  assert.equal(missingPaths("see `schemas/shard.ts` and sink/flush.ts and docs/", onDisk), ["schemas/shard.ts"]);
});

test("every path README.md, docs/*.md and the source comments name exists", () => {
  const files = tracked.filter(
    (f) =>
      (f === "README.md" || /^docs\/.*\.md$/.test(f) || /^(ingest|sink|schemas|deploy|test)\/.*\.(ts|sh|py)$/.test(f)) &&
      f !== "test/repo/docs.test.ts",
  );
  const missing = files.flatMap((file) => missingPaths(readFileSync(join(ROOT, file), "utf8"), onDisk).map((path) => `${file}: ${path}`));
  assert.equal(missing, [], missing.join("\n"));
});

test("every relative link of README.md and docs/*.md resolves", () => {
  const broken: string[] = [];
  for (const file of tracked.filter((f) => f === "README.md" || f === "CHANGELOG.md" || /^docs\/.*\.md$/.test(f))) {
    for (const [, target] of readFileSync(join(ROOT, file), "utf8").matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      if (!existsSync(join(ROOT, normalize(join(dirname(file), target!))))) broken.push(`${file}: ${target}`);
    }
  }
  assert.equal(broken, [], broken.join("\n"));
});

test("docs/DESIGN.md's path of one event names every source file in its folder's entry, and only those", () => {
  const design = readFileSync(join(ROOT, "docs", "DESIGN.md"), "utf8");
  const section = design.slice(
    design.indexOf("## The path of one event"),
    design.indexOf("\n## ", design.indexOf("## The path of one event") + 3),
  );
  const entries = new Map<string, string>();
  for (const entry of section.split(/\n- /).slice(1)) {
    const folder = /^\*\*(\w+)\/\*\*/.exec(entry)?.[1];
    if (folder !== undefined) entries.set(folder, entry);
  }
  const problems: string[] = [];
  for (const folder of SOURCE_FOLDERS) {
    const entry = entries.get(folder);
    if (entry === undefined) {
      problems.push(`no entry for ${folder}/`);
      continue;
    }
    const files = tracked.filter((f) => f.startsWith(`${folder}/`) && f.endsWith(".ts"));
    for (const file of files) {
      const parts = file.slice(folder.length + 1).split("/");
      const name = parts.pop()!;
      const sub = parts.length > 0 ? `\`${parts.join("/")}/\`` : undefined;
      if (!entry.includes(`\`${name}\``) || (sub !== undefined && !entry.includes(sub)))
        problems.push(`${file} is not named under ${folder}/`);
    }
    for (const [, named] of entry.matchAll(/`([\w-]+\.ts)`/g)) {
      if (!files.some((f) => f.endsWith(`/${named}`))) problems.push(`${folder}/ names ${named}, which is not in ${folder}/`);
    }
  }
  assert.equal(problems, [], problems.join("\n"));
});

test.run();
