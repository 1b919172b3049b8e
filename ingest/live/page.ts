/**
 * The live view's page (GET /live), style sheet (/live/page.css) and script (/live/page.js): no
 * build step, nothing from another host (ingest/live/routes.ts LIVE_CSP allows only this origin),
 * own-origin URLs only, so it works through `kubectl port-forward`. The token is asked in a form
 * and kept in sessionStorage (this tab only); the stream is read with fetch, which can send the
 * Authorization header (EventSource cannot). Everything a message carries is shown through
 * textContent, never as HTML: messages come from anyone holding a browser writeKey.
 */

/** The page. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Live events</title>
<link rel="stylesheet" href="/live/page.css">
</head>
<body>
<header>
  <form id="connect">
    <h1>Live events</h1>
    <label>Workspace <input name="workspaceId" list="workspaces" required autocomplete="off"></label>
    <datalist id="workspaces"></datalist>
    <label>Admin token <input name="token" type="password" required autocomplete="off"></label>
    <button class="primary" type="submit">Watch</button>
    <span id="status" class="down">not connected</span>
  </form>
  <form id="filters" class="bar">
    <select name="type" aria-label="type">
      <option value="">every type</option><option>track</option><option>page</option><option>screen</option>
      <option>identify</option><option>group</option><option>alias</option>
    </select>
    <input name="event" placeholder="event or name" aria-label="event">
    <input name="userId" placeholder="userId" aria-label="userId">
    <input name="anonymousId" placeholder="anonymousId" aria-label="anonymousId">
    <button type="submit">Filter</button>
    <button type="button" id="pause">Pause</button>
    <button type="button" id="clear">Clear</button>
    <span id="paused">Paused: new messages wait until you resume</span>
  </form>
  <div class="bar counts" id="counts"></div>
</header>
<main>
  <table>
    <colgroup><col class="time"><col class="status"><col class="type"><col><col class="user"><col class="lib"><col></colgroup>
    <thead><tr><th>received</th><th>status</th><th>type</th><th>what</th><th>user</th><th>library</th><th>messageId</th></tr></thead>
    <tbody id="rows"></tbody>
  </table>
  <div id="empty">Nothing yet: enter the workspace and the admin token, then send an event.</div>
</main>
<script src="/live/page.js"></script>
</body>
</html>
`;

/** The page's style sheet (GET /live/page.css): a file of its own, so the CSP allows no inline style. */
export const PAGE_CSS = `  :root { --ok: #1a7f37; --bad: #cf222e; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; }
  header { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid var(--line); padding: 8px 16px; }
  h1 { font-size: 16px; margin: 0 12px 0 0; display: inline-block; }
  form, .bar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 4px 0; }
  input, select, button { font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
  input[name=event], input[name=userId], input[name=anonymousId] { width: 11em; }
  button { cursor: pointer; background: var(--bg); }
  button.primary { background: #0969da; color: #fff; border-color: #0969da; }
  #status { color: var(--muted); }
  #status.live::before { content: "\\25CF "; color: var(--ok); }
  #status.down::before { content: "\\25CF "; color: var(--bad); }
  .counts span { display: inline-block; padding: 0 6px; margin-right: 4px; border-radius: 10px; background: var(--bg); border: 1px solid var(--line); }
  .counts .refused { color: var(--bad); border-color: var(--bad); }
  main { padding: 0 16px 16px; }
  table { width: 100%; border-collapse: collapse; table-layout: fixed; }
  th { text-align: left; font-weight: 600; color: var(--muted); border-bottom: 1px solid var(--line); padding: 6px 4px; }
  td { padding: 5px 4px; border-bottom: 1px solid #eef1f4; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  tr.item { cursor: pointer; }
  tr.item:hover { background: var(--bg); }
  tr.refused td:first-child { border-left: 3px solid var(--bad); }
  tr.accepted td:first-child { border-left: 3px solid var(--ok); } tr.delivery td:first-child { border-left: 3px dashed #0969da; }
  .badge { font-size: 12px; padding: 0 6px; border-radius: 10px; color: #fff; }
  .badge.accepted, .badge.delivered { background: var(--ok); } .badge.retry { background: #9a6700; }
  .badge.refused, .badge.failed { background: var(--bad); }
  td.mono, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
  tr.detail td { white-space: normal; background: var(--bg); }
  pre { margin: 4px 0; white-space: pre-wrap; word-break: break-all; max-height: 360px; overflow: auto; }
  ul.reasons { color: var(--bad); margin: 4px 0; }
  #empty { color: var(--muted); padding: 24px 4px; }
  col.time { width: 88px; } col.status { width: 86px; } col.type { width: 76px; } col.user { width: 22%; } col.lib { width: 200px; }
  .reason { color: var(--bad); font-size: 12px; }
  .muted { color: var(--muted); } .counts { min-height: 22px; }
  header.paused { background: #fff8c5; }
  #paused { display: none; font-weight: 600; color: #7d4e00; } header.paused #paused { display: inline; }
`;

