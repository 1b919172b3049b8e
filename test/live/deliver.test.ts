/**
 * Webhook delivery end to end on the real local stack: events posted to the ingest reach HTTP
 * receivers this test starts on 127.0.0.1 (the user's services, as a user runs them), through
 * the delivery process (sink/deliver/) and destinations added with the CLI. Every accepted
 * message reaches each matching destination at least once, by messageId (duplicates counted and
 * printed); `X-Signature` verifies at the receiver; batching; a receiver answering 500 for a while
 * gets everything in the end (a destination starts 10 s before its creation, so it may also get
 * some of the previous test's events: counts are of each test's own messageIds); a 400 is kept in delivery_failures and delivered by
 * `replay-failures` once the receiver is fixed (a suppressed user's left kept, not sent); integrations
 * and consent; a user deleted while their events wait for a retry is never delivered; a
 * destination added while traffic flows receives what follows. Each "gets none" is checked against
 * a positive control (a message that must arrive, sent after the ones that must not) and once the
 * destination's group has committed everything on the topic (no lag), so it cannot pass because
 * the destination never ran or has not reached them yet.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createHmac, randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { adminPort, LiveStack, sqlList, stopService, waitFor, type Service } from "../support/harness";

const SECRET_KEY = "test-destinations-secret-key-0123456789";
const ADMIN_TOKEN = "test-deliver-admin-token-0123456789";
const live = suite("webhook delivery (live)");
let stack: LiveStack;
let deliver: Service;
/** Every receiver started, closed at the end (an open server would keep the test process alive). */
const receivers: Receiver[] = [];

/** A receiver: what it got per messageId, and the answer it gives (changeable). */
class Receiver {
  readonly got = new Map<string, number>();
  readonly bodies: { body: Buffer; headers: IncomingMessage["headers"] }[] = [];
  answer: (body: Buffer) => number = () => 200;
  refused = 0;
  server!: Server;
  url = "";

  async start(): Promise<this> {
    receivers.push(this);
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const status = this.answer(body);
        if (status >= 500) this.refused++;
        if (status >= 200 && status < 300) {
          this.bodies.push({ body, headers: req.headers });
          const parsed = JSON.parse(body.toString()) as { batch?: { messageId: string }[]; messageId?: string };
          for (const m of parsed.batch ?? [parsed as { messageId: string }])
            this.got.set(m.messageId, (this.got.get(m.messageId) ?? 0) + 1);
        }
        res.writeHead(status, { "content-type": "application/json" }).end(`{"status":${status}}`);
      });
    });
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** How many of `ids` it got, and how many it got more than once. */
  count(ids: readonly string[]): { delivered: number; duplicates: number } {
    return { delivered: ids.filter((id) => this.got.has(id)).length, duplicates: ids.filter((id) => (this.got.get(id) ?? 0) > 1).length };
  }
}

/** Runs the CLI with the stack's env; its exit code and output. */
async function cli(args: string[], extra: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const service = stack.spawn("deploy/cli.js", { DESTINATIONS_SECRET_KEY: SECRET_KEY, SECRET: "shh-its-shared", ...extra }, args);
  const { code } = await service.exited;
  return { code, output: service.output() };
}

/** Adds a destination; its id. */
async function add(url: string, ...options: string[]): Promise<string> {
  const { code, output } = await cli(["destinations", "add", "ws-test", "webhook", url, ...options]);
  assert.is(code, 0, output);
  const id = output.split("\n").find((line) => /^d-[0-9a-f]{8}$/.test(line));
  assert.ok(id, output);
  return id!;
}

/** Posts `n` track events (in batches of 50) with `extra` fields; their messageIds. */
async function send(n: number, extra: Record<string, unknown> = {}): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  for (let i = 0; i < n; i += 50) {
    const batch = ids.slice(i, i + 50).map((messageId) => ({ type: "track", event: "Order Completed", userId: "u1", messageId, ...extra }));
    assert.is((await stack.post("/v1/batch", { batch })).status, 200);
  }
  return ids;
}

const all = (receiver: Receiver, ids: string[], ms = 60_000) =>
  waitFor(`${ids.length} deliveries`, async () => (receiver.count(ids).delivered === ids.length ? true : undefined), ms);

/** Waits until the destination's group has committed every record of the events topic: nothing it has not decided on is left. */
const caughtUp = (destinationId: string, ms = 90_000) =>
  waitFor(
    `${destinationId} without lag`,
    async () => {
      const { committed, end } = await stack.groupLag(stack.env.KAFKA_TOPIC!, `test-deliver-${stack.id}-${destinationId}`);
      return end > 0 && committed >= end ? true : undefined;
    },
    ms,
  );

