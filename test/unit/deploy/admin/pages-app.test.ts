/**
 * The admin pages' browser code, part 1 (deploy/admin/pages-app.ts), run here in Node: the
 * refusal as a sentence, times, the tabs, and api() and signIn() against a stand-in admin API on
 * 127.0.0.1, with a stand-in `K` holding a sessionStorage (the functions read `K` as a global,
 * as they do in the served module). The components run in Chromium: test/live/admin-pages.test.ts.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { api, errorText, readSession, signIn, tabList, tabOf, when } from "../../../../deploy/admin/pages-app";

const app = suite("admin pages: browser code, part 1");

app("errorText: the API's message, its field and issues; no answer; a body that is no AdminError", () => {
  assert.is(errorText({ status: 0, body: undefined }), "the ingest did not answer");
  assert.is(errorText({ status: 400, body: { error: "bad_request", message: "bad URL", field: "url" } }), "bad URL (url)");
  assert.is(
    errorText({ status: 400, body: { message: "invalid", issues: [{ field: "$input.batchSize", expected: "number" }] } }),
    "invalid; $input.batchSize: expected number",
  );
  assert.is(errorText({ status: 502, body: undefined }), "HTTP 502");
});

app("when: ISO 8601 as UTC text to the second; empty for none; text that is no time as it is", () => {
  assert.is(when("2026-03-01T12:00:00.123Z"), "2026-03-01 12:00:00");
  assert.is(when(undefined), "");
  assert.is(when(null), "");
  assert.is(when("soon"), "soon");
});

app("tabs: the hash names one, else the first", () => {
  assert.equal(
    tabList().map(([name]) => name),
    ["keys", "destinations", "plan", "catalog", "regulations"],
  );
  assert.is(tabOf("#plan"), "plan");
  assert.is(tabOf("regulations"), "regulations");
  assert.is(tabOf("#nope"), "keys");
  assert.is(tabOf(""), "keys");
});

app("api and signIn: the bearer token sent, answers read, the session kept only when the token may see the workspace", async () => {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
    const ok = req.headers.authorization === "Bearer good";
    if (!ok) return void res.writeHead(401, { "content-type": "application/json" }).end('{"error":"unauthorized","message":"no"}');
    if (req.url === "/admin/v1/workspaces") return void res.end('{"workspaces":[{"workspaceId":"ws1","keys":1}]}');
    if (req.url === "/admin/v1/workspaces/ws1/keys") return void res.end('{"keys":[]}');
    if (req.url === "/text") return void res.end("not json");
    res.writeHead(403).end('{"error":"forbidden","message":"this token may not do this here"}');
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store = new Map<string, string>();
  const storage = {
    getItem: (k: string) => store.get(k) ?? null,
    setItem: (k: string, v: string) => void store.set(k, v),
    removeItem: (k: string) => void store.delete(k),
  };
  const g = globalThis as { K?: unknown; fetch: typeof fetch };
  const realFetch = g.fetch;
  g.K = { storage };
  g.fetch = (path, init) => realFetch(`${base}${String(path)}`, init);
  try {
    assert.equal(await api("GET", "/text", undefined, "good"), { status: 200, body: undefined });
    assert.is(await signIn("bad", "ws1"), "this token was refused");
    assert.is(await signIn("good", "ws2"), "this token may not see workspace ws2");
    assert.is(readSession(), undefined, "nothing kept for a refusal");
    assert.equal(await signIn("good", ""), { token: "good", workspaceId: "ws1" }, "the one workspace the token lists");
    assert.equal(readSession(), { token: "good", workspaceId: "ws1" });
    assert.equal(await api("GET", "/admin/v1/workspaces/ws1/keys"), { status: 200, body: { keys: [] } }, "the session's token");
    assert.is(seen.at(-1), "GET /admin/v1/workspaces/ws1/keys Bearer good");
    g.fetch = async () => {
      throw new Error("offline");
    };
    assert.equal(await api("GET", "/admin/v1/workspaces"), { status: 0, body: undefined });
  } finally {
    g.fetch = realFetch;
    delete g.K;
    server.close();
  }
});

app.run();
