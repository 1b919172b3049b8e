/**
 * The delivery process's destinations (sink/deliver/destinations.ts) over stand-in loops: a loop
 * is registered only once it started, a failed start is tried again with backoff and gives way to
 * a newer change; a change of workspace starts a new loop instead of updating the old one; a
 * record that does not read as a destination is ignored (the last good state stays), a tombstone
 * removes.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import pino from "pino";
import type { WebhookDestination } from "../../../../schemas/destinations";
import { Destinations, type RunningLoop } from "../../../../sink/deliver/destinations";
import { webhookDestination } from "../../../support/admin-fixtures";

const log = pino({ level: "silent" });

/** A loop that fails its first `failures` starts (counted over every loop of the test). */
class FakeLoop implements RunningLoop {
  started = false;
  stopped = false;
  readonly updates: WebhookDestination[] = [];
  constructor(
    public destination: WebhookDestination,
    private readonly fail: () => boolean,
  ) {}
  get workspaceId() {
    return this.destination.workspaceId;
  }
  async start() {
    if (this.fail()) throw new Error("Kafka unreachable");
    this.started = true;
  }
  async stop() {
    this.stopped = true;
  }
  update(destination: WebhookDestination) {
    this.updates.push(destination);
    this.destination = destination;
  }
}

function setUp(failures = 0) {
  const made: FakeLoop[] = [];
  const deleted: string[] = [];
  let left = failures;
  const destinations = new Destinations({
    newLoop: (d) => {
      const loop = new FakeLoop(d, () => left-- > 0);
      made.push(loop);
      return loop;
    },
    deleteGroup: async (id) => {
      deleted.push(id);
    },
    backoff: { minMs: 20, maxMs: 40 },
    log,
  });
  return { destinations, made, deleted };
}

const CREATED = "2026-11-01T00:00:00.000Z";
const d = (over: Partial<WebhookDestination> = {}) => webhookDestination("d-1", "w1", { createdAt: CREATED, updatedAt: CREATED, ...over });
const record = (destination: WebhookDestination) => Buffer.from(JSON.stringify(destination));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, check: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(5);
  }
}

test("a loop is registered only once it started; a failed start is tried again with backoff, each time with a new loop", async () => {
  const { destinations, made } = setUp(2);
  destinations.apply("d-1", d());
  await sleep(5);
  assert.is(destinations.running, 0, "not registered while it does not start");
  await until("started", () => destinations.running === 1);
  assert.is(made.length, 3, "two failed starts, then one that started");
  assert.ok(made[0]!.stopped && made[1]!.stopped, "each failed loop was stopped (its consumer closed, its gauge 0)");
  assert.ok(made[2]!.started && !made[2]!.stopped);
  destinations.apply("d-1", d({ url: "http://127.0.0.1:9/new" }));
  await sleep(10);
  assert.equal(
    made[2]!.updates.map((u) => u.url),
    ["http://127.0.0.1:9/new"],
    "a later change reaches the running loop",
  );
  await destinations.stopAll();
  assert.ok(made[2]!.stopped);
});

test("a pause arriving while a start is retried ends the retries: nothing starts", async () => {
  const { destinations, made } = setUp(1_000);
  destinations.apply("d-1", d());
  await until("a few attempts", () => made.length >= 2);
  destinations.apply("d-1", d({ paused: true }));
  await sleep(100);
  const attempts = made.length;
  await sleep(100);
  assert.is(made.length, attempts, "no more attempts");
  assert.is(destinations.running, 0);
  await destinations.stopAll();
});

test("a change of workspace stops the loop and starts a new one: the old one is never updated to the other workspace", async () => {
  const { destinations, made } = setUp();
  destinations.apply("d-1", d());
  await until("started", () => destinations.running === 1);
  destinations.apply("d-1", d({ workspaceId: "w2", url: "http://127.0.0.1:9/w2" }));
  await until("a second loop", () => made.length === 2 && made[1]!.started);
  assert.ok(made[0]!.stopped, "the w1 loop stopped");
  assert.equal(made[0]!.updates, [], "never updated to w2");
  assert.is(made[1]!.workspaceId, "w2");
  assert.is(destinations.running, 1);
  await destinations.stopAll();
});

test("a record that does not read as this id's destination is ignored: the loop runs on; a tombstone removes it", async () => {
  const { destinations, made, deleted } = setUp();
  destinations.applyRecord("d-1", record(d()));
  await until("started", () => destinations.running === 1);
  destinations.applyRecord("d-1", Buffer.from('{"destinationId":"d-1","kind":"webhook","version":2,"future":true}'));
  destinations.applyRecord("d-1", Buffer.from("not json"));
  destinations.applyRecord("d-1", record(d({ destinationId: "d-2" })));
  await sleep(50);
  assert.is(destinations.running, 1, "still delivering");
  assert.not.ok(made[0]!.stopped, "not stopped");
  assert.equal(deleted, [], "its group kept");
  destinations.applyRecord("d-1", null);
  await until("removed", () => destinations.running === 0);
  assert.ok(made[0]!.stopped);
  assert.equal(deleted, ["d-1"], "a removed destination's group deleted");
});

test.run();
