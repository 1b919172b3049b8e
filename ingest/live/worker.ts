/**
 * The live view's worker thread (started by ingest/live/thread.ts): the Kafka tail
 * (ingest/live/tail.ts) and the feed (ingest/live/feed.ts) run here, so reading and parsing the
 * whole cluster's records never holds the public API's event loop. It posts to the main thread
 * only records someone watches, decoded once and written as each watcher's server-sent events,
 * batched per turn of its own loop (at most FLUSH_BYTES a message, so the main thread's work per
 * message stays short). If the tail cannot start it posts `failed` and exits; on `stop` it
 * disconnects and exits.
 */
import { parentPort, workerData } from "node:worker_threads";
import pino from "pino";
import { createKafka } from "../../schemas/kafka/client";
import { LiveFeed, sseFrame, type Delivery } from "./feed";
import { runTail, type RunningTail } from "./tail";
import type { FromLiveWorker, LiveWorkerData, ToLiveWorker, WatcherFrames } from "./thread";

/** Bytes of frames gathered before they are posted without waiting for the loop's turn. */
const FLUSH_BYTES = 256 * 1024;

const port = parentPort;
if (port === null) throw new Error("ingest/live/worker.ts runs as a worker thread (ingest/live/thread.ts starts it)");
const data = workerData as LiveWorkerData;
const log = pino({ name: "ingest", level: data.logLevel }).child({ thread: "live" });
const feed = new LiveFeed(data.recent);
const post = (message: FromLiveWorker) => port.postMessage(message);

// Frames waiting to be posted, by watcher.
let pending = new Map<number, WatcherFrames>();
let pendingBytes = 0;
let scheduled = false;
const flush = () => {
  scheduled = false;
  if (pending.size === 0) return;
  const frames = [...pending.values()];
  pending = new Map();
  pendingBytes = 0;
  post({ op: "frames", frames });
};
const deliver = (delivery: Delivery) => {
  const frame = sseFrame(delivery.id, delivery.json);
  for (const watcher of delivery.watchers) {
    const frames = pending.get(watcher);
    if (frames === undefined) pending.set(watcher, { watcher, text: frame, count: 1 });
    else {
      frames.text += frame;
      frames.count++;
    }
    pendingBytes += frame.length;
  }
  if (pendingBytes >= FLUSH_BYTES) flush();
  else if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
};

let tail: RunningTail | undefined;
let stopping = false;
const exit = async () => {
  await tail?.stop().catch((err: unknown) => log.warn({ err }, "live tail: disconnect failed"));
  process.exit(0); // in a worker: ends this thread only
};

port.on("message", (message: ToLiveWorker) => {
  switch (message.op) {
    case "watch": {
      // Its backlog before anything later: frames already gathered are for other watchers.
      const backlog = feed.watch(message.watcher, message.filter, message.backlog);
      const text = backlog.map((entry) => sseFrame(entry.id, entry.json)).join("");
      return post({ op: "frames", frames: [{ watcher: message.watcher, text, count: backlog.length }] });
    }
    case "unwatch":
      return feed.unwatch(message.watcher);
    case "recent":
      return post({ op: "recent", request: message.request, body: feed.newest(message.filter, message.limit) });
    case "stop":
      stopping = true;
      if (tail !== undefined) void exit();
      return;
  }
});

runTail(
  {
    kafka: createKafka(data.kafka, "live"),
    topics: data.topics,
    clientId: data.kafka.clientId,
    backfill: data.backfill,
    backfillWaitMs: data.backfillWaitMs,
    log,
  },
  (record) => {
    const delivery = feed.take(record);
    if (delivery !== undefined) deliver(delivery);
  },
).then(
  (running) => {
    tail = running;
    if (stopping) return void exit();
    post({ op: "ready", records: feed.recent.size });
  },
  (error: unknown) => {
    post({ op: "failed", message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  },
);
