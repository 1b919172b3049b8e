/**
 * The admin pages' router (deploy/admin/pages.ts) on a Koa app in this process: each page and
 * asset with its type and headers (the CSP with no inline script or style and no eval); the served
 * module parses as an ES module, holds every browser function once and nothing that writes HTML;
 * the libraries as served (preact's hooks importing ./preact.js); and the checks pagesScript makes.
 * Chromium runs them: test/live/admin-pages.test.ts.
 */
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Koa from "koa";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { PAGES_CSP, pagesRouter, pagesScript, readLibraries } from "../../../../deploy/admin/pages";
import type { AdminContext } from "../../../../deploy/admin/routes";

const pages = suite("admin pages router");

pages("every page and asset: its type, the CSP, nosniff, no referrer, no-store; other paths 404", async () => {
  const app = new Koa();
  app.use(pagesRouter({} as AdminContext).routes());
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const types: Record<string, string> = {
      "/admin": "text/html; charset=utf-8",
      "/admin/assets/app.js": "text/javascript; charset=utf-8",
      "/admin/assets/preact.js": "text/javascript; charset=utf-8",
      "/admin/assets/hooks.js": "text/javascript; charset=utf-8",
      "/admin/assets/htm.js": "text/javascript; charset=utf-8",
      "/admin/assets/admin.css": "text/css; charset=utf-8",
    };
    for (const [path, type] of Object.entries(types)) {
      const got = await fetch(`${base}${path}`);
      assert.is(got.status, 200, path);
      assert.is(got.headers.get("content-type"), type, path);
      assert.is(got.headers.get("content-security-policy"), PAGES_CSP, path);
      assert.is(got.headers.get("x-content-type-options"), "nosniff", path);
      assert.is(got.headers.get("referrer-policy"), "no-referrer", path);
      assert.is(got.headers.get("cache-control"), "no-store", path);
      assert.ok((await got.text()).length > 100, path);
    }
    assert.is((await fetch(`${base}/admin/assets/nope.js`)).status, 404, "the control: an unknown asset");
  } finally {
    server.close();
  }
});

pages("the CSP: nothing inline, no eval, nothing from another origin, no framing, no form posts", () => {
  const directives = new Map(PAGES_CSP.split("; ").map((d) => [d.split(" ")[0]!, d.split(" ").slice(1).join(" ")]));
  assert.equal(Object.fromEntries(directives), {
    "default-src": "'none'",
    "script-src": "'self'",
    "style-src": "'self'",
    "connect-src": "'self'",
    "img-src": "'self'",
    "base-uri": "'none'",
    "form-action": "'none'",
    "frame-ancestors": "'none'",
  });
  assert.not.match(PAGES_CSP, /unsafe|data:|\*/);
});

pages("the served module parses, defines K with every browser function once, and never writes HTML", () => {
  const script = pagesScript();
  const dir = mkdtempSync(join(tmpdir(), "pages-"));
  writeFileSync(join(dir, "app.mjs"), script);
  execFileSync(process.execPath, ["--check", join(dir, "app.mjs")]);
  writeFileSync(join(dir, "bad.mjs"), `${script}\nfunction (`);
  assert.throws(
    () => execFileSync(process.execPath, ["--check", join(dir, "bad.mjs")], { stdio: "pipe" }),
    "the control: a broken module fails",
  );
  assert.match(script, /^import \{ h, render \} from "\.\/preact\.js";/);
  for (const name of [
    "App",
    "SignIn",
    "KeysView",
    "DestinationsView",
    "HealthLine",
    "PlanView",
    "Violations",
    "CatalogView",
    "RegulationsView",
  ]) {
    assert.is(script.split(`function ${name}(`).length, 2, name);
    assert.match(script, new RegExp(`const K = \\{[^\\n]*\\b${name}\\b`), name);
  }
  assert.not.match(script, /innerHTML|dangerouslySetInnerHTML|\beval\(|new Function|document\.cookie|localStorage/);
  assert.not.match(script, /\brequire\(|exports\./, "no CommonJS left in a browser function");
});

pages("pagesScript refuses a function named unlike its export, and a name given twice", () => {
  const named = { a: function b() {} };
  assert.throws(() => pagesScript([named]), /browser function a is named b/);
  const one = { f: function f() {} };
  assert.throws(() => pagesScript([one, { f: function f() {} }]), /named twice: f/);
  assert.match(pagesScript([one]), "function f() { }");
});

pages("the libraries: preact 11's and htm's own modules, the hooks' one import pointed at ./preact.js, no source-map comment", () => {
  const libraries = readLibraries();
  assert.match(libraries["hooks.js"], 'from"./preact.js"');
  assert.not.match(libraries["hooks.js"], 'from"preact"');
  for (const text of Object.values(libraries)) assert.not.match(text, "sourceMappingURL");
  assert.match(libraries["preact.js"], /export\{/);
  assert.match(libraries["htm.js"], /export\{|export default/);
});

pages.run();
