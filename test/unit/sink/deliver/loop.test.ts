/**
 * A destination's loop (sink/deliver/loop.ts) over a stand-in of kafkajs and a receiver on
 * 127.0.0.1: a crash kafkajs will not restart is reconnected and the running gauge says 0 until
 * the group is joined again; a failed heartbeat while a request waits for its retry gives the
 * request up uncommitted (no second send); the stop ends the keeping of a failure ClickHouse does
 * not take; a secret that does not open counts as a request without an answer, logged once; the
 * outcomes and the oldest waiting message are told to the health reports' window, from start to stop.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ConsumerRunConfig, EachBatchPayload, Kafka } from "kafkajs";
import pino from "pino";
import { sealSecret, type WebhookDestination } from "../../../../schemas/destinations";
import type { Message } from "../../../../schemas/messages";
import { PrivacyList } from "../../../../schemas/privacy/list";
import { DestinationLoop, type LoopDeps } from "../../../../sink/deliver/loop";
import { deliverMetrics, type DeliverMetrics } from "../../../../sink/deliver/metrics";
import { closeConnections } from "../../../../sink/deliver/post";
import { webhookDestination } from "../../../support/admin-fixtures";
import { storedLine } from "../../../support/samples";

/** A kafkajs consumer's stand-in: its events, calls, and the batches a test feeds it. */
class FakeConsumer {
  readonly events = { GROUP_JOIN: "consumer.group_join", CRASH: "consumer.crash" };
  private readonly listeners = new Map<string, ((e: { payload: unknown }) => void)[]>();
  connects = 0;
  runs = 0;
  running = false;
  readonly commits: { partition: number; offset: string }[] = [];
  private eachBatch: ConsumerRunConfig["eachBatch"];
  private inBatch: Promise<void> = Promise.resolve();

  on(event: string, listener: (e: { payload: unknown }) => void) {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
    return () => undefined;
  }
  emit(event: string, payload: unknown) {
    for (const listener of this.listeners.get(event) ?? []) listener({ payload });
  }
  async connect() {
    this.connects++;
  }
  async subscribe() {}
  async run(config: ConsumerRunConfig) {
    this.runs++;
    this.running = true;
    this.eachBatch = config.eachBatch;
    this.emit(this.events.GROUP_JOIN, {});
  }
  /** As kafkajs: waits for the batch under way. */
  async disconnect() {
    this.running = false;
    await this.inBatch.catch(() => undefined);
  }
  async commitOffsets(offsets: { partition: number; offset: string }[]) {
    this.commits.push(...offsets);
  }
  /** Feeds one batch of `lines` (events rows) on partition 0. */
  batch(lines: string[], heartbeat: () => Promise<void> = async () => undefined): Promise<void> {
    const messages = lines.map((value, i) => ({ offset: String(10 + i), value: Buffer.from(value), key: null }));
    const payload = {
      batch: { topic: "events", partition: 0, messages },
      resolveOffset: () => undefined,
      heartbeat,
      isRunning: () => this.running,
      isStale: () => false,
    } as unknown as EachBatchPayload;
    this.inBatch = this.eachBatch!(payload);
    return this.inBatch;
  }
}

/** The stand-in Kafka: that consumer, and an admin that finds the group's offsets already set. */
function fakeKafka(consumer: FakeConsumer): Kafka {
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    fetchOffsets: async () => [{ topic: "events", partitions: [{ partition: 0, offset: "10" }] }],
  };
  return { consumer: () => consumer, admin: () => admin } as unknown as Kafka;
}

/** A receiver answering `status`; how many requests it got. */
async function receiver(status: number): Promise<{ server: Server; url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      requests++;
      res.writeHead(status).end("{}");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, requests: () => requests };
}

function close(server: Server) {
  server.closeAllConnections();
  server.close();
  closeConnections();
}

const destination = (url: string, over: Partial<WebhookDestination> = {}) =>
  webhookDestination("d-1", "ws-1", { url, createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), ...over });

const line = () => storedLine("ws-1", { type: "track", event: "Order Completed", userId: "u1", messageId: "m1" } as Message, new Date());

function deps(consumer: FakeConsumer, over: Partial<LoopDeps> = {}): LoopDeps & { metrics: DeliverMetrics; lines: string[] } {
  const lines: string[] = [];
  const log = pino({ level: "info" }, { write: (l: string) => lines.push(l) });
  return {
    kafka: fakeKafka(consumer),
    topic: "events",
    groupPrefix: "test",
    privacy: new PrivacyList(),
    post: { timeoutMs: 2_000, maxAnswerBytes: 1_024, allowLinkLocal: false },
    horizonMs: 3_600_000,
    keep: async () => undefined,
    metrics: deliverMetrics(),
    report: () => undefined,
    log,
    reconnect: { minMs: 10, maxMs: 20 },
    lines,
    ...over,
  };
}

const running = async (m: DeliverMetrics) => (await m.running.get()).values.find((v) => v.labels.destination === "d-1")?.value;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(10);
  }
}

