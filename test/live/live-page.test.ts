/**
 * The live page (GET /live on the admin port) in Debian's Chromium, driven by puppeteer-core:
 * analytics.js, unmodified, on a page of another origin sends page, track and identify, and each
 * row appears with its messageId; an invalid batch item appears, refused, with its reason; with
 * two ingest processes (INGEST_WORKERS=2) the messages both served appear; a message whose event
 * name is markup is shown as text and runs nothing. Screenshots of the page under load are written
 * to .stack/screenshots for a person to look at.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { LiveItem } from "../../ingest/live/items";
import { settingsDocument } from "../../ingest/http/settings";
import { adminPort, basic, LiveStack, waitFor } from "../support/harness";
import { ROOT } from "../support/paths";
import { serveShop } from "../support/shop";

/** The few DOM members the page functions use (the project compiles without the DOM lib). */
interface Dom {
  document: {
    getElementById(id: string): { textContent: string | null } | null;
    querySelector(selector: string): unknown;
    querySelectorAll(selector: string): { length: number };
  };
  __pwned?: number;
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SHOTS = join(ROOT, ".stack", "screenshots");
const TOKEN = `page-token-${randomUUID()}`;
const WORKSPACE = `ws-page-${randomUUID().slice(0, 8)}`;

const stack = new LiveStack({
  ADMIN_TOKEN: TOKEN,
  WRITE_KEYS: `web-key=${WORKSPACE}`,
  INGEST_WORKERS: "2",
  LOG_LEVEL: "debug",
  KAFKA_REJECTED_TOPIC: `test-rejected-page-${randomUUID().slice(0, 8)}`,
});
const view = suite("the live page in Chromium (live)");
let browser: Browser;
let site: Server;
let siteOrigin = "";
let admin = "";
let livePage: Page;
/** The shop pages opened, closed after each test also when it failed. */
const shops: Page[] = [];
/** Errors the live page threw or logged: none is expected. */
const pageErrors: string[] = [];

view.before(async () => {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM} (test/run.sh installs Debian's chromium)`);
  await stack.start();
  admin = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
  site = await serveShop();
  siteOrigin = `http://localhost:${(site.address() as AddressInfo).port}`;
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-dev-shm-usage",
      // The live page stays open behind the shop's: it must not be throttled as a hidden tab.
      "--disable-background-timer-throttling",
      "--disable-renderer-backgrounding",
      "--disable-backgrounding-occluded-windows",
    ],
  });
  livePage = await browser.newPage();
  livePage.on("pageerror", (error) => pageErrors.push(String(error)));
  livePage.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(message.text());
  });
  await livePage.setViewport({ width: 1280, height: 800 });
  await livePage.goto(`${admin}/live`);
  await livePage.type("input[name=workspaceId]", WORKSPACE);
  await livePage.type("input[name=token]", TOKEN);
  await livePage.click("button[type=submit].primary");
  await livePage.waitForFunction(() => (globalThis as unknown as Dom).document.getElementById("status")?.textContent === "live", {
    timeout: 20_000,
  });
});

view.after.each(async () => {
  await Promise.all(shops.splice(0).map((shop) => shop.close().catch(() => undefined)));
  await livePage?.bringToFront();
});

view.after(async () => {
  await browser?.close();
  await new Promise((resolve) => site?.close(resolve));
  const kafkaAdmin = stack.kafka.admin();
  await kafkaAdmin.connect();
  await kafkaAdmin.deleteTopics({ topics: [stack.env.KAFKA_REJECTED_TOPIC!] }).catch(() => undefined);
  await kafkaAdmin.disconnect();
  await stack.stop();
});

/** The messageIds the live page shows now. */
const shown = () =>
  livePage.$$eval("tr.item", (rows) => rows.map((r) => (r as unknown as { dataset: { messageId?: string } }).dataset.messageId ?? ""));

/** What /live/recent has of this workspace. */
async function recent(limit = 200): Promise<LiveItem[]> {
  const response = await fetch(`${admin}/live/recent?workspaceId=${WORKSPACE}&limit=${limit}`, {
    headers: { Authorization: `Bearer ${TOKEN}` },
  });
  return ((await response.json()) as { items: LiveItem[] }).items;
}

