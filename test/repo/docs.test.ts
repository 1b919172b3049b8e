/**
 * The docs stay true to the tree: every repository path named in README.md, docs/*.md and the
 * comments of the source exists (CHANGELOG.md is history and may name what has since moved); read
 * as Markdown (test/support/markdown.ts: markdown-it, GitHub's slugs), every code fence is closed
 * and every relative link and anchor resolves; and docs/DESIGN.md's path of one event names each source file under the
 * folder it lives in, and nothing that is not there. Each document stays short enough for its one
 * reader to finish: README.md and every Markdown file under docs/ under 25 KiB (CHANGELOG.md, a log, is exempt).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { headingAnchors, linkTargets, unclosedFences } from "../support/markdown";
import { ROOT } from "../support/paths";

const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);
const SOURCE_FOLDERS = ["ingest", "sink", "schemas", "deploy"] as const;
/** A path into one of the repository's folders, as docs and comments write it (not one inside a URN or URL: after a colon). */
const PATH = /(?<![\w./@:-])((?:ingest|sink|schemas|deploy|test|docs|\.ci)\/[\w./-]*[\w/])/g;

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
  assert.equal(missingPaths("see `schemas/shard.ts` and sink/loop/flush.ts and docs/", onDisk), ["schemas/shard.ts"]);
});

test("every path README.md, schemas/README.md, docs/*.md and the source comments name exists", () => {
  const files = tracked.filter(
    (f) =>
      (f === "README.md" ||
        f === "schemas/README.md" ||
        /^docs\/.*\.md$/.test(f) ||
        /^(ingest|sink|schemas|deploy|test)\/.*\.(ts|sh|py)$/.test(f)) &&
      f !== "test/repo/docs.test.ts",
  );
  const missing = files.flatMap((file) => missingPaths(readFileSync(join(ROOT, file), "utf8"), onDisk).map((path) => `${file}: ${path}`));
  assert.equal(missing, [], missing.join("\n"));
});

/** The Markdown documents the checks read: README, schemas/README, CHANGELOG and docs/. */
const documents = tracked.filter((f) => f === "README.md" || f === "schemas/README.md" || f === "CHANGELOG.md" || /^docs\/.*\.md$/.test(f));

test("unclosedFences finds the fence the README of 2026-11-28 left open (text after its closing backticks), and passes a closed one", () => {
  const old = readFileSync(join(ROOT, "test/fixtures/docs/README-broken-fence.md"), "utf8");
  const found = unclosedFences(old);
  assert.is(found.length, 1, found.join("\n"));
  assert.match(found[0]!, /^line 92: /);
  assert.equal(unclosedFences("text\n\n```sh\nnpm test\n```\n\n~~~~\ncode\n~~~~~\n"), []);
  assert.equal(unclosedFences("```sh\nnpm test\n"), [
    "line 1: the fence opened here (```) is not closed before line 2 (a closing fence has nothing after it)",
  ]);
});

test("every code fence of README.md, CHANGELOG.md and docs/*.md is closed", () => {
  const problems = documents.flatMap((file) => unclosedFences(readFileSync(join(ROOT, file), "utf8")).map((p) => `${file}: ${p}`));
  assert.equal(problems, [], problems.join("\n"));
});

/** Links of `file` (parsed as Markdown) whose relative target or anchor does not resolve. */
function brokenLinks(file: string, anchorsOf: (file: string) => Set<string>): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(readFileSync(join(ROOT, file), "utf8"))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = "", anchor] = target.split("#", 2);
    const resolved = path === "" ? file : normalize(join(dirname(file), decodeURIComponent(path)));
    if (!existsSync(join(ROOT, resolved))) broken.push(`${file}: ${target} (no ${resolved})`);
    else if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(resolved).has(decodeURIComponent(anchor)))
      broken.push(`${file}: ${target} (no heading gives #${anchor} in ${resolved})`);
  }
  return broken;
}

test("brokenLinks finds a missing file and a missing anchor (the check can fail)", () => {
  const anchorsOf = (file: string) => headingAnchors(readFileSync(join(ROOT, file), "utf8"));
  assert.equal(headingAnchors("# Top\n\n## The `npm start` step\n\n## Top\n").has("the-npm-start-step"), true);
  assert.equal([...headingAnchors("# Top\n\n## Top\n")], ["top", "top-1"]);
  assert.equal(linkTargets("[a](docs/API.md#nowhere) and [b](docs/NOPE.md) and [c](https://example.com/x)"), [
    "docs/API.md#nowhere",
    "docs/NOPE.md",
    "https://example.com/x",
  ]);
  const broken = brokenLinks("test/fixtures/docs/README-broken-fence.md", anchorsOf);
  assert.ok(broken.length > 0, "the fixture's relative links do not resolve from test/fixtures/docs/");
});

test("every relative link and anchor of README.md, CHANGELOG.md and docs/*.md resolves", () => {
  const cache = new Map<string, Set<string>>();
  const anchorsOf = (file: string) => {
    if (!cache.has(file)) cache.set(file, headingAnchors(readFileSync(join(ROOT, file), "utf8")));
    return cache.get(file)!;
  };
  const broken = documents.flatMap((file) => brokenLinks(file, anchorsOf));
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

/** The most a document may weigh, in bytes (25 KiB): README.md and docs/ (CHANGELOG.md, a log, is exempt). */
const MAX_DOC_BYTES = 25 * 1024;

/** The documents of `sizes` at or over `max` bytes, each with its size. */
export function oversized(sizes: [file: string, bytes: number][], max: number): string[] {
  return sizes.filter(([, bytes]) => bytes >= max).map(([file, bytes]) => `${file}: ${bytes} bytes (must be under ${max})`);
}

test("oversized names a document at the limit, with its size, and passes one a byte under (the check can fail)", () => {
  assert.equal(
    oversized(
      [
        ["docs/BIG.md", MAX_DOC_BYTES],
        ["docs/SMALL.md", MAX_DOC_BYTES - 1],
      ],
      MAX_DOC_BYTES,
    ),
    ["docs/BIG.md: 25600 bytes (must be under 25600)"],
  );
});

test("README.md and every Markdown file under docs/ is under 25 KiB (CHANGELOG.md is exempt)", () => {
  const files = tracked.filter((f) => f === "README.md" || /^docs\/.*\.md$/.test(f));
  assert.ok(files.includes("README.md") && files.some((f) => f.startsWith("docs/")), files.join(" "));
  const over = oversized(
    files.map((f): [string, number] => [f, statSync(join(ROOT, f)).size]),
    MAX_DOC_BYTES,
  );
  assert.equal(over, [], over.join("\n"));
});

test.run();
