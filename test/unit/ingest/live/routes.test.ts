/**
 * The live view's routes (ingest/live/routes.ts) on the admin app in this process, with a stand-in
 * for the Kafka tail: the token, the workspace and filters, the stream's backlog and live items,
 * the viewer bound, a viewer too slow to read, and the page's headers. The real tail against Kafka
 * is test/live/live.test.ts.
 */
import { once } from "node:events";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LiveFeed, sseFrame } from "../../../../ingest/live/feed";
import type { LiveFilter, LiveItem, LiveRecord } from "../../../../ingest/live/items";
import { LIVE_CSP, liveRouter } from "../../../../ingest/live/routes";
import type { LiveWatcher } from "../../../../ingest/live/thread";
import { adminGuard, metricsApp } from "../../../../ingest/http/admin";
import { AdminTokens, FailedAttempts } from "../../../../ingest/admission/tokens";
import { ingestMetrics, type IngestMetrics } from "../../../../ingest/metrics";
import { acceptedRecord, refusedRecord } from "../../../support/live-records";

const TOKEN = "a-long-enough-admin-token";
const routes = suite("live routes, in process");

/**
 * The tail's stand-in: the worker's feed (ingest/live/feed.ts) in this thread, the watchers, and
 * how many hold it; `startMs`: how long acquire takes (a Kafka consumer joining); `recentMs`: how
 * long a recent answer takes (a busy worker).
 */
function standInTail() {
  const feed = new LiveFeed({ records: 1_000, bytes: 64 * 1024 * 1024 });
  const watchers = new Map<number, LiveWatcher>();
  const state = { holders: 0, startMs: 0, recentMs: 0 };
  let next = 1;
  return {
    state,
    feed,
    acquire: async () => {
      if (state.startMs > 0) await new Promise((resolve) => setTimeout(resolve, state.startMs));
      state.holders++;
      return () => void state.holders--;
    },
    recent: async (filter: LiveFilter, limit: number) => {
      if (state.recentMs > 0) await new Promise((resolve) => setTimeout(resolve, state.recentMs));
      return feed.newest(filter, limit);
    },
    watch: (filter: LiveFilter, backlog: number, watcher: LiveWatcher) => {
      const id = next++;
      watchers.set(id, watcher);
      const entries = feed.watch(id, filter, backlog);
      watcher.frames(entries.map((e) => sseFrame(e.id, e.json)).join(""), entries.length);
      return () => {
        watchers.delete(id);
        feed.unwatch(id);
      };
    },
    emit(record: LiveRecord) {
      const delivery = feed.take(record);
      for (const id of delivery?.watchers ?? []) watchers.get(id)?.frames(sseFrame(delivery!.id, delivery!.json), 1);
    },
  };
}

let tail: ReturnType<typeof standInTail>;
let metrics: IngestMetrics;
let server: Server;
let base: string;

