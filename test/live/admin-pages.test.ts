/**
 * The admin pages (deploy/admin/pages.ts, GET /admin on the admin port) in Debian's Chromium,
 * driven by puppeteer-core, against the real local stack with a delivery process: sign in with a
 * workspace token made through the API; create a write key on the page and read it there; an event
 * sent with it; a destination added on the page (a receiver on 127.0.0.1) and its health shown
 * (strict once the health route is in the API's document, else "health unknown"); a plan applied
 * through the API and a violation of it shown on the plan page; an event named with markup shown
 * as that text in the catalog and the live view (reached from the pages with the same token),
 * with no dialog and no img element ever made. Every page answer carries the CSP; the console
 * shows no CSP violation (a positive control proves both listeners hear what they listen for).
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- the answers are JSON of many shapes, read field by field */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { gzipSync } from "node:zlib";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { PAGES_CSP } from "../../deploy/admin/pages";
import { adminPort, basic, LiveStack, stopService, waitFor } from "../support/harness";
import { delivering, Receiver, startDeliver, type Deliverer } from "../support/deliveries";

/** The few DOM members the page functions use (the project compiles without the DOM lib). */
interface Dom {
  document: { querySelectorAll(selector: string): { length: number } & Iterable<{ textContent: string | null }> };
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const OPERATOR = `operator-${randomUUID()}`;
const WS = `ws-pages-${randomUUID().slice(0, 6)}`;
const PREFIX = `test-pages-${randomUUID().slice(0, 8)}`;
const MARKUP = "<img src=x onerror=alert(1)>";
const stack = new LiveStack({ ADMIN_TOKEN: OPERATOR, DELIVER_GROUP_PREFIX: PREFIX });
const pages = suite("the admin pages in Chromium (live)");
const receiver = new Receiver();
let deliverer: Deliverer | undefined;
let browser: Browser;
let page: Page;
let admin = "";
let token = "";
let writeKey = "";
/** Dialogs raised, console lines about a Content-Security-Policy, other console errors. */
const heard = { dialogs: [] as string[], csp: [] as string[], errors: [] as string[] };
/** The Content-Security-Policy of each document and script answer the browser got. */
const answers: { url: string; csp: string | undefined }[] = [];

/** One admin call with the operator token (or `as`): status and JSON body. */
async function call(method: string, path: string, body?: unknown, as = OPERATOR): Promise<{ status: number; body: any }> {
  const response = await fetch(`${admin}${path}`, {
    method,
    headers: { authorization: `Bearer ${as}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}

/** Posts a track event with the page's key until it is accepted (a new key reaches the ingest within seconds). */
const track = (event: string, properties: object = {}) =>
  waitFor(`${event} accepted`, async () => {
    const messageId = randomUUID();
    const sent = await stack.post("/v1/track", { messageId, userId: "u-pages", event, properties }, { authorization: basic(writeKey) });
    return sent.status === 200 ? messageId : undefined;
  });

/** The texts of the elements `selector` matches. */
const texts = (selector: string) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent ?? ""));

/** Waits until an element of `selector` has exactly `text` (as text); fails with what the page shows. */
async function showsText(selector: string, text: string, timeout = 30_000): Promise<void> {
  await page
    .waitForFunction(
      (s: string, t: string) => [...(globalThis as unknown as Dom).document.querySelectorAll(s)].some((n) => n.textContent === t),
      { timeout },
      selector,
      text,
    )
    .catch(async (error: unknown) => {
      throw new Error(`${String(error)}: ${selector} shows ${JSON.stringify(await texts(selector))}`);
    });
}

pages.before(async () => {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM} (test/run.sh installs Debian's chromium)`);
  await stack.start();
  admin = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
  await receiver.start();
  deliverer = await startDeliver(stack, PREFIX, { DELIVER_HEALTH_EVERY_MS: "2000" });
  const made = await call("POST", "/admin/v1/tokens", { name: "pages", scope: "workspace", workspaceId: WS });
  assert.is(made.status, 201, JSON.stringify(made.body));
  token = made.body.token;
  await waitFor("the token known", async () =>
    (await call("GET", `/admin/v1/workspaces/${WS}/keys`, undefined, token)).status === 200 ? true : undefined,
  );
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  page = await browser.newPage();
  page.on("dialog", (dialog) => {
    heard.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on("console", (message) => {
    if (/Content.Security.Policy/i.test(message.text())) heard.csp.push(message.text());
    else if (message.type() === "error") heard.errors.push(message.text());
  });
  page.on("pageerror", (error) => heard.errors.push(String(error)));
  page.on("response", (response) => {
    const type = response.request().resourceType();
    if (type === "document" || type === "script") answers.push({ url: response.url(), csp: response.headers()["content-security-policy"] });
  });
  await page.setViewport({ width: 1280, height: 900 });
});

pages.after(async () => {
  await browser?.close();
  if (deliverer !== undefined && deliverer.service.child.exitCode === null) await stopService(deliverer.service);
  await receiver.close();
  await stack.stop();
});

pages("sign in with a workspace token; its headers; a key created on the page, read there, accepted", async () => {
  const opened = await page.goto(`${admin}/admin`);
  const headers = opened!.headers();
  assert.is(headers["content-security-policy"], PAGES_CSP);
  assert.is(headers["x-content-type-options"], "nosniff");
  assert.is(headers["referrer-policy"], "no-referrer");
  assert.is(headers["cache-control"], "no-store");
  await page.waitForSelector("#sign-in");
  await page.type("#token", "not-a-token-at-all-but-long");
  await page.click("#sign-in button[type=submit]");
  await showsText("#sign-in-error", "this token was refused");
  await page.$eval("#token", (input) => ((input as unknown as { value: string }).value = ""));
  await page.type("#token", token);
  await page.type("#workspace", WS);
  await page.click("#sign-in button[type=submit]");
  await showsText("#current-workspace", WS);
  assert.is(await page.evaluate(() => (globalThis as any).document.cookie), "", "no cookie");
  assert.not.match(page.url(), token, "the token is not in the URL");
  await page.click("#create-key");
  await page.waitForSelector("#new-key");
  writeKey = await page.$eval("#new-key", (code) => code.textContent ?? "");
  assert.match(writeKey, /^wk_/);
  await showsText("tr.key td:first-child", `wk_${writeKey.slice(3, 9)}`, 10_000);
  const started = Date.now();
  await track("Pages Test");
  console.log(`  the page's key accepted ${Date.now() - started} ms after creation`);
});

pages("a destination added on the page: delivered to, and its health shown", async () => {
  await page.click("#tab-destinations");
  await page.waitForSelector("#destination-url");
  await page.type("#destination-url", receiver.url);
  await page.click("#add-destination button[type=submit]");
  await page.waitForSelector("tr.destination");
  const id = await page.$eval("tr.destination", (tr) => (tr as unknown as { dataset: { destinationId: string } }).dataset.destinationId);
  assert.equal((await call("GET", `/admin/v1/workspaces/${WS}/destinations`)).body.destinations[0].url, receiver.url);
  await delivering(deliverer!, id);
  const messageId = await track("Delivered Test");
  await receiver.all([messageId], 60_000);
  const doc = await call("GET", "/admin/v1/openapi.json");
  const healthRoute = doc.body.paths["/admin/v1/workspaces/{workspaceId}/destinations/{destinationId}/health"] !== undefined;
  if (!healthRoute) {
    assert.is((await call("GET", `/admin/v1/workspaces/${WS}/destinations/${id}/health`)).status, 404);
    await showsText("tr.destination .health", "health unknown");
    console.log('  no health route yet: the page shows "health unknown"');
    return;
  }
  // The route is served: the page shows what it answers, the delivery reported.
  await page.waitForFunction(
    () =>
      [...(globalThis as unknown as Dom).document.querySelectorAll("tr.destination .health")].some((n) =>
        /^delivered [1-9]/.test(n.textContent ?? ""),
      ),
    { timeout: 60_000 },
  );
  const shown = (await texts("tr.destination .health"))[0]!;
  assert.not.match(shown, "health unknown");
  assert.match(shown, /reported \d{4}-\d\d-\d\d/);
  console.log(`  health: ${shown}`);
});

pages("a plan applied through the API; a message that breaks it shown on the plan page", async () => {
  const plan = {
    unplanned: "allow",
    violations: "flag",
    track: { "Order Placed": { type: "object", properties: { total: { type: "number" } }, required: ["total"] } },
  };
  const applied = await call("PUT", `/admin/v1/workspaces/${WS}/plan`, plan, token);
  assert.is(applied.status, 200, JSON.stringify(applied.body));
  // Every ingest follows the plan within seconds: send until a message is stored flagged.
  const flagged = await waitFor(
    "a flagged message stored",
    async () => {
      const messageId = await track("Order Placed", { total: "twelve" });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const got = await call("GET", `/admin/v1/workspaces/${WS}/plan/violations?limit=200`, undefined, token);
      assert.is(got.status, 200, JSON.stringify(got.body));
      return got.body.violations.find((v: any) => v.messageId === messageId);
    },
    60_000,
  );
  assert.is(flagged.event, "Order Placed");
  await page.click("#tab-plan");
  await page.waitForFunction(
    () => /^Version 1 of /.test([...(globalThis as unknown as Dom).document.querySelectorAll("#plan-summary")][0]?.textContent ?? ""),
    { timeout: 10_000 },
  );
  await page.waitForSelector(`tr.violation[data-message-id="${flagged.messageId}"]`, { timeout: 15_000 });
  const row = await page.$eval(`tr.violation[data-message-id="${flagged.messageId}"]`, (tr) => tr.textContent ?? "");
  assert.match(row, "Order Placed");
  assert.match(row, "/properties/total: must be number");
});

pages("an event named with markup: text in the catalog and the live view, no dialog, no img", async () => {
  await track(MARKUP, { [MARKUP]: MARKUP });
  await waitFor("the markup in the catalog", async () => {
    const got = await call("GET", `/admin/v1/workspaces/${WS}/catalog`, undefined, token);
    return got.body.events.some((e: any) => e.event === MARKUP) ? true : undefined;
  });
  await page.click("#tab-catalog");
  await page.click("#catalog-reload");
  await showsText("#catalog-events td.what", MARKUP);
  await showsText("#catalog-properties td.key", MARKUP);
  assert.is(await page.$$eval("img", (imgs) => imgs.length), 0, "no img on the catalog");
  const live = await Promise.all([page.waitForNavigation(), page.click("#live-link")]);
  assert.ok(live[0]?.headers()["content-security-policy"], "the live view's CSP");
  // The live view shows what arrives once it watches: one more, now.
  await showsText("#status", "live");
  await track(MARKUP);
  await showsText("tr.item td:nth-child(4)", MARKUP);
  assert.is(await page.$$eval("img", (imgs) => imgs.length), 0, "no img on the live view");
  assert.equal(heard.dialogs, [], "no dialog was raised");
  assert.equal(heard.csp, [], `no CSP violation: ${heard.csp.join("\n")}`);
  // The errors expected: the refused sign-in of the first test (401), and 404s (a health route not
  // yet served, the favicon).
  assert.equal(
    heard.errors.filter((e) => !e.endsWith("status of 404 (Not Found)")),
    ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"],
  );
});

pages(
  "every page and script answer carried a CSP; the listeners hear a dialog and a CSP refusal (controls); the scripts' weight",
  async () => {
    // Each document and script of the pages has their CSP; every other document its own (the live
    // view's script, ingest/live/routes.ts, is not a document and has none).
    const ours = answers.filter((a) => new URL(a.url).pathname.startsWith("/admin"));
    assert.ok(ours.length >= 5, JSON.stringify(answers));
    assert.equal(
      ours.filter((a) => a.csp !== PAGES_CSP),
      [],
    );
    assert.equal(
      answers.filter((a) => !a.csp && !a.url.endsWith("/live/page.js")),
      [],
    );
    await page.goto(`${admin}/admin`);
    await page.evaluate(() => (globalThis as any).alert("control"));
    await page.evaluate(() => {
      const script = (globalThis as any).document.createElement("script");
      script.textContent = "globalThis.inlineRan = 1";
      (globalThis as any).document.body.append(script);
    });
    await waitFor("the CSP refusal logged", async () => (heard.csp.length > 0 ? true : undefined), 5_000);
    assert.equal(heard.dialogs, ["control"]);
    assert.is(await page.evaluate(() => (globalThis as any).inlineRan), undefined, "the inline script did not run");
    let total = 0;
    for (const name of ["app.js", "preact.js", "hooks.js", "htm.js"]) {
      const text = await (await fetch(`${admin}/admin/assets/${name}`)).text();
      const gz = gzipSync(text, { level: 9 }).length;
      total += gz;
      console.log(`  ${name}: ${text.length} bytes, ${gz} gzip`);
    }
    console.log(`  the pages' scripts: ${total} bytes gzip`);
  },
);

pages.run();
