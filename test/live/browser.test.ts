/**
 * analytics.js (@segment/analytics-next, from its npm package, unmodified) in a real headless
 * Chromium (Debian's, driven by puppeteer-core), on a page served from another origin than the
 * ingest: settings inline, settings fetched from the ingest, and the batching delivery strategy.
 * Every type it sends lands once under FINAL with the ids it sent; a message it retries after a
 * 503 lands once; fetch with keepalive (after its preflight) and navigator.sendBeacon (no
 * preflight, writeKey in the body) both land. test/run.sh installs Chromium on first run.
 */
import { existsSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { settingsDocument } from "../../ingest/http/settings";
import { basic, LiveStack, waitFor } from "../support/harness";
import { serveShop } from "../support/shop";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

const stack = new LiveStack();
const web = suite("analytics.js in Chromium (live)");
let browser: Browser;
let site: Server;
let siteOrigin = "";

web.before(async () => {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM} (test/run.sh installs Debian's chromium)`);
  await stack.start();
  site = await serveShop();
  siteOrigin = `http://localhost:${(site.address() as AddressInfo).port}`; // another origin than 127.0.0.1:<ingest>
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
});

web.after(async () => {
  await browser?.close();
  await new Promise((resolve) => site?.close(resolve));
  await stack.stop();
});

/** The options analytics.js is loaded with in one mode. */
interface Mode {
  name: string;
  settings: Record<string, unknown>;
  options?: Record<string, unknown>;
}

const ingestHost = () => new URL(stack.base).host;
const inlineSettings = () => settingsDocument("test-key", { protocol: "http", host: ingestHost() });

/**
 * Loads analytics.js on a fresh page and sends identify, track, page, group and alias as `userId`
 * (alias to `${userId}-new`); resolves with the anonymousId it kept.
 */
async function sendEveryType(page: Page, mode: Mode, userId: string): Promise<string> {
  await page.goto(`${siteOrigin}/`);
  return page.evaluate(
    async (settings, options, userId) => {
      const { AnalyticsBrowser } = (
        globalThis as unknown as { AnalyticsNext: { AnalyticsBrowser: { load: (...a: unknown[]) => unknown } } }
      ).AnalyticsNext;
      const analytics = AnalyticsBrowser.load(settings, options) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>> &
        PromiseLike<unknown>;
      await analytics.identify(userId, { email: `${userId}@x.test`, plan: "pro" });
      await analytics.track("Browser Test", { sku: "a-1", price: 12.5 });
      await analytics.page("Docs", "Home");
      await analytics.group(`g-${userId}`, { name: "Acme" });
      await analytics.alias(`${userId}-new`, userId);
      const [instance] = (await (analytics as unknown as PromiseLike<[{ user: () => { anonymousId: () => string } }]>)) ?? [];
      return instance!.user().anonymousId();
    },
    mode.settings,
    mode.options ?? {},
    userId,
  );
}

/** Rows under FINAL of one browser user (before and after its alias), by type, with duplicates counted. */
async function rowsOfUser(userId: string): Promise<{ type: string; n: number; userId: string; anonymousId: string; context: string }[]> {
  // 18.16 resolves an alias before a column of the same name, so the aggregates get other names.
  const rows = await stack.select<{ type: string; n: string; uid: string; anon: string; ctx: string }>(
    `SELECT type, count() AS n, any(user_id) AS uid, any(anonymous_id) AS anon, any(context) AS ctx
     FROM ${stack.table} FINAL WHERE user_id IN ('${userId}', '${userId}-new') GROUP BY type ORDER BY type`,
  );
  return rows.map((r) => ({ type: r.type, n: Number(r.n), userId: r.uid, anonymousId: r.anon, context: r.ctx }));
}

const modes = (): Mode[] => [
  { name: "settings inline", settings: { writeKey: "test-key", cdnSettings: inlineSettings() } },
  { name: "settings fetched from the ingest", settings: { writeKey: "test-key", cdnURL: stack.base } },
  {
    name: "batching delivery",
    settings: { writeKey: "test-key", cdnSettings: inlineSettings() },
    options: { integrations: { "Segment.io": { deliveryStrategy: { strategy: "batching", config: { size: 5, timeout: 500 } } } } },
  },
];

const figures: string[] = [];

for (const [index, name] of ["settings inline", "settings fetched from the ingest", "batching delivery"].entries()) {
  web(`every type lands once with the ids analytics.js sent: ${name}`, async () => {
    const mode = modes()[index]!; // built once the stack's address is known
    const page = await browser.newPage();
    const posts: string[] = [];
    const sent: { messageId: string; type: string; userId?: string; anonymousId: string }[] = [];
    page.on("request", (r) => {
      if (r.method() !== "POST" || !r.url().startsWith(stack.base)) return;
      posts.push(new URL(r.url()).pathname);
      const body = JSON.parse(r.postData() ?? "{}") as { batch?: typeof sent } & (typeof sent)[number];
      sent.push(...(body.batch ?? [body]));
    });
    const userId = `web-${index}-${Date.now()}`;
    const anonymousId = await sendEveryType(page, mode, userId);
    const rows = await waitFor("five rows", async () => {
      const found = await rowsOfUser(userId);
      return found.length === 5 ? found : undefined;
    });
    await page.close();
    assert.equal(
      rows.map((r) => r.type),
      ["alias", "group", "identify", "page", "track"],
    );
    for (const row of rows) {
      assert.is(row.n, 1, `${row.type}: one row`);
      assert.is(row.anonymousId, anonymousId, `${row.type}: the anonymousId analytics.js kept`);
    }
    // Each message is stored with the ids analytics.js put in the request, once.
    assert.is(sent.length, 5, `five messages sent: ${sent.map((m) => m.type).join(" ")}`);
    const stored = await stack.rowsLanded<{ message_id: string; user_id: string; anonymous_id: string }>(sent.map((m) => m.messageId));
    for (const message of sent) {
      const row = stored.find((r) => r.message_id === message.messageId)!;
      assert.is(row.user_id, message.userId ?? "", `${message.type}: userId as sent`);
      assert.is(row.anonymous_id, message.anonymousId, `${message.type}: anonymousId as sent`);
    }
    const context = JSON.parse(rows.find((r) => r.type === "track")!.context) as {
      page: { url: string };
      userAgent: string;
      library: { name: string };
    };
    assert.is(context.page.url, `${siteOrigin}/`);
    assert.match(context.userAgent, /Chrome/);
    assert.is(context.library.name, "analytics.js");
    if (index === 0) {
      // The enrichment of Chromium's own user agent (headless: HeadlessChrome, which isbot counts as automation).
      const trackId = sent.find((m) => m.type === "track")!.messageId;
      const [row] = await stack.select<{ browser: string; browser_version: string; os: string; device_type: string; is_bot: number }>(
        `SELECT browser, browser_version, os, device_type, is_bot FROM ${stack.database}.tracks WHERE message_id = '${trackId}'`,
      );
      const version = /(?:Headless)?Chrome\/([\d.]+)/.exec(context.userAgent)?.[1];
      const headless = context.userAgent.includes("HeadlessChrome");
      assert.equal(
        [row!.browser, row!.browser_version, row!.os, row!.device_type, Number(row!.is_bot)],
        [headless ? "Chrome Headless" : "Chrome", version, "Linux", headless ? "bot" : "desktop", headless ? 1 : 0],
        context.userAgent,
      );
      figures.push(`Chromium's user agent ${context.userAgent}: ${JSON.stringify(row)}`);
    }
    if (mode.name === "batching delivery")
      assert.ok(
        posts.every((p) => p === "/v1/b"),
        `batching posts to /v1/b: ${posts.join(" ")}`,
      );
    else assert.ok(posts.includes("/v1/t") && posts.includes("/v1/i"), `one-letter paths: ${posts.join(" ")}`);
    figures.push(`${mode.name}: 5 sent (${[...new Set(posts)].join(" ")}), 5 rows, 0 duplicates`);
  });
}

web("a message analytics.js retries after a 503 lands once", async () => {
  const page = await browser.newPage();
  await page.setRequestInterception(true);
  let refused = 0;
  let forwardedStatus = 0;
  let attempts = 0;
  page.on("console", (m) => process.env.DEBUG_BROWSER && console.log("console:", m.text()));
  page.on("request", (request) => {
    if (process.env.DEBUG_BROWSER) console.log("request:", request.method(), request.url(), (request.postData() ?? "").slice(0, 80));
    const body = request.postData() ?? "";
    if (request.method() === "POST" && body.includes("Retried Once")) attempts++;
    if (request.method() === "POST" && request.url() === `${stack.base}/v1/t` && body.includes("Retried Once") && refused === 0) {
      refused++;
      // The first attempt reaches the ingest (and is stored), but the browser is told 503.
      void fetch(request.url(), { method: "POST", headers: request.headers(), body }).then((forwarded) => {
        forwardedStatus = forwarded.status;
        return request.respond({
          status: 503,
          headers: { "Access-Control-Allow-Origin": siteOrigin, "Retry-After": "1" },
          contentType: "application/json",
          body: "{}",
        });
      });
      return;
    }
    void request.continue();
  });
  await page.goto(`${siteOrigin}/`);
  const userId = `web-retry-${Date.now()}`;
  await page.evaluate(
    async (settings, userId) => {
      const { AnalyticsBrowser } = (
        globalThis as unknown as { AnalyticsNext: { AnalyticsBrowser: { load: (...a: unknown[]) => unknown } } }
      ).AnalyticsNext;
      const analytics = AnalyticsBrowser.load(settings) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
      await analytics.identify(userId);
      await analytics.track("Retried Once");
    },
    { writeKey: "test-key", cdnSettings: inlineSettings() },
    userId,
  );
  // analytics.js re-queues the message with the same messageId and sends it again after a backoff.
  await waitFor("analytics.js to retry", async () => (attempts >= 2 ? true : undefined), 30_000);
  await stack.marker(); // the retry has reached ClickHouse by now
  const [row] = await waitFor(
    "the retried message",
    async () => {
      const found = await stack.select<{ n: string; ids: string }>(
        `SELECT count() AS n, uniqExact(message_id) AS ids FROM ${stack.table} FINAL WHERE user_id = '${userId}' AND event = 'Retried Once'`,
      );
      return Number(found[0]!.n) >= 1 ? found : undefined;
    },
    30_000,
  );
  await page.close();
  assert.is(refused, 1, "the first attempt was answered 503");
  assert.is(forwardedStatus, 200, "the first attempt was stored by the ingest");
  assert.is(Number(row!.n), 1, "one row under FINAL, though the ingest stored it twice");
  const [raw] = await stack.select<{ n: string }>(
    `SELECT count() AS n FROM ${stack.table} WHERE user_id = '${userId}' AND event = 'Retried Once'`,
  );
  figures.push(`503 then retry: 1 sent, ${attempts} attempts, stored ${raw!.n} time(s) before merges, 1 row under FINAL`);
});

web("cross-origin fetch with keepalive (after its preflight) and navigator.sendBeacon (no preflight) both land", async () => {
  const page = await browser.newPage();
  await page.goto(`${siteOrigin}/`);
  const ids = { keepalive: `ka-${Date.now()}`, beacon: `beacon-${Date.now()}` };
  const sent = await page.evaluate(
    async (base, ids, authorization) => {
      const message = (messageId: string, event: string) => ({ type: "track", event, anonymousId: "anon-web", messageId });
      const response = await fetch(`${base}/v1/t`, {
        method: "POST",
        keepalive: true,
        headers: { "Content-Type": "text/plain", Authorization: authorization },
        body: JSON.stringify(message(ids.keepalive, "Keepalive")),
      });
      const queued = (globalThis as unknown as { navigator: { sendBeacon: (url: string, body: string) => boolean } }).navigator.sendBeacon(
        `${base}/v1/t`,
        JSON.stringify({ ...message(ids.beacon, "Beacon"), writeKey: "test-key" }),
      );
      return { keepalive: response.status, beacon: queued };
    },
    stack.base,
    ids,
    basic("test-key"),
  );
  assert.equal(sent, { keepalive: 200, beacon: true });
  const rows = await stack.rowsLanded<{ message_id: string; event: string }>([ids.keepalive, ids.beacon]);
  await page.close();
  assert.equal(rows.map((r) => r.event).sort(), ["Beacon", "Keepalive"]);
  // The keepalive fetch carries Authorization, so Chromium sent it only after a preflight the ingest allowed.
  figures.push("keepalive fetch (preflighted) and sendBeacon (no preflight): 2 sent, 2 rows");
  console.log(`\n  analytics.js in Chromium:\n    ${figures.join("\n    ")}`);
});

web.run();
