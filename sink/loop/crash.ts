/**
 * Fault-test hook (SINK_CRASH_AT): wraps the insert step so the process SIGKILLs itself just
 * before an insert, or just after ClickHouse acknowledged one (before the commit). Placed in the
 * chain only when the setting is given; the insert itself knows nothing of it.
 */
import type { InsertRows } from "./writer";

/** Where to crash: "" (never), "before-insert" or "after-insert". */
export type CrashAt = "" | "before-insert" | "after-insert";

/** `insert` itself when `crashAt` is "", else `insert` with the crash around it. */
export function withCrashHook<Row>(insert: InsertRows<Row>, crashAt: CrashAt): InsertRows<Row> {
  if (crashAt === "") return insert;
  return async (rows, signal) => {
    if (crashAt === "before-insert") process.kill(process.pid, "SIGKILL");
    await insert(rows, signal);
    if (crashAt === "after-insert") process.kill(process.pid, "SIGKILL");
  };
}