test("a crash kafkajs will not restart is reconnected; the running gauge says 0 from the crash until the group is joined again", async () => {
  const consumer = new FakeConsumer();
  const d = deps(consumer);
  const loop = new DestinationLoop(destination("http://127.0.0.1:9/hook"), d);
  await loop.start();
  assert.is(await running(d.metrics), 1, "consuming");
  consumer.running = false;
  consumer.emit(consumer.events.CRASH, { error: new Error("no group coordinator"), restart: false });
  assert.is(await running(d.metrics), 0, "not consuming after the crash");
  await until("reconnected", () => consumer.connects === 2 && consumer.runs === 2);
  assert.is(await running(d.metrics), 1, "consuming again once joined");
  await loop.stop();
  assert.is(await running(d.metrics), 0, "stopped");
  consumer.emit(consumer.events.CRASH, { error: new Error("after the stop"), restart: false });
  await sleep(100);
  assert.is(consumer.connects, 2, "no reconnect after the stop");
});

test("a failed heartbeat while a request waits for its retry ends the wait: the request is given up uncommitted, not sent again", async () => {
  const r = await receiver(503);
  try {
    const consumer = new FakeConsumer();
    const loop = new DestinationLoop(destination(r.url), deps(consumer));
    await loop.start();
    const rebalancing = Object.assign(new Error("The group is rebalancing"), { type: "REBALANCE_IN_PROGRESS" });
    const heartbeat = async () => {
      if (r.requests() > 0) throw rebalancing;
    };
    const ended = await Promise.race([consumer.batch([line()], heartbeat).then(() => true), sleep(4_000).then(() => false)]);
    assert.ok(ended, "the batch ended at the first heartbeat after the 503");
    assert.is(r.requests(), 1, "one request: none sent while another member may own the partition");
    assert.equal(consumer.commits, [], "nothing committed");
    await loop.stop();
  } finally {
    close(r.server);
  }
});

test("the stop ends the keeping of a failure ClickHouse does not take: the request stays uncommitted", async () => {
  const r = await receiver(400);
  try {
    const consumer = new FakeConsumer();
    let keeping = false;
    const keep = (_rows: unknown, signal?: AbortSignal) =>
      new Promise<void>((_, reject) => {
        keeping = true;
        signal?.addEventListener("abort", () => reject(new Error("the retries were aborted")));
      });
    const loop = new DestinationLoop(destination(r.url), deps(consumer, { keep }));
    await loop.start();
    void consumer.batch([line()]);
    await until("the failure being kept", () => keeping);
    const stopped = await Promise.race([loop.stop().then(() => true), sleep(2_000).then(() => false)]);
    assert.ok(stopped, "the stop did not wait for ClickHouse");
    assert.equal(consumer.commits, [], "not committed: sent again by the next consumer (at least once)");
  } finally {
    close(r.server);
  }
});

test("a secret that does not open counts as a request without an answer, and is logged once, not per attempt", async () => {
  const consumer = new FakeConsumer();
  const sealed = sealSecret("shh", "d-1", "a".repeat(40));
  const d = deps(consumer, { secretKey: "b".repeat(40) });
  const loop = new DestinationLoop(destination("http://127.0.0.1:9/hook", { secret: sealed }), d);
  await loop.start();
  void consumer.batch([line()]);
  const none = async () =>
    (await d.metrics.requests.get()).values.find((v) => v.labels.destination === "d-1" && v.labels.answer === "none")?.value ?? 0;
  await until("three attempts counted", async () => (await none()) >= 3, 8_000);
  await loop.stop();
  const warned = d.lines.filter((l) => l.includes("does not open with DESTINATIONS_SECRET_KEY"));
  assert.is(warned.length, 1, "one warning");
  assert.is((JSON.parse(warned[0]!) as { level: number }).level, 40, "at warn");
});

test("outcomes and the oldest waiting message reach the health reports' window; a stopped loop is not told", async () => {
  const [ok, down, strict] = await Promise.all([receiver(200), receiver(503), receiver(400)]);
  try {
    const old = (id: string) =>
      storedLine("ws-1", { type: "track", event: "Order Completed", userId: "u1", messageId: id } as Message, new Date(Date.now() - 5_000));
    const run = async (url: string) => {
      const consumer = new FakeConsumer();
      const d = deps(consumer);
      const loop = new DestinationLoop(destination(url), d);
      assert.equal(d.metrics.recent.now(Date.now()), [], "not told before its start");
      await loop.start();
      return { consumer, d, loop, told: () => d.metrics.recent.now(Date.now())[0] };
    };
    const delivered = await run(ok.url);
    await delivered.consumer.batch([old("m1"), old("m2")]);
    assert.equal(delivered.told(), {
      destinationId: "d-1",
      workspaceId: "ws-1",
      delivered: 2,
      retried: 0,
      failed: 0,
      oldestWaitingSeconds: 0,
    });
    await delivered.loop.stop();
    assert.is(delivered.told(), undefined, "stopped: not told");
    const kept = await run(strict.url);
    await kept.consumer.batch([old("m3")]);
    assert.equal([kept.told()!.delivered, kept.told()!.failed], [0, 1]);
    await kept.loop.stop();
    const retried = await run(down.url);
    void retried.consumer.batch([old("m4")]);
    await until("a retry counted", () => (retried.told()?.retried ?? 0) >= 1);
    assert.ok(retried.told()!.oldestWaitingSeconds >= 5, `waiting ${retried.told()!.oldestWaitingSeconds} s`);
    await retried.loop.stop();
    assert.is(retried.told(), undefined);
  } finally {
    for (const r of [ok, down, strict]) close(r.server);
  }
});

test.run();
