/**
 * The admin pages' document and style sheet (deploy/admin/pages-shell.ts): nothing inline for the
 * CSP to refuse (no script without src, no style element or attribute), the assets it loads are
 * the router's, and the style sheet is CSS only.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { PAGES_CSS, PAGES_HTML } from "../../../../deploy/admin/pages-shell";

const shell = suite("admin pages shell");

shell("the page: a module script and a style sheet of the pages' own, nothing inline", () => {
  assert.equal(
    [...PAGES_HTML.matchAll(/<script[^>]*>/g)].map((m) => m[0]),
    ['<script type="module" src="/admin/assets/app.js">'],
  );
  assert.match(PAGES_HTML, '<link rel="stylesheet" href="/admin/assets/admin.css">');
  assert.not.match(PAGES_HTML, /<style|style=|\son\w+=|javascript:/i);
  assert.match(PAGES_HTML, '<div id="app">');
});

shell("the style sheet: rules only, no url() nor import to fetch", () => {
  assert.not.match(PAGES_CSS, /url\(|@import|<\/?style/);
  assert.is(PAGES_CSS.split("{").length, PAGES_CSS.split("}").length, "braces balanced");
});

shell.run();