view("analytics.js on another origin sends page, track and identify: each appears on the page with its messageId", async () => {
  const shop = await browser.newPage();
  shops.push(shop);
  await shop.goto(`${siteOrigin}/`);
  const userId = `shopper-${randomUUID().slice(0, 6)}`;
  const settings = settingsDocument("web-key", { protocol: "http", host: new URL(stack.base).host });
  await shop.evaluate(
    async (settings, userId) => {
      const { AnalyticsBrowser } = (
        globalThis as unknown as { AnalyticsNext: { AnalyticsBrowser: { load: (...a: unknown[]) => unknown } } }
      ).AnalyticsNext;
      const analytics = AnalyticsBrowser.load({ writeKey: "web-key", cdnSettings: settings }) as Record<
        string,
        (...a: unknown[]) => Promise<unknown>
      >;
      await analytics.page("Docs", "Pricing");
      await analytics.track("Plan Chosen", { plan: "pro" });
      await analytics.identify(userId, { plan: "pro" });
    },
    settings,
    userId,
  );
  await shop.close();
  await livePage.bringToFront();
  // One message of each type, as /live/recent has them (an SDK retry would add a second record).
  const sent = await waitFor("page, track and identify on /live/recent", async () => {
    const items = await recent();
    const page = items.find((i) => i.type === "page" && i.event === "Pricing");
    const track = items.find((i) => i.type === "track" && i.event === "Plan Chosen");
    const identify = items.find((i) => i.type === "identify" && i.userId === userId);
    return page && track && identify ? [page, track, identify] : undefined;
  });
  await livePage
    .waitForFunction(
      (ids: string[]) =>
        ids.every((id) => (globalThis as unknown as Dom).document.querySelector(`tr.item.accepted[data-message-id="${id}"]`)),
      { timeout: 10_000 },
      sent.map((i) => i.messageId),
    )
    .catch(async (error: unknown) => {
      const rows = await livePage.$$eval("tr.item", (trs) => trs.map((tr) => `${tr.className} ${tr.textContent}`));
      const status = await livePage.$eval("#status", (e) => e.textContent);
      const wanted = JSON.stringify(sent.map((i) => [i.type, i.messageId]));
      const reasons = (await recent()).filter((i) => i.status === "refused").map((i) => [i.messageId, i.reasons, i.message]);
      throw new Error(
        `${String(error)}; sent ${wanted}; the page (${status}) shows ${JSON.stringify(rows)}; refused ${JSON.stringify(reasons)}`,
      );
    });
  const track = await livePage.$eval(`tr.item[data-message-id="${sent[1]!.messageId}"]`, (tr) => tr.textContent ?? "");
  assert.match(track, "Plan Chosen", "the track row names its event");
  assert.match(track, "analytics.js", "and the library that sent it");
  assert.equal(
    pageErrors.filter((e) => !e.includes("404")),
    [],
    "the page threw nothing",
  );
});

view("an invalid batch item appears refused, with its reason; a message whose event is markup is shown as text", async () => {
  const id = randomUUID().slice(0, 8);
  const markup = `<img src=x onerror="window.__pwned=1">`;
  await stack.post(
    "/v1/batch",
    {
      batch: [
        { type: "track", messageId: `ok-${id}`, userId: "u1", event: markup },
        { type: "track", messageId: `bad-${id}`, userId: "u1", event: { not: "a string" } },
      ],
    },
    { authorization: basic("web-key") },
  );
  await livePage.waitForSelector(`tr.item.refused[data-message-id="bad-${id}"]`, { timeout: 10_000 });
  await livePage.waitForSelector(`tr.item.accepted[data-message-id="ok-${id}"]`, { timeout: 10_000 });
  await livePage.click(`tr.item.refused[data-message-id="bad-${id}"]`);
  const reasons = await livePage.$eval(`tr.item.refused[data-message-id="bad-${id}"] + tr.detail ul.reasons`, (ul) => ul.textContent ?? "");
  assert.match(reasons, "event");
  const shownEvent = await livePage.$eval(`tr.item.accepted[data-message-id="ok-${id}"] td:nth-child(4)`, (td) => td.textContent);
  assert.is(shownEvent, markup, "the markup is shown as text");
  assert.is(await livePage.evaluate(() => (globalThis as unknown as Dom).__pwned), undefined, "and runs nothing");
  assert.is(await livePage.$$eval("img", (imgs) => imgs.length), 0);
});