async function serve(adminToken: string | undefined, maxViewers = 1) {
  tail = standInTail();
  metrics = ingestMetrics();
  const live = liveRouter({
    tail,
    guard: adminGuard(new AdminTokens(adminToken, { token: () => undefined }), new FailedAttempts()),
    maxViewers,
    maxRecent: 2,
    workspaces: () => ["ws2", "ws1", "ws1"],
    metrics,
    log: pino({ level: "silent" }),
  });
  server = createServer(metricsApp(metrics, live).callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
routes.before.each(() => serve(TOKEN));
routes.after.each(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

const auth = { Authorization: `Bearer ${TOKEN}` };
const get = (path: string, headers: Record<string, string> = auth) => fetch(`${base}${path}`, { headers });

/** Reads SSE frames from a fetch response until `want` of them, or `ms` pass. */
async function frames(response: Response, want: number, ms = 2_000): Promise<{ event: string; data: unknown }[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const found: { event: string; data: unknown }[] = [];
  let text = "";
  const deadline = Date.now() + ms;
  while (found.length < want && Date.now() < deadline) {
    const chunk = await Promise.race([reader.read(), new Promise<undefined>((r) => setTimeout(() => r(undefined), deadline - Date.now()))]);
    if (chunk === undefined || chunk.done) break;
    text += decoder.decode(chunk.value, { stream: true });
    const parts = text.split("\n\n");
    text = parts.pop()!;
    for (const part of parts) {
      const event = /^event:\s?(.*)$/m.exec(part)?.[1];
      const data = /^data:\s?(.*)$/m.exec(part)?.[1];
      if (event !== undefined && data !== undefined) found.push({ event, data: JSON.parse(data) });
    }
  }
  await reader.cancel();
  return found;
}

routes("every data route needs the bearer token; a wrong one is refused like none", async () => {
  for (const path of ["/live/recent?workspaceId=ws1", "/live/events?workspaceId=ws1", "/live/workspaces"]) {
    const none = await get(path, {});
    assert.is(none.status, 401, path);
    assert.match(none.headers.get("www-authenticate") ?? "", /^Bearer/);
    assert.is((await get(path, { Authorization: "Bearer not-the-token" })).status, 401, path);
  }
  assert.equal(await (await get("/live/workspaces")).json(), { workspaces: ["ws1", "ws2"] });
});

routes("without ADMIN_TOKEN the live view is off: every data request is refused, saying why", async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await serve(undefined);
  const response = await get("/live/recent?workspaceId=ws1");
  assert.is(response.status, 401);
  assert.match(JSON.stringify(await response.json()), "ADMIN_TOKEN");
});

routes("recent: workspaceId is required; newest first, one workspace, filtered", async () => {
  assert.is((await get("/live/recent")).status, 400);
  tail.emit(acceptedRecord("ws1", { type: "track", messageId: "a", userId: "u1", event: "A" }));
  tail.emit(acceptedRecord("ws2", { type: "track", messageId: "other", userId: "u1", event: "A" }));
  tail.emit(acceptedRecord("ws1", { type: "identify", messageId: "b", userId: "u1" }));
  tail.emit(refusedRecord("ws1", { type: "track", messageId: "c", event: 1 }, ["event: string"]));
  const all = (await (await get("/live/recent?workspaceId=ws1")).json()) as { items: LiveItem[] };
  assert.equal(
    all.items.map((i) => `${i.status}:${i.messageId}`),
    ["refused:c", "accepted:b", "accepted:a"],
  );
  const tracks = (await (await get("/live/recent?workspaceId=ws1&type=track&limit=1")).json()) as { items: LiveItem[] };
  assert.equal(
    tracks.items.map((i) => i.messageId),
    ["c"],
  );
  assert.is(tail.state.holders, 0, "released after the answer");
});

routes("the stream sends the recent items first, then each new one of its workspace; a second viewer past the bound gets 503", async () => {
  tail.emit(acceptedRecord("ws1", { type: "track", messageId: "before", userId: "u1", event: "A" }));
  const response = await get("/live/events?workspaceId=ws1");
  assert.is(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", "text/event-stream");
  assert.is((await get("/live/events?workspaceId=ws1")).status, 503, "LIVE_MAX_VIEWERS is 1 here");
  setTimeout(() => {
    tail.emit(acceptedRecord("ws2", { type: "track", messageId: "elsewhere", userId: "u1", event: "A" }));
    tail.emit(acceptedRecord("ws1", { type: "track", messageId: "after", userId: "u1", event: "A" }));
  }, 100);
  const got = await frames(response, 2);
  assert.equal(
    got.map((f) => `${f.event}:${(f.data as LiveItem).messageId}`),
    ["item:before", "item:after"],
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.is(tail.state.holders, 0, "the tail is released when the viewer goes");
});

routes("a viewer gone while the tail is still starting gives back its place and the tail", async () => {
  tail.state.startMs = 300;
  for (let i = 0; i < 3; i++) {
    const leave = new AbortController();
    const gone = fetch(`${base}/live/events?workspaceId=ws1`, { headers: auth, signal: leave.signal }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    leave.abort(); // the client leaves before the tail answered
    await gone;
  }
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.is(tail.state.holders, 0, "the tail is released");
  const response = await get("/live/events?workspaceId=ws1");
  assert.is(response.status, 200, "the one viewer place (LIVE_MAX_VIEWERS 1) is free again");
  await response.body?.cancel();
});

routes("recent: past LIVE_MAX_RECENT calls at once, the next is answered 503 with Retry-After; the place is given back", async () => {
  tail.emit(acceptedRecord("ws1", { type: "track", messageId: "a", userId: "u1", event: "A" }));
  tail.state.recentMs = 300;
  const path = "/live/recent?workspaceId=ws1";
  const held = [get(path), get(path)]; // LIVE_MAX_RECENT is 2 here
  await new Promise((resolve) => setTimeout(resolve, 50));
  const over = await get(path);
  assert.is(over.status, 503);
  assert.is(over.headers.get("retry-after"), "1");
  assert.is(((await over.json()) as { error: string }).error, "busy");
  assert.equal(
    (await Promise.all(held)).map((r) => r.status),
    [200, 200],
  );
  tail.state.recentMs = 0;
  assert.is((await get(path)).status, 200, "free again");
});

routes("three viewers of one workspace and a recent call: each record is decoded once", async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await serve(TOKEN, 3);
  const viewers = await Promise.all([1, 2, 3].map(() => get("/live/events?workspaceId=ws1")));
  assert.equal(
    viewers.map((r) => r.status),
    [200, 200, 200],
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  setTimeout(() => {
    for (let n = 0; n < 10; n++) tail.emit(refusedRecord("ws1", { type: "track", messageId: `r-${n}`, event: n }, ["event: string"]));
    tail.emit(refusedRecord("ws2", { type: "track", messageId: "unwatched", event: 1 }, ["event: string"]));
  }, 50);
  const got = await Promise.all(viewers.map((r) => frames(r, 10)));
  assert.equal(
    got.map((f) => f.length),
    [10, 10, 10],
  );
  assert.is(((await (await get("/live/recent?workspaceId=ws1&limit=100")).json()) as { items: unknown[] }).items.length, 10);
  assert.is(tail.feed.decoded, 10, "ten records, three viewers and a recent call: ten decodes; the unwatched workspace's none");
});

routes("a viewer that does not read is skipped past its buffer bound, and told how many it missed", async () => {
  const path = "/live/events?workspaceId=ws1";
  const req = request(`${base}${path}`, { headers: auth });
  req.end();
  const [response] = (await once(req, "response")) as [import("node:http").IncomingMessage];
  response.pause(); // the viewer reads nothing
  const big = { type: "track", messageId: "", userId: "u1", event: "Big", properties: { pad: "x".repeat(30_000) } };
  for (let n = 0; n < 400; n++) tail.emit(acceptedRecord("ws1", { ...big, messageId: `big-${n}` }));
  const dropped = (await metrics.liveDropped.get()).values[0]?.value ?? 0;
  assert.ok(dropped > 0, "items were skipped rather than held");
  let buffered = 0;
  response.on("data", (chunk: Buffer) => (buffered += chunk.length));
  response.resume();
  await new Promise((resolve) => setTimeout(resolve, 300));
  tail.emit(acceptedRecord("ws1", { type: "track", messageId: "last", userId: "u1", event: "A" }));
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.ok(buffered < 400 * 30_000, `the viewer got ${buffered} bytes, not every item`);
  req.destroy();
});

routes("the page: no asset from another host, a policy that allows only this origin, no data without the token", async () => {
  const page = await get("/live", {});
  assert.is(page.status, 200);
  const html = await page.text();
  assert.not.match(html, /https?:\/\//, "no absolute URL");
  assert.match(page.headers.get("content-security-policy") ?? "", "default-src 'none'");
  const script = await (await get("/live/page.js", {})).text();
  assert.not.match(script, /https?:\/\//);
  assert.not.match(script, "innerHTML", "message content never becomes markup");
});

routes("the page, its style sheet and its script: the strict policy (no inline style or script), nosniff, no referrer", async () => {
  const html = await (await get("/live", {})).text();
  assert.not.match(html, /<style|style=/, "no inline style: the policy would refuse it");
  assert.match(html, '<link rel="stylesheet" href="/live/page.css">');
  for (const [path, type] of [
    ["/live", "text/html"],
    ["/live/page.css", "text/css"],
    ["/live/page.js", "text/javascript"],
  ] as const) {
    const answer = await get(path, {});
    assert.is(answer.status, 200, path);
    assert.match(answer.headers.get("content-type") ?? "", type, path);
    const csp = answer.headers.get("content-security-policy") ?? "";
    assert.is(csp, LIVE_CSP, path);
    assert.not.match(csp, "unsafe-inline", path);
    assert.not.match(csp, "data:", path);
    assert.match(csp, "frame-ancestors 'none'", path);
    assert.is(answer.headers.get("x-content-type-options"), "nosniff", path);
    assert.is(answer.headers.get("referrer-policy"), "no-referrer", path);
  }
  assert.match(await (await get("/live/page.css", {})).text(), "box-sizing", "the page's rules");
});

routes.run();