live.before(async () => {
  stack = new LiveStack({ DESTINATIONS_SECRET_KEY: SECRET_KEY, ADMIN_TOKEN });
  await stack.start();
  deliver = stack.spawn("sink/deliver/main.js", { DELIVER_HTTP_PORT: "0", DELIVER_GROUP_PREFIX: `test-deliver-${stack.id}` });
  await waitFor("deliver listening", async () => (deliver.output().includes('"msg":"deliver listening"') ? true : undefined), 60_000);
});

live.after(async () => {
  if (deliver) await stopService(deliver);
  await stack?.stop();
  for (const r of receivers) {
    r.server.closeAllConnections();
    r.server.close();
  }
});

live("every accepted event reaches each matching destination, signed, one by one and batched; a filtered one gets none", async () => {
  const [single, batched, identifies] = await Promise.all([new Receiver().start(), new Receiver().start(), new Receiver().start()]);
  await add(single.url, "--secret-env", "SECRET");
  await add(batched.url, "--batch-size", "50", "--batch-wait-ms", "200");
  const identifyOnly = await add(identifies.url, "--types", "identify");
  await new Promise((r) => setTimeout(r, 3_000)); // the delivery process joins each destination's group
  const ids = await send(500);
  await Promise.all([all(single, ids), all(batched, ids)]);
  const counts = { single: single.count(ids), batched: batched.count(ids) };
  console.log(`  500 events: ${JSON.stringify(counts)}`);
  // The control: identify calls sent after the tracks reach it; then, with its group past every record, no track has.
  const identified = await send(10, { type: "identify", event: undefined, traits: { plan: "pro" } });
  await all(identifies, identified);
  await caughtUp(identifyOnly);
  assert.is(identifies.count(ids).delivered, 0, "a destination of identify calls gets no track");
  for (const { body, headers } of single.bodies.slice(0, 20))
    assert.is(headers["x-signature"], createHmac("sha1", "shh-its-shared").update(body).digest("hex"), "Segment's X-Signature verifies");
  assert.ok(
    batched.bodies.some(({ body }) => (JSON.parse(body.toString()) as { batch: unknown[] }).batch.length > 1),
    "batched requests",
  );
  const first = JSON.parse(single.bodies[0]!.body.toString()) as Record<string, unknown>;
  assert.is(first.type, "track");
  assert.is(first.event, "Order Completed");
  assert.ok(typeof first.receivedAt === "string" && typeof first.timestamp === "string" && typeof first.context === "object");
});