view("two ingest processes: the messages each of them acknowledged appear", async () => {
  const id = randomUUID().slice(0, 8);
  // One connection per request, so node:cluster spreads them over both workers.
  const post = (n: number) =>
    new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({ messageId: `w-${id}-${n}`, userId: "u-w", event: "Worker" });
      const req = request(`${stack.base}/v1/track`, {
        method: "POST",
        agent: false,
        headers: { authorization: basic("web-key"), "content-type": "application/json", connection: "close" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end(body);
    });
  // node:cluster hands connections only to workers already listening: wait for both (each opens
  // its producer and the country database first, slower on a busy machine).
  const listening = () =>
    new Set(
      stack
        .ingest!.output()
        .split("\n")
        .filter((l) => l.includes('"msg":"ingest listening"'))
        .map((l) => (JSON.parse(l) as { pid: number }).pid),
    );
  await waitFor("both ingest workers listening", async () => (listening().size >= 2 ? true : undefined), 30_000);
  const statuses = await Promise.all(Array.from({ length: 40 }, (_, n) => post(n)));
  assert.ok(statuses.every((s) => s === 200));
  // Each worker logs a request before answering it, but its line reaches this process's pipe when
  // it reaches it: read until both workers' lines are in (or the wait's end says how many were).
  const served = () =>
    new Set(
      stack
        .ingest!.output()
        .split("\n")
        .filter((l) => l.includes('"msg":"request"') && l.includes(`"route":"/v1/track"`))
        .map((l) => (JSON.parse(l) as { pid: number }).pid),
    );
  const pids = await waitFor("both workers' request lines", async () => (served().size >= 2 ? served() : undefined), 10_000).catch(() =>
    served(),
  );
  assert.ok(pids.size >= 2, `requests served by ${pids.size} process(es)`);
  await livePage.waitForFunction(
    (prefix: string) => (globalThis as unknown as Dom).document.querySelectorAll(`tr.item[data-message-id^="${prefix}"]`).length === 40,
    { timeout: 15_000 },
    `w-${id}-`,
  );
  assert.is((await shown()).filter((m) => m.startsWith(`w-${id}-`)).length, 40);
});

view("acknowledgement to the row on the page: p50 and p99 over 100 messages", async () => {
  const id = randomUUID().slice(0, 8);
  // The page records when each row appears (Date.now(): the same clock as this process's).
  await livePage.evaluate((prefix: string) => {
    const g = globalThis as unknown as {
      __rowAt: Record<string, number>;
      MutationObserver: new (f: () => void) => { observe(n: unknown, o: unknown): void };
    } & Dom;
    g.__rowAt = {};
    const rows = g.document.getElementById("rows");
    new g.MutationObserver(() => {
      for (const tr of (rows as unknown as { querySelectorAll(s: string): { dataset: { messageId?: string } }[] }).querySelectorAll(
        `tr.item[data-message-id^="${prefix}"]`,
      )) {
        const messageId = tr.dataset.messageId!;
        g.__rowAt[messageId] ??= Date.now();
      }
    }).observe(rows, { childList: true });
  }, `lat-${id}-`);
  const acked: [string, number][] = [];
  for (let n = 0; n < 100; n++) {
    const messageId = `lat-${id}-${n}`;
    const answer = await stack.post("/v1/track", { messageId, userId: "u-lat", event: "Latency" }, { authorization: basic("web-key") });
    assert.is(answer.status, 200);
    acked.push([messageId, Date.now()]);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const rowAt = await waitFor(
    "the 100 rows on the page",
    async () => {
      const seen = await livePage.evaluate(() => (globalThis as unknown as { __rowAt: Record<string, number> }).__rowAt);
      return Object.keys(seen).length === 100 ? seen : undefined;
    },
    15_000,
  );
  const delays = acked.map(([messageId, at]) => rowAt[messageId]! - at).sort((a, b) => a - b);
  const p = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!;
  console.log(`  acknowledgement -> row on the page, 100 messages: p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${p(1)} ms`);
  assert.ok(p(1) < 5_000, "every row within 5 s of its acknowledgement");
});

view("under load: the page keeps up, pause holds rows back, and screenshots are written for a person to look at", async () => {
  mkdirSync(SHOTS, { recursive: true });
  const id = randomUUID().slice(0, 8);
  const types = ["track", "page", "screen", "identify"];
  for (let round = 0; round < 10; round++) {
    const batch: Record<string, unknown>[] = Array.from({ length: 50 }, (_, n) => {
      const type = types[n % types.length]!;
      return {
        type,
        messageId: `load-${id}-${round}-${n}`,
        userId: `user-${n % 7}`,
        ...(type === "track" ? { event: ["Order Completed", "Product Viewed", "Cart Updated"][n % 3] } : {}),
        ...(type === "page" || type === "screen" ? { name: ["Home", "Checkout", "Settings"][n % 3] } : {}),
        properties: { price: n, currency: "EUR" },
        context: { library: { name: "analytics-node", version: "3.1.0" } },
      };
    });
    batch.push({ type: "track", messageId: `load-bad-${id}-${round}`, userId: "user-1", event: 7 });
    await stack.post("/v1/batch", { batch }, { authorization: basic("web-key") });
  }
  await livePage.waitForSelector(`tr.item[data-message-id="load-${id}-9-49"]`, { timeout: 15_000 });
  await livePage.screenshot({ path: join(SHOTS, "live-under-load.png") });
  await livePage.click("tr.item.refused");
  await livePage.screenshot({ path: join(SHOTS, "live-refused-open.png") });
  await livePage.click("#pause");
  const before = (await shown()).length;
  await stack.post("/v1/track", { messageId: `paused-${id}`, userId: "u", event: "While Paused" }, { authorization: basic("web-key") });
  await livePage.waitForFunction(
    () => /waiting/.test((globalThis as unknown as Dom).document.getElementById("counts")?.textContent ?? ""),
    { timeout: 10_000 },
  );
  assert.is((await shown()).length, before, "no row added while paused");
  await livePage.screenshot({ path: join(SHOTS, "live-paused.png") });
  await livePage.click("#pause");
  await livePage.waitForSelector(`tr.item[data-message-id="paused-${id}"]`, { timeout: 5_000 });
  console.log(`  screenshots in ${SHOTS}`);
});

view.run();
