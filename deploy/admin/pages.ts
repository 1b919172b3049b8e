/**
 * The admin pages (issue 51), on the admin port beside the admin API: one workspace's write keys,
 * destinations and their health, tracking plan and its violations, catalog and deletion requests,
 * for a person who would rather look than type. They call the admin API (/admin/v1/...) with the
 * token kept in the tab's sessionStorage; nothing here reads data or takes a token.
 *   GET /admin                   the page (pages-shell.ts), which loads:
 *   GET /admin/assets/app.js     the pages' module: the browser functions of pages-app.ts,
 *                                pages-views.ts and pages-plan.ts, served as compiled (so they are
 *                                type-checked, linted and formatted with the rest of the tree)
 *   GET /admin/assets/preact.js  preact 11, hooks.js its hooks, htm.js htm 3: the packages' own
 *                                ES modules from node_modules, read once when the router is made
 *   GET /admin/assets/admin.css  the style sheet
 * Every answer has PAGES_CSP (no inline script or style, no eval, nothing from another origin: the
 * browser refuses any markup an event name smuggled in), nosniff, no referrer, no-store.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import Router from "@koa/router";
import type Koa from "koa";
import type { AdminContext } from "./routes";
import * as appCode from "./pages-app";
import * as planCode from "./pages-plan";
import * as viewCode from "./pages-views";
import { PAGES_CSS, PAGES_HTML } from "./pages-shell";

/** The pages' Content-Security-Policy. */
export const PAGES_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The browser modules: every function they export runs in the browser (pages-app.ts says how). */
const BROWSER_MODULES: readonly object[] = [appCode, viewCode, planCode];

/** The one import the hooks module makes, and where the pages serve it. */
const HOOKS_IMPORT = 'from"preact"';

/**
 * The served module: the libraries' imports, the text of each browser function, `K` (pages-app.ts
 * Kit: the libraries, sessionStorage, location and every browser function), then App rendered.
 * Throws when two functions share a name or a name differs from its export's.
 */
export function pagesScript(modules: readonly object[] = BROWSER_MODULES): string {
  const functions = modules.flatMap((m) => Object.entries(m).filter((e): e is [string, () => unknown] => typeof e[1] === "function"));
  const names = functions.map(([name, f]) => {
    if (f.name !== name) throw new Error(`browser function ${name} is named ${f.name}`);
    return name;
  });
  const twice = names.filter((name, i) => names.indexOf(name) !== i);
  if (twice.length > 0) throw new Error(`browser functions named twice: ${twice.join(", ")}`);
  return [
    'import { h, render } from "./preact.js";',
    'import { useState, useEffect } from "./hooks.js";',
    'import htm from "./htm.js";',
    ...functions.map(([, f]) => f.toString()),
    `const K = { html: htm.bind(h), render, useState, useEffect, storage: sessionStorage, location, ${names.join(", ")} };`,
    'render(h(App, null), document.getElementById("app"));',
    "",
  ].join("\n");
}

/**
 * preact's, its hooks' and htm's browser modules from node_modules: source-map comments left out,
 * and the hooks' import of "preact" pointed at ./preact.js (no import map: it would be an inline
 * script). Throws when a file is missing or the hooks import otherwise, so an upgrade that changes
 * them stops the ingest's start, not the pages.
 */
export function readLibraries(): Record<"preact.js" | "hooks.js" | "htm.js", string> {
  const preact = dirname(require.resolve("preact/package.json"));
  const read = (path: string) => readFileSync(path, "utf8").replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, "\n");
  const hooks = read(join(preact, "hooks", "dist", "hooks.mjs"));
  if (hooks.split(HOOKS_IMPORT).length !== 2) throw new Error(`preact's hooks.mjs does not import ${HOOKS_IMPORT} once`);
  return {
    "preact.js": read(join(preact, "dist", "preact.mjs")),
    "hooks.js": hooks.replace(HOOKS_IMPORT, 'from"./preact.js"'),
    "htm.js": read(join(dirname(require.resolve("htm")), "htm.mjs")),
  };
}

/** Sets a page's or asset's type and the headers every answer of the pages carries. */
function serve(ctx: Koa.Context, type: string, body: string): void {
  ctx.type = type;
  ctx.set("Content-Security-Policy", PAGES_CSP);
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.set("Cache-Control", "no-store");
  ctx.body = body;
}

/** The pages' router (see the module comment); the pages need nothing of `_c`: they call the API. */
export function pagesRouter(_c: AdminContext): Router {
  const libraries = readLibraries();
  const script = pagesScript();
  const router = new Router();
  const js = "text/javascript; charset=utf-8";
  router.get("/admin", (ctx) => serve(ctx, "text/html; charset=utf-8", PAGES_HTML));
  router.get("/admin/assets/app.js", (ctx) => serve(ctx, js, script));
  router.get("/admin/assets/admin.css", (ctx) => serve(ctx, "text/css; charset=utf-8", PAGES_CSS));
  for (const [name, text] of Object.entries(libraries)) router.get(`/admin/assets/${name}`, (ctx) => serve(ctx, js, text));
  return router;
}
