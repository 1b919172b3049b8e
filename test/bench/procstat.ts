/**
 * What a process costs, read from Linux's /proc: CPU seconds (user + system) and peak RSS, each
 * counted over the process and its descendants (the ingest's cluster workers). A process that
 * is gone, or not on Linux, counts 0.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Kernel clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on Linux x86_64). */
const TICKS_PER_SECOND = 100;

/** A process and every descendant of it, by pid. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    const p = tree[i]!;
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        for (const child of readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim().split(/\s+/)) {
          if (child !== "") tree.push(Number(child));
        }
      } catch {
        // a thread that ended meanwhile
      }
    }
  }
  return tree;
}

/** CPU seconds used so far by a process tree (user + system). */
export function cpuSeconds(pid: number): number {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return ticks / TICKS_PER_SECOND;
}

/** Peak RSS (VmHWM) of a process tree, MB: the sum of each process's own peak. */
export function peakRssMb(pid: number): number {
  return statusMb(pid, "VmHWM");
}

/** Resident memory (VmRSS) of a process tree now, MB. */
export function rssMb(pid: number): number {
  return statusMb(pid, "VmRSS");
}

/** A kB field of /proc/PID/status summed over the process tree, MB. */
function statusMb(pid: number, field: "VmHWM" | "VmRSS"): number {
  const pattern = new RegExp(`${field}:\\s+(\\d+)`);
  let kb = 0;
  for (const p of processTree(pid)) {
    try {
      kb += Number(pattern.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return kb / 1024;
}

/** CPU seconds of several named process trees, for a before/after difference. */
export function cpuSnapshot(pids: Record<string, number | undefined>): Record<string, number> {
  const snapshot: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) if (pid !== undefined) snapshot[name] = cpuSeconds(pid);
  return snapshot;
}
