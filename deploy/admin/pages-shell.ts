/**
 * The admin pages' document and style sheet (deploy/admin/pages.ts serves them): an empty page
 * the module script fills, and the CSS as a file of its own, since the pages' Content-Security-
 * Policy allows no inline style nor script.
 */

/** The page: the style sheet, the module script, and where it renders. */
export const PAGES_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>segment-ingest admin</title>
<link rel="stylesheet" href="/admin/assets/admin.css">
<script type="module" src="/admin/assets/app.js"></script>
</head>
<body>
<div id="app"><noscript>These pages need JavaScript. The admin API is at /admin/v1/openapi.json.</noscript></div>
</body>
</html>
`;

/** The style sheet. */
export const PAGES_CSS = `:root { --ok: #1a7f37; --bad: #cf222e; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; --blue: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; }
header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line); padding: 8px 16px;
  display: flex; flex-wrap: wrap; gap: 12px; align-items: center; }
header h1 { font-size: 16px; margin: 0; }
nav { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; flex: 1; }
main { padding: 8px 16px 24px; }
h2 { font-size: 18px; margin: 12px 0 8px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
input, select, button, textarea { font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
button { cursor: pointer; background: var(--bg); }
button.primary { background: var(--blue); color: #fff; border-color: var(--blue); }
button.tab.on { background: #fff; border-color: var(--blue); color: var(--blue); font-weight: 600; }
nav a { margin-left: 8px; color: var(--blue); }
form.card { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; padding: 8px; margin: 8px 0;
  border: 1px solid var(--line); border-radius: 6px; background: var(--bg); }
form.card label { display: flex; gap: 6px; align-items: center; }
#sign-in { flex-direction: column; align-items: stretch; max-width: 420px; margin: 48px auto; }
#sign-in h1 { font-size: 18px; margin: 0; }
#sign-in label { justify-content: space-between; }
#sign-in input { width: 260px; }
#destination-url { width: 360px; }
#plan-text { width: 100%; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
#apply-plan { flex-direction: column; align-items: stretch; }
table { width: 100%; border-collapse: collapse; margin: 4px 0 12px; }
th { text-align: left; font-weight: 600; color: var(--muted); border-bottom: 1px solid var(--line); padding: 6px 4px; }
td { padding: 5px 4px; border-bottom: 1px solid #eef1f4; vertical-align: top; overflow-wrap: anywhere; }
td ul { margin: 0; padding-left: 16px; }
.mono, code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
.num { text-align: right; }
.muted { color: var(--muted); }
.error, .health.failing, .status.FAILED { color: var(--bad); }
.status.FINISHED { color: var(--ok); }
tr.revoked { color: var(--muted); text-decoration: line-through; }
.once { padding: 8px; border: 1px solid #d4a72c; background: #fff8c5; border-radius: 6px; }
.once code { display: inline-block; padding: 2px 6px; background: #fff; user-select: all; }
`;
