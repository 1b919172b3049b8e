/**
 * What a delivery process tells of each destination it runs, for its health reports
 * (sink/deliver/health.ts): messages delivered, retried and failed in one-minute buckets of the
 * last WINDOW_MINUTES, and since when its oldest message under way has waited. The loops
 * (sink/deliver/loop.ts) count here beside the per-process totals of `deliver_messages_total`,
 * which a window cannot be read from. A destination counts as run from its loop's start to its
 * stop; its buckets outlive a stop (a paused and resumed destination keeps its last minutes) and
 * are dropped once empty. Pure: every time is passed in, ms since the epoch.
 */

/** Minutes a report counts. */
export const WINDOW_MINUTES = 15;
const MINUTE_MS = 60_000;

/** What the window counts: delivered, retried (an attempt to be made again), failed (kept). */
export type Outcome = "delivered" | "retried" | "failed";

/** Messages of each outcome. */
export type OutcomeCounts = Record<Outcome, number>;

/** One destination as its report tells it: its counts over the window and its oldest waiting message's age, seconds (0: none). */
export interface DestinationNow extends OutcomeCounts {
  destinationId: string;
  workspaceId: string;
  oldestWaitingSeconds: number;
}

interface Tracked {
  workspaceId: string;
  running: boolean;
  /** Minute (ms since the epoch / 60 000, floored) -> its counts. */
  minutes: Map<number, OutcomeCounts>;
  /** When the oldest message under way was received; undefined when none is. */
  waitingSince?: number;
}

/** The window of every destination of this process (see the module comment). */
export class RecentDeliveries {
  private readonly destinations = new Map<string, Tracked>();

  /** `destinationId` of `workspaceId` is run from now on; a change of workspace starts its buckets afresh. */
  running(destinationId: string, workspaceId: string): void {
    const tracked = this.destinations.get(destinationId);
    if (tracked !== undefined && tracked.workspaceId === workspaceId) tracked.running = true;
    else this.destinations.set(destinationId, { workspaceId, running: true, minutes: new Map() });
  }

  /** `destinationId` is no longer run here: not reported, nothing waits. */
  stopped(destinationId: string): void {
    const tracked = this.destinations.get(destinationId);
    if (tracked === undefined) return;
    tracked.running = false;
    delete tracked.waitingSince;
  }

  /** Counts `n` messages of `outcome` at `nowMs` (of a destination never run here: ignored). */
  count(destinationId: string, outcome: Outcome, n: number, nowMs: number): void {
    const tracked = this.destinations.get(destinationId);
    if (tracked === undefined || n <= 0) return;
    const minute = Math.floor(nowMs / MINUTE_MS);
    const counts = tracked.minutes.get(minute) ?? { delivered: 0, retried: 0, failed: 0 };
    counts[outcome] += n;
    tracked.minutes.set(minute, counts);
  }

  /** The receipt time of the oldest message `destinationId` is still trying, ms; undefined: none. */
  waitingSince(destinationId: string, receivedMs: number | undefined): void {
    const tracked = this.destinations.get(destinationId);
    if (tracked === undefined || !tracked.running) return;
    if (receivedMs === undefined) delete tracked.waitingSince;
    else tracked.waitingSince = receivedMs;
  }

  /** Each destination run now, with its counts of the window ending at `nowMs`; drops old buckets and forgotten destinations. */
  now(nowMs: number): DestinationNow[] {
    const first = Math.floor(nowMs / MINUTE_MS) - WINDOW_MINUTES + 1;
    const out: DestinationNow[] = [];
    for (const [destinationId, tracked] of this.destinations) {
      const sum: OutcomeCounts = { delivered: 0, retried: 0, failed: 0 };
      for (const [minute, counts] of tracked.minutes) {
        if (minute < first) tracked.minutes.delete(minute);
        else for (const outcome of ["delivered", "retried", "failed"] as const) sum[outcome] += counts[outcome];
      }
      if (!tracked.running) {
        if (tracked.minutes.size === 0) this.destinations.delete(destinationId);
        continue;
      }
      const waited = tracked.waitingSince === undefined ? 0 : Math.max(0, (nowMs - tracked.waitingSince) / 1000);
      out.push({ destinationId, workspaceId: tracked.workspaceId, ...sum, oldestWaitingSeconds: waited });
    }
    return out;
  }
}
