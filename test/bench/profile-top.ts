/**
 * Top entries of V8 CPU profiles (`node --cpu-prof` output): self time per function, summed over
 * every profile given, as a share of all samples; with `--by-file`, per source file instead (a
 * package of node_modules, a node: module, or V8's own entries). Usage:
 *   node dist/test/bench/profile-top.js FILE.cpuprofile [...] [--top N] [--by-file]
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * The file a frame's self time is counted to by `--by-file`: `npm:<package>` for node_modules,
 * `node:<module>` for Node's own (internal/ folded), the path for this repository's files, and
 * V8's entries as they are named ("(garbage collector)", "writeUtf8String").
 */
export function fileOf(frame: string): string {
  const file = / (\S+):\d+$/.exec(frame)?.[1];
  if (file === undefined) return frame;
  const npm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (npm) return `npm:${npm[1]}`;
  if (file.startsWith("node:"))
    return `node:${
      file
        .slice(5)
        .replace(/^internal\//, "")
        .split("/")[0]
    }`;
  return file;
}

/** Self time per "function (file:line)" over the profiles, µs, largest first. */
export function selfTimes(profiles: Profile[]): { frame: string; micros: number }[] {
  const totals = new Map<string, number>();
  for (const profile of profiles) {
    const frames = new Map<number, string>();
    for (const node of profile.nodes) {
      const { functionName, url, lineNumber } = node.callFrame;
      const file = url === "" ? "" : relative(process.cwd(), url.replace(/^file:\/\//, ""));
      frames.set(node.id, `${functionName || "(anonymous)"}${file ? ` ${file}:${lineNumber + 1}` : ""}`);
    }
    profile.samples.forEach((id, i) => {
      const frame = frames.get(id) ?? "?";
      totals.set(frame, (totals.get(frame) ?? 0) + (profile.timeDeltas[i] ?? 0));
    });
  }
  return [...totals].map(([frame, micros]) => ({ frame, micros })).sort((a, b) => b.micros - a.micros);
}

function main(): void {
  const args = process.argv.slice(2);
  const topAt = args.indexOf("--top");
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 20;
  const byFile = args.includes("--by-file");
  const files = args.filter((a, i) => a !== "--by-file" && (topAt < 0 || (i !== topAt && i !== topAt + 1)));
  const frames = selfTimes(files.map((f) => JSON.parse(readFileSync(f, "utf8")) as Profile));
  const times = byFile ? grouped(frames) : frames;
  // Shares of busy time: idle samples are left out.
  const busy = times.filter((t) => t.frame !== "(idle)");
  const all = busy.reduce((sum, t) => sum + t.micros, 0);
  for (const { frame, micros } of busy.slice(0, top)) {
    process.stdout.write(`${((micros / all) * 100).toFixed(1).padStart(5)}%  ${(micros / 1e6).toFixed(2).padStart(7)} s  ${frame}\n`);
  }
}

/** Self times summed per fileOf, largest first. */
export function grouped(frames: { frame: string; micros: number }[]): { frame: string; micros: number }[] {
  const totals = new Map<string, number>();
  for (const { frame, micros } of frames) totals.set(fileOf(frame), (totals.get(fileOf(frame)) ?? 0) + micros);
  return [...totals].map(([frame, micros]) => ({ frame, micros })).sort((a, b) => b.micros - a.micros);
}

if (require.main === module) main();
