/**
 * The live view's worker thread, from the public API's side: started by the first viewer or
 * /live/recent call, ended IDLE ms after the last (as the tail ran before, issue 46 row 6 moved it
 * off this thread). The worker (ingest/live/worker.ts) owns the Kafka consumer, the recent buffer,
 * every parse and every serialisation; this thread only passes requests and receives, for each
 * viewer, its items as the server-sent events its stream writes, batched (one write per batch),
 * and /live/recent's answer as its body text. If the worker dies (Kafka
 * unreachable at start, its heap limit), the calls waiting on it fail, every watch ends (viewers
 * reconnect, SSE's retry) and the next acquire starts another.
 */
import { once } from "node:events";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import type { KafkaConfig, LogLevel } from "../../schemas/config";
import type { RecentBounds } from "./buffer";
import type { LiveFilter, LiveKind } from "./items";

/** What the worker is started with (workerData): plain data, copied to it. */
export interface LiveWorkerData {
  kafka: KafkaConfig;
  topics: Record<LiveKind, string>;
  recent: RecentBounds;
  /** Records read back per partition at start, and ms to wait for them. */
  backfill: number;
  backfillWaitMs: number;
  logLevel: LogLevel;
}

/** Messages to the worker. */
export type ToLiveWorker =
  | { op: "watch"; watcher: number; filter: LiveFilter; backlog: number }
  | { op: "unwatch"; watcher: number }
  | { op: "recent"; request: number; filter: LiveFilter; limit: number }
  | { op: "stop" };

/** Messages from the worker. */
export type FromLiveWorker =
  | { op: "ready"; records: number }
  | { op: "failed"; message: string }
  | { op: "frames"; frames: WatcherFrames[] }
  | { op: "recent"; request: number; body: string };

/** Server-sent events for one watcher: `count` items as the text its stream writes (sseFrame). */
export interface WatcherFrames {
  watcher: number;
  text: string;
  count: number;
}

/** Settings of the live thread. */
export interface LiveThreadOptions extends LiveWorkerData {
  /** ms the worker runs after its last user. */
  idleMs: number;
  /** V8 old space of the worker, MB: its recent buffer and decoded items live there. */
  heapMb: number;
  log: Logger;
}

/**
 * What a watcher is called with: the items passing its filter (backlog first) as server-sent
 * events ready to write, several at a time, and its end.
 */
export interface LiveWatcher {
  frames: (text: string, count: number) => void;
  end: () => void;
}

/** How long a stop waits for the worker to disconnect its consumer before terminating it, ms. */
const STOP_WAIT_MS = 5_000;

/** The compiled worker, beside this file. */
const WORKER_FILE = join(__dirname, "worker.js");

/** One worker at a time, shared by every user (see the module comment). */
export class LiveThread {
  private worker: Worker | undefined;
  private ready: Promise<void> | undefined;
  private users = 0;
  private idle: NodeJS.Timeout | undefined;
  private nextId = 1;
  private readonly watchers = new Map<number, LiveWatcher>();
  private readonly requests = new Map<number, { resolve: (body: string) => void; reject: (error: Error) => void }>();

  constructor(private readonly options: LiveThreadOptions) {}

  /** Whether the worker runs (or starts). */
  get isRunning(): boolean {
    return this.worker !== undefined;
  }

  /**
   * Starts the worker unless it runs and resolves once its backfill is read; returns the release.
   * Throws if the worker could not start its tail (the error says why).
   */
  async acquire(): Promise<() => void> {
    this.users++;
    clearTimeout(this.idle);
    try {
      this.ready ??= this.spawn();
      await this.ready;
    } catch (error) {
      this.release();
      throw error;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release();
    };
  }

  /**
   * `/live/recent`'s body as JSON text (`{"items": [...]}`, newest first, at most `limit`, passing
   * `filter`). Throws when no worker runs or it dies meanwhile.
   */
  recent(filter: LiveFilter, limit: number): Promise<string> {
    const worker = this.worker;
    if (worker === undefined) return Promise.reject(new Error("the live tail is not running"));
    const request = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      this.requests.set(request, { resolve, reject });
      this.post({ op: "recent", request, filter, limit });
    });
  }

  /** Sends `watcher` up to `backlog` recent items passing `filter`, oldest first, then each new one; returns the unwatch. */
  watch(filter: LiveFilter, backlog: number, watcher: LiveWatcher): () => void {
    const id = this.nextId++;
    if (this.worker === undefined) {
      watcher.end();
      return () => undefined;
    }
    this.watchers.set(id, watcher);
    this.post({ op: "watch", watcher: id, filter, backlog });
    return () => {
      if (this.watchers.delete(id)) this.post({ op: "unwatch", watcher: id });
    };
  }

  /** Stops the worker now, whoever holds it (the ingest is stopping). */
  async stop(): Promise<void> {
    clearTimeout(this.idle);
    const worker = this.worker;
    if (worker === undefined) return;
    const exited = once(worker, "exit");
    worker.postMessage({ op: "stop" } satisfies ToLiveWorker);
    const timer = setTimeout(() => void worker.terminate(), STOP_WAIT_MS);
    await exited.catch(() => undefined);
    clearTimeout(timer);
  }

  private release(): void {
    this.users--;
    if (this.users > 0) return;
    this.idle = setTimeout(
      () => void this.stop().catch((err: unknown) => this.options.log.warn({ err }, "live tail: stop failed")),
      this.options.idleMs,
    );
  }

  private post(message: ToLiveWorker): void {
    this.worker?.postMessage(message);
  }

  private spawn(): Promise<void> {
    const { idleMs: _idle, heapMb, log, ...data } = this.options;
    const worker = new Worker(WORKER_FILE, {
      workerData: data satisfies LiveWorkerData,
      // A small young generation: the worker's garbage is short-lived fetch copies, and its RSS counts in the pod's limit.
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 8 },
      stdout: false,
      stderr: false,
    });
    this.worker = worker;
    return new Promise<void>((resolve, reject) => {
      worker.on("message", (message: FromLiveWorker) => {
        switch (message.op) {
          case "ready":
            log.debug({ records: message.records }, "live worker ready");
            return resolve();
          case "failed":
            return reject(new Error(message.message));
          case "frames":
            for (const { watcher, text, count } of message.frames) this.watchers.get(watcher)?.frames(text, count);
            return;
          case "recent": {
            const waiting = this.requests.get(message.request);
            this.requests.delete(message.request);
            return waiting?.resolve(message.body);
          }
        }
      });
      worker.on("error", (err) => log.error({ err }, "live worker failed"));
      worker.on("exit", (code) => {
        if (this.worker !== worker) return;
        this.worker = undefined;
        this.ready = undefined;
        if (code !== 0) log.warn({ code }, "live worker exited");
        const gone = new Error(`the live tail's worker exited (code ${code})`);
        reject(gone);
        for (const { reject: fail } of this.requests.values()) fail(gone);
        this.requests.clear();
        const watchers = [...this.watchers.values()];
        this.watchers.clear();
        for (const watcher of watchers) watcher.end();
      });
    });
  }
}