/** The page's script (plain ES2020, no template literals: this file holds it in one). */
export const PAGE_SCRIPT = `"use strict";
(function () {
  var MAX_ROWS = 500;
  var rows = document.getElementById("rows");
  var empty = document.getElementById("empty");
  var status = document.getElementById("status");
  var countsBox = document.getElementById("counts");
  var pauseButton = document.getElementById("pause");
  var connectForm = document.getElementById("connect");
  var filterForm = document.getElementById("filters");
  var counts = {};
  var paused = false;
  var waiting = [];
  var controller = null;
  var retryTimer = null;
  var dropped = 0;
  connectForm.token.value = sessionStorage.getItem("liveToken") || "";
  connectForm.workspaceId.value = sessionStorage.getItem("liveWorkspace") || "";

  function setStatus(text, live) {
    status.textContent = text;
    status.className = live ? "live" : "down";
  }
  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }
  function time(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso || "") : d.toLocaleTimeString([], { hour12: false });
  }
  function renderCounts() {
    countsBox.textContent = "";
    Object.keys(counts).sort().forEach(function (key) {
      countsBox.appendChild(el("span", key + " " + counts[key], key === "refused" ? "refused" : ""));
    });
    if (paused) countsBox.appendChild(el("span", waiting.length + " waiting", "refused"));
    if (dropped > 0) countsBox.appendChild(el("span", dropped + " missed (slow connection)", "refused"));
  }
  function count(item) {
    var key = item.status === "refused" ? "refused" : item.status === "delivery" ? "deliveries" : item.type || "?";
    counts[key] = (counts[key] || 0) + 1;
  }
  function keys(value) {
    return value && typeof value === "object" ? Object.keys(value).slice(0, 6).join(", ") : "";
  }
  function summary(item) {
    if (item.delivery) return "\u2192 " + item.delivery.destinationId + ": HTTP " + (item.delivery.status || "none") + ", attempt " + item.delivery.attempt + (item.event ? " \u00b7 " + item.event : "");
    if (item.event) return item.event;
    var m = item.message || {};
    if (item.status === "refused") return "";
    if (item.type === "identify") return keys(m.traits) ? "traits: " + keys(m.traits) : "";
    if (item.type === "group") return "group " + (m.group_id || "") + (keys(m.traits) ? " (" + keys(m.traits) + ")" : "");
    if (item.type === "alias") return "was " + (m.previous_id || "");
    return "";
  }
  function library(item) {
    var lib = item.library || {};
    return [lib.name, lib.version].filter(function (x) { return typeof x === "string" && x; }).join(" ");
  }
  function addRow(item) {
    var tr = el("tr", null, "item " + item.status);
    tr.dataset.messageId = item.messageId;
    tr.appendChild(el("td", time(item.receivedAt), "mono"));
    var badge = el("td");
    var shown = item.delivery ? item.delivery.outcome : item.status;
    badge.appendChild(el("span", shown, "badge " + shown));
    tr.appendChild(badge);
    tr.appendChild(el("td", item.type || "?"));
    var what = el("td");
    what.appendChild(el("span", summary(item)));
    var notes = item.status === "refused" ? item.reasons || [] : ((item.message && item.message.violations) || []).map(function (v) { return "plan: " + (v && v.path) + " " + (v && v.message); });
    if (notes.length) what.appendChild(el("span", (item.event ? "  " : "") + notes[0] + (notes.length > 1 ? " (+" + (notes.length - 1) + ")" : ""), "reason"));
    tr.appendChild(what);
    var user = el("td", null, "mono");
    if (item.userId) user.textContent = item.userId;
    else if (item.anonymousId) { user.appendChild(el("span", "anon ", "muted")); user.appendChild(el("span", item.anonymousId)); }
    tr.appendChild(user);
    tr.appendChild(el("td", library(item)));
    tr.appendChild(el("td", item.messageId, "mono"));
    tr.title = item.status === "refused" ? (item.reasons || []).join("\\n") : "click for the whole message";
    tr.addEventListener("click", function () {
      var next = tr.nextSibling;
      if (next && next.classList && next.classList.contains("detail")) { next.remove(); return; }
      var detail = el("tr", null, "detail");
      var td = el("td");
      td.colSpan = 7;
      if (item.reasons && item.reasons.length) {
        var ul = el("ul", null, "reasons");
        item.reasons.forEach(function (r) { ul.appendChild(el("li", r)); });
        td.appendChild(ul);
      }
      td.appendChild(el("pre", JSON.stringify(item.message, null, 2)));
      detail.appendChild(td);
      tr.after(detail);
    });
    rows.insertBefore(tr, rows.firstChild);
    while (rows.querySelectorAll("tr.item").length > MAX_ROWS) {
      var last = rows.lastChild;
      if (last.previousSibling && last.classList.contains("detail")) last.remove();
      rows.lastChild.remove();
    }
    empty.hidden = true;
  }
  function show(item) {
    count(item);
    if (paused) {
      waiting.push(item);
      if (waiting.length > MAX_ROWS) waiting.shift();
    } else addRow(item);
    renderCounts();
  }
  function query() {
    var params = new URLSearchParams();
    params.set("workspaceId", connectForm.workspaceId.value.trim());
    ["type", "event", "userId", "anonymousId"].forEach(function (name) {
      var value = filterForm[name].value.trim();
      if (value) params.set(name, value);
    });
    return params.toString();
  }
  function headers() {
    return { Authorization: "Bearer " + connectForm.token.value };
  }
  function loadWorkspaces() {
    fetch("/live/workspaces", { headers: headers() }).then(function (r) { return r.ok ? r.json() : { workspaces: [] }; }).then(function (body) {
      var list = document.getElementById("workspaces");
      list.textContent = "";
      (body.workspaces || []).forEach(function (w) { var o = document.createElement("option"); o.value = w; list.appendChild(o); });
      if (!connectForm.workspaceId.value && body.workspaces && body.workspaces.length === 1) connectForm.workspaceId.value = body.workspaces[0];
    }).catch(function () {});
  }
  function connect(delay) {
    if (controller) controller.abort();
    clearTimeout(retryTimer);
    controller = new AbortController();
    var signal = controller.signal;
    setStatus("connecting", false);
    fetch("/live/events?" + query(), { headers: headers(), signal: signal }).then(function (response) {
      if (response.status === 401) { setStatus("the admin token was refused", false); return; }
      if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
      setStatus("live", true);
      delay = 1000;
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var buffered = "";
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) throw new Error("the stream ended");
          buffered += decoder.decode(chunk.value, { stream: true });
          var frames = buffered.split("\\n\\n");
          buffered = frames.pop();
          frames.forEach(function (frame) {
            var name = "message", data = [];
            frame.split("\\n").forEach(function (line) {
              if (line.indexOf("event:") === 0) name = line.slice(6).trim();
              else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
            });
            if (!data.length) return;
            var value = JSON.parse(data.join("\\n"));
            if (name === "item") show(value);
            else if (name === "dropped") { dropped += value.dropped; renderCounts(); }
          });
          return pump();
        });
      }
      return pump();
    }).catch(function (error) {
      if (signal.aborted) return;
      setStatus("reconnecting (" + error.message + ")", false);
      retryTimer = setTimeout(function () { connect(Math.min((delay || 1000) * 2, 10000)); }, delay || 1000);
    });
  }
  function start(event) {
    if (event) event.preventDefault();
    if (!connectForm.workspaceId.value.trim() || !connectForm.token.value) return;
    sessionStorage.setItem("liveToken", connectForm.token.value);
    sessionStorage.setItem("liveWorkspace", connectForm.workspaceId.value.trim());
    rows.textContent = "";
    counts = {};
    waiting = [];
    dropped = 0;
    renderCounts();
    empty.hidden = false;
    loadWorkspaces();
    connect(1000);
  }
  connectForm.addEventListener("submit", start);
  filterForm.addEventListener("submit", start);
  pauseButton.addEventListener("click", function () {
    paused = !paused;
    pauseButton.textContent = paused ? "Resume" : "Pause";
    document.querySelector("header").classList.toggle("paused", paused);
    if (!paused) { waiting.forEach(addRow); waiting = []; }
    renderCounts();
  });
  document.getElementById("clear").addEventListener("click", function () {
    rows.textContent = ""; counts = {}; waiting = []; dropped = 0; renderCounts(); empty.hidden = false;
  });
  if (connectForm.token.value && connectForm.workspaceId.value) start();
})();
`;
