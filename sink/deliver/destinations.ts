/**
 * The delivery process's destinations (sink/deliver/service.ts): applies the records of the
 * destinations topic as the follower reads them, one change at a time per destination, to the
 * running loops (sink/deliver/loop.ts).
 *
 * - A tombstone removes: the loop stops and the group is deleted. A record that does not read as
 *   a destination (a newer CLI's, a hand-written one) or names another id is ignored: the last good
 *   state stays, it is never taken for a removal.
 * - A loop is registered only once it has started. A start that fails (Kafka down) is tried again
 *   with backoff, with a new loop each time, until it starts or a newer change of that destination
 *   (or the stop) arrives, which then applies from scratch.
 * - A change of the same workspace's destination updates its loop (URL, headers and filters apply
 *   from the next attempt); a change of workspace (a hand-written record) stops the loop and starts
 *   a new one, so no request of the first workspace's under way is sent on to the second's receiver.
 */
import type { Logger } from "pino";
import { parseDestination, type WebhookDestination } from "../../schemas/destinations";
import { retry, type Backoff } from "../../schemas/runtime/retry";

/** What Destinations needs of a destination's loop (DestinationLoop). */
export interface RunningLoop {
  readonly workspaceId: string;
  /** Starts consuming; throws when it cannot (the loop is then stopped and dropped). */
  start(): Promise<void>;
  stop(): Promise<void>;
  update(destination: WebhookDestination): void;
}

/** What Destinations is given. */
export interface DestinationsDeps {
  /** A new, not yet started loop of `destination`. */
  newLoop: (destination: WebhookDestination) => RunningLoop;
  /** Deletes a removed destination's consumer group (errors are ignored: none, or still closing). */
  deleteGroup: (destinationId: string) => Promise<void>;
  /** Waits between attempts to start a loop. */
  backoff: Backoff;
  log: Logger;
}

/** Applies destination changes (see the module comment). */
export class Destinations {
  private readonly loops = new Map<string, RunningLoop>();
  private readonly queues = new Map<string, Promise<void>>();
  /** Per destination, the abort of a start still being retried: a newer change ends it. */
  private readonly starting = new Map<string, AbortController>();
  private stopped = false;

  constructor(private readonly deps: DestinationsDeps) {}

  /** Loops started and not stopped. */
  get running(): number {
    return this.loops.size;
  }

  /** Applies a record of the destinations topic: `value` null removes; one that does not read as this id's destination is ignored. */
  applyRecord(key: string, value: Buffer | null): void {
    if (value === null) return this.apply(key, undefined);
    const destination = parseDestination(value);
    if (destination === undefined || destination.destinationId !== key) {
      this.deps.log.warn({ destination: key }, "destinations: record ignored (not a destination of this id); the last good state stays");
      return;
    }
    this.apply(key, destination);
  }

  /** Queues the change of `destinationId` to `destination` (undefined: removed). */
  apply(destinationId: string, destination: WebhookDestination | undefined): void {
    this.starting.get(destinationId)?.abort(); // a start still retrying gives way to this newer change
    const previous = this.queues.get(destinationId) ?? Promise.resolve();
    const next = previous
      .then(() => this.change(destinationId, destination))
      .catch((error: unknown) => {
        this.deps.log.error(
          { err: error, destination: destinationId },
          "destination change failed; it applies again at the next change or restart",
        );
      });
    this.queues.set(destinationId, next);
  }

  /** Stops every loop (after the changes under way; starts still being retried give up). */
  async stopAll(): Promise<void> {
    this.stopped = true;
    for (const abort of this.starting.values()) abort.abort();
    await Promise.all(this.queues.values());
    await Promise.all([...this.loops.values()].map((loop) => loop.stop()));
    this.loops.clear();
  }

  private async change(destinationId: string, destination: WebhookDestination | undefined): Promise<void> {
    const { log } = this.deps;
    const loop = this.loops.get(destinationId);
    const active = destination !== undefined && !destination.paused;
    if (loop !== undefined && active && loop.workspaceId === destination.workspaceId) return loop.update(destination);
    if (loop !== undefined) {
      this.loops.delete(destinationId);
      await loop.stop();
      const why = destination === undefined ? "removed" : destination.paused ? "paused" : "moved to another workspace: started afresh";
      log.info({ destination: destinationId }, `destination ${why}`);
    }
    if (destination === undefined) return this.deps.deleteGroup(destinationId).catch(() => undefined);
    if (!active || this.stopped) return;
    const started = await this.started(destination);
    if (started === undefined) return;
    this.loops.set(destinationId, started);
    log.info({ destination: destinationId }, "destination delivering");
  }

  /** A started loop of `destination`, tried again with backoff; undefined when a newer change or the stop came first. */
  private async started(destination: WebhookDestination): Promise<RunningLoop | undefined> {
    const { destinationId } = destination;
    const abort = new AbortController();
    this.starting.set(destinationId, abort);
    try {
      return await retry(
        async () => {
          const loop = this.deps.newLoop(destination);
          try {
            await loop.start();
          } catch (error) {
            await loop.stop().catch(() => undefined);
            throw error;
          }
          return loop;
        },
        {
          ...this.deps.backoff,
          signal: abort.signal,
          onRetry: (error, attempt, waitMs) =>
            this.deps.log.warn({ err: error, destination: destinationId, attempt, waitMs }, "destination did not start; retrying"),
        },
      );
    } catch (error) {
      if (abort.signal.aborted) return undefined;
      throw error;
    } finally {
      if (this.starting.get(destinationId) === abort) this.starting.delete(destinationId);
    }
  }
}
