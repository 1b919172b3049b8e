/**
 * Live: the paths browser, mobile and server SDKs post to besides the named routes (analytics.js's
 * one-letter paths and `/v1/b`, the mobile upload framing, `/v1/import`, trailing slashes), the
 * settings document they load first, and the same clear errors on the new routes.
 */
import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { createGzip } from "node:zlib";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, LiveStack } from "../support/harness";

const stack = new LiveStack();
const routes = suite("SDK routes and settings (live)");

routes.before(() => stack.start());
routes.after(() => stack.stop());

/** The headers analytics.js 1.84 sends: text/plain and Basic base64(writeKey:). */
const browser = { "content-type": "text/plain", authorization: basic("test-key") };

routes("analytics.js's one-letter paths and /v1/b, /v1/import and trailing slashes land like the named routes", async () => {
  const bodies: Record<string, object> = {
    i: { traits: { plan: "pro" } },
    t: { event: "Clicked" },
    p: { name: "Home" },
    s: { name: "Settings" },
    g: { groupId: "g1" },
    a: { previousId: "anon-1" },
  };
  const types: Record<string, string> = { i: "identify", t: "track", p: "page", s: "screen", g: "group", a: "alias" };
  const ids: string[] = [];
  for (const [path, fields] of Object.entries(bodies)) {
    const messageId = randomUUID();
    ids.push(messageId);
    // analytics.js sends `type` in the body too.
    const response = await stack.post(`/v1/${path}`, { ...fields, type: types[path], userId: "u-letters", messageId }, browser);
    assert.is(response.status, 200, `/v1/${path}: ${response.text}`);
  }
  const batch = (n: number) =>
    Array.from({ length: n }, () => ({ type: "track", event: "Batched", userId: "u-letters", messageId: randomUUID() }));
  const viaB = batch(2);
  const viaImport = batch(2);
  const viaSlash = batch(1);
  assert.is(
    (await stack.post("/v1/b", { batch: viaB, writeKey: "test-key", sentAt: new Date().toISOString() }, { "content-type": "text/plain" }))
      .status,
    200,
  );
  assert.is((await stack.post("/v1/import/", { batch: viaImport })).status, 200, "analytics-java posts to /v1/import/");
  assert.is((await stack.post("/v1/batch/", { batch: viaSlash })).status, 200, "a trailing slash is the same route");
  ids.push(...[...viaB, ...viaImport, ...viaSlash].map((m) => m.messageId));
  const rows = await stack.rowsLanded<{ message_id: string; type: string }>(ids);
  const typeOf = Object.fromEntries(rows.map((r) => [r.message_id, r.type]));
  assert.equal(
    ids.slice(0, 6).map((id) => typeOf[id]),
    Object.values(types),
  );
});

routes("bad input on the new routes gets the same clear errors", async () => {
  const noEvent = await stack.post("/v1/t", { userId: "u", messageId: randomUUID() }, browser);
  assert.is(noEvent.status, 400);
  assert.is(noEvent.json!.error, "invalid_body");
  assert.equal(
    (noEvent.json!.issues as { path: string }[]).map((i) => i.path),
    ["event"],
  );
  const noBatch = await stack.post("/v1/b", { writeKey: "test-key", batch: "x" }, { "content-type": "text/plain" });
  assert.is(noBatch.status, 400);
  assert.is(noBatch.json!.error, "invalid_body");
  const badJson = await stack.post("/v1/i", "{", browser);
  assert.is(badJson.json!.error, "invalid_json");
  const noKey = await stack.post("/v1/t", { event: "E", userId: "u", messageId: randomUUID() }, { "content-type": "text/plain" });
  assert.is(noKey.status, 401);
  const unknownKey = await stack.post(
    "/v1/b",
    { writeKey: "nope", batch: [{ type: "track", event: "E", userId: "u", messageId: "m" }] },
    {},
  );
  assert.is(unknownKey.status, 401);
});

routes("the mobile upload: gzip, chunked, text/plain, writeKey in the body, to /v1/b, sent twice -> one row per message", async () => {
  const batch = Array.from({ length: 3 }, (_, i) => ({
    type: "track",
    event: "Mobile",
    anonymousId: "device-1",
    messageId: randomUUID(),
    context: { library: { name: "analytics-kotlin", version: "1.16.0" } },
    properties: { i },
  }));
  const body = JSON.stringify({ batch, writeKey: "test-key", sentAt: new Date().toISOString() });
  for (let attempt = 0; attempt < 2; attempt++) assert.is(await postGzipChunked("/v1/b", body), 200);
  // Analytics-CSharp: the same upload with no Content-Type header at all.
  assert.is(await postGzipChunked("/v1/b", body, {}), 200);
  const rows = await stack.rowsLanded<{ message_id: string; anonymous_id: string }>(batch.map((m) => m.messageId));
  assert.is(rows.length, 3, "one row per message under FINAL after two uploads");
  assert.ok(rows.every((r) => r.anonymous_id === "device-1"));
});

routes("the settings document: Segment.io pointed at this ingest, CORS, private caching by Host; an unknown key is 404", async () => {
  const response = await fetch(`${stack.base}/v1/projects/test-key/settings`, { headers: { origin: "https://shop.example" } });
  assert.is(response.status, 200);
  // No PUBLIC_URL: the address in it comes from the request, so no shared cache may keep it.
  assert.match(response.headers.get("cache-control") ?? "", /^private, max-age=\d+$/);
  const vary = (response.headers.get("vary") ?? "").split(",").map((v) => v.trim().toLowerCase());
  for (const header of ["origin", "host", "x-forwarded-host", "x-forwarded-proto"]) assert.ok(vary.includes(header), `Vary: ${vary}`);
  assert.is(response.headers.get("access-control-allow-origin"), "https://shop.example");
  const settings = (await response.json()) as {
    integrations: Record<string, { apiKey: string; apiHost: string; protocol: string }>;
    remotePlugins: unknown[];
  };
  assert.equal(Object.keys(settings.integrations), ["Segment.io"], "no destination bundles to load");
  assert.is(settings.integrations["Segment.io"]!.apiKey, "test-key");
  assert.is(settings.integrations["Segment.io"]!.apiHost, `${new URL(stack.base).host}/v1`);
  assert.is(settings.integrations["Segment.io"]!.protocol, "http");
  assert.equal(settings.remotePlugins, []);
  const unknown = await fetch(`${stack.base}/v1/projects/not-a-key/settings`);
  assert.is(unknown.status, 404);
  assert.not.ok((await unknown.text()).includes("not-a-key"), "the key is not echoed");
  assert.not.ok(stack.ingest!.output().includes("test-key"), "the key is never logged");
});

/** POSTs `body` gzipped with chunked transfer (no Content-Length), as analytics-kotlin uploads. */
function postGzipChunked(path: string, body: string, type: Record<string, string> = { "content-type": "text/plain" }): Promise<number> {
  const url = new URL(path, stack.base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { ...type, "content-encoding": "gzip" },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    const gzip = createGzip();
    gzip.pipe(req);
    // Several writes, so the body goes out in several chunks.
    for (let i = 0; i < body.length; i += 100) gzip.write(body.slice(i, i + 100));
    gzip.end();
  });
}

routes.run();