live("a receiver answering 500 for a while gets every event in the end", async () => {
  const flaky = await new Receiver().start();
  // 500 for 8 s from the first request carrying one of this test's events (earlier tests' events
  // in the destination's start margin are answered 200, so they cannot use up the 8 s).
  let failUntil = Infinity;
  flaky.answer = (body) => {
    if (!body.includes("u-flaky")) return 200;
    if (failUntil === Infinity) failUntil = Date.now() + 8_000;
    return Date.now() < failUntil ? 500 : 200;
  };
  const id = await add(flaky.url);
  await new Promise((r) => setTimeout(r, 3_000));
  const ids = await send(100, { userId: "u-flaky" });
  await all(flaky, ids, 90_000);
  console.log(`  500 for 8 s, then 200: ${JSON.stringify(flaky.count(ids))}`);
  // The live view shows each attempt: the retries answered 500, then the deliveries.
  const admin = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
  const mine = new Set(ids);
  const attempts = await waitFor(
    "the live view's deliveries",
    async () => {
      const answer = await fetch(`${admin}/live/recent?workspaceId=ws-test&userId=u-flaky&limit=1000`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      const { items } = (await answer.json()) as { items: { status: string; messageId: string; delivery?: Record<string, unknown> }[] };
      const ours = items.filter((i) => i.status === "delivery" && i.delivery?.destinationId === id && mine.has(i.messageId));
      return ours.filter((i) => i.delivery?.outcome === "delivered").length === ids.length ? ours : undefined;
    },
    30_000,
  );
  const retried = attempts.filter((i) => i.delivery?.outcome === "retry");
  assert.ok(
    retried.length > 0 && retried.every((i) => i.delivery?.status === 500),
    `retries shown with their 500 (${flaky.refused} answered 500)`,
  );
  assert.ok(
    attempts.some((i) => i.delivery?.outcome === "delivered" && Number(i.delivery.attempt) > 1),
    "a later attempt delivered",
  );
});

live("a 400 is kept in delivery_failures; replay-failures delivers it once the receiver is fixed", async () => {
  const strict = await new Receiver().start();
  strict.answer = () => 400;
  const id = await add(strict.url);
  await new Promise((r) => setTimeout(r, 3_000));
  const ids = await send(20);
  const hushed = await send(5, { userId: "u-hush" });
  const said = () =>
    deliver
      .output()
      .split("\n")
      .filter((l) => l.includes('"level":40') || l.includes('"level":50'))
      .slice(-3)
      .join(" | ");
  const kept = await waitFor(
    "20 kept failures",
    async () => {
      const rows = await stack.select<{ n: string }>(
        `SELECT count() AS n FROM ${stack.database}.delivery_failures FINAL WHERE destination_id = '${id}' AND resolved = 0 AND status = 400 AND message_id IN (${sqlList([...ids, ...hushed])})`,
      );
      return Number(rows[0]!.n) === 25 ? 20 : undefined;
    },
    60_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; the delivery process said: ${said()}`);
  });
  assert.is(kept, 20);
  assert.is(strict.got.size, 0);
  // u-hush objects after their events were kept: replay-failures must not send them on.
  const suppressed = await cli(["users", "suppress", "ws-test", "u-hush"]);
  assert.is(suppressed.code, 0, suppressed.output);
  strict.answer = () => 200;
  const replay = await cli(["destinations", "replay-failures", id]);
  assert.is(replay.code, 0, replay.output);
  assert.match(replay.output, /20 delivered\t0 still failing\t5 skipped/);
  assert.equal(strict.count(ids), { delivered: 20, duplicates: 0 });
  assert.is(strict.count(hushed).delivered, 0, "none of the suppressed user's kept failures sent");
  const left = await stack.select<{ message_id: string }>(
    `SELECT message_id FROM ${stack.database}.delivery_failures FINAL WHERE destination_id = '${id}' AND resolved = 0`,
  );
  assert.equal(
    left.map((r) => r.message_id).sort(),
    [...hushed].sort(),
    "every other failure resolved; the suppressed user's left as they were",
  );
});

live("integrations and consent keep messages from a destination as Segment does", async () => {
  const receiver = await new Receiver().start();
  const id = await add(receiver.url, "--name", "My Hook", "--categories", "analytics");
  await new Promise((r) => setTimeout(r, 3_000));
  const sent = await send(5);
  const offByAll = await send(5, { integrations: { All: false } });
  const onByName = await send(5, { integrations: { All: false, "My Hook": true } });
  const offByName = await send(5, { integrations: { "My Hook": false } });
  const denied = await send(5, { context: { consent: { categoryPreferences: { analytics: false } } }, integrations: { "My Hook": true } });
  const granted = await send(5, { context: { consent: { categoryPreferences: { analytics: true, ads: false } } } });
  const control = await send(10); // sent after the ones that must not arrive: must arrive
  await all(receiver, [...sent, ...onByName, ...granted, ...control]);
  await caughtUp(id);
  for (const [name, ids] of Object.entries({ offByAll, offByName, denied })) assert.is(receiver.count(ids).delivered, 0, name);
});

live("a user deleted while their events wait for a retry is never delivered; a destination added later gets what follows", async () => {
  const down = await new Receiver().start();
  down.answer = () => 503;
  const downId = await add(down.url);
  await new Promise((r) => setTimeout(r, 3_000));
  const theirs = await send(10, { userId: "u-gone" });
  const others = await send(10, { userId: "u-stays" });
  await new Promise((r) => setTimeout(r, 2_000));
  const deleted = await cli(["users", "delete", "ws-test", "u-gone"], { PRIVACY_SINK_WAIT_MS: "0" });
  assert.is(deleted.code, 0, deleted.output);
  await new Promise((r) => setTimeout(r, 2_000));
  down.answer = () => 200;
  await all(down, others, 90_000);
  // u-gone's requests on other partitions may still wait for their retry: something sent after
  // must arrive, and the group must have decided on every record, before "none" means anything.
  const control = await send(10, { userId: "u-stays" });
  await all(down, control, 90_000);
  await caughtUp(downId);
  assert.is(down.count(theirs).delivered, 0, "none of the deleted user's events");
  const late = await new Receiver().start();
  const flowing = send(200);
  await add(late.url);
  await flowing;
  await new Promise((r) => setTimeout(r, 3_000));
  const after = await send(50);
  await all(late, after);
  console.log(`  added while traffic flowed: got ${late.got.size} messages, every one of the 50 sent after it`);
});

live.run();
