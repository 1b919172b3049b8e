/**
 * The settings document analytics.js and the mobile SDKs load (ingest/http/settings.ts) and the SDK
 * paths the routes accept (ingest/http/routes.ts), pure and through the app in this process.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { inProcessIngest } from "../../../support/ingest-app";
import { hostAllowed, hostPolicy, publicAddress, settingsDocument } from "../../../../ingest/http/settings";
import { routeTable } from "../../../../ingest/http/routes";

test("PUBLIC_URL wins over the request's address; unset, the request's protocol and host are used", () => {
  const seen = { protocol: "http", host: "10.0.0.5:3000" };
  assert.equal(publicAddress("https://ingest.example.com", seen), { protocol: "https", host: "ingest.example.com" });
  assert.equal(publicAddress("http://127.0.0.1:8080/", seen), { protocol: "http", host: "127.0.0.1:8080" });
  assert.equal(publicAddress(undefined, seen), seen);
});

test("without PUBLIC_URL a Host is named only when allowed: listed hosts, else loopback names and IP literals", () => {
  const none = hostPolicy(undefined);
  for (const host of ["127.0.0.1:3000", "10.0.0.5", "localhost:3000", "app.localhost", "[::1]:3000"])
    assert.ok(hostAllowed(host, none), host);
  for (const host of ["evil.example", "evil.example:3000", "127.0.0.1.evil.example", "", "[::1]evil"])
    assert.not.ok(hostAllowed(host, none), host);
  const listed = hostPolicy(" Ingest.Example.com , other.example:8443,");
  assert.ok(hostAllowed("ingest.example.com", listed));
  assert.ok(hostAllowed("INGEST.example.com:443", listed), "a name allows every port");
  assert.ok(hostAllowed("other.example:8443", listed));
  assert.not.ok(hostAllowed("other.example:8444", listed), "a name:port allows that port only");
  assert.not.ok(hostAllowed("127.0.0.1", listed), "a list replaces the default");
  assert.is(publicAddress(undefined, { protocol: "http", host: "evil.example" }, none), undefined);
});

test("the document points Segment.io at <host>/v1 and loads nothing else", () => {
  const doc = settingsDocument("wk", { protocol: "https", host: "ingest.example.com" }) as {
    integrations: Record<string, { apiKey: string; apiHost: string; protocol: string }>;
    remotePlugins: unknown[];
    metrics: { sampleRate: number };
  };
  assert.equal(doc.integrations["Segment.io"], {
    ...doc.integrations["Segment.io"],
    apiKey: "wk",
    apiHost: "ingest.example.com/v1",
    protocol: "https",
  });
  assert.equal(Object.keys(doc.integrations), ["Segment.io"]);
  assert.equal(doc.remotePlugins, []);
  assert.is(doc.metrics.sampleRate, 0, "no metrics posted to another host");
  assert.is(
    (doc.integrations["Segment.io"] as unknown as { retryQueue: boolean }).retryQueue,
    true,
    "analytics.js retries 5xx only with a retry queue",
  );
});

test("every SDK path is a route: analytics.js's letters, /v1/b and /v1/import", () => {
  const paths = new Map(routeTable({ maxBatchMessages: 10, maxRequestBytes: 1024 }).map((r) => [r.path, r.kind]));
  for (const [path, kind] of [
    ["/v1/t", "track"],
    ["/v1/i", "identify"],
    ["/v1/p", "page"],
    ["/v1/s", "screen"],
    ["/v1/g", "group"],
    ["/v1/a", "alias"],
    ["/v1/b", "batch"],
    ["/v1/import", "batch"],
    ["/api/public/apps/batch", "batch"],
  ]) {
    assert.is(paths.get(path!), kind, path);
  }
});

/**
 * The ingest app in this process (test/support/ingest-app.ts) behind one trusted proxy, with or
 * without PUBLIC_URL; `get` fetches the settings with extra request headers.
 */
async function settingsApp(publicUrl?: string, allowedHosts?: string) {
  const ingest = await inProcessIngest({
    trustedProxies: 1,
    ...(publicUrl === undefined ? {} : { publicUrl }),
    allowedHosts: hostPolicy(allowedHosts),
  });
  const get = async (headers: Record<string, string> = {}) => {
    const response = await fetch(`${ingest.base}/v1/projects/wk/settings`, { headers });
    const doc = (await response.json()) as { integrations?: Record<string, { apiHost: string; protocol: string }>; error?: string };
    return { status: response.status, headers: response.headers, segment: doc.integrations?.["Segment.io"], error: doc.error };
  };
  return { get, close: () => ingest.close() };
}

test("without PUBLIC_URL the document follows an allowed forwarded host, so it is private and varies by Host and X-Forwarded-*", async () => {
  const app = await settingsApp(undefined, "a.example");
  try {
    const a = await app.get({ "x-forwarded-host": "a.example", "x-forwarded-proto": "https" });
    const b = await app.get({ "x-forwarded-host": "evil.example" });
    assert.is(a.segment?.apiHost, "a.example/v1");
    assert.is(a.segment?.protocol, "https");
    assert.is(b.status, 421, "a Host nobody allowed never becomes the apiHost");
    assert.is(b.error, "host_not_allowed");
    assert.match(a.headers.get("cache-control") ?? "", /^private, max-age=\d+$/);
    assert.not.match(a.headers.get("cache-control") ?? "", "public");
    assert.match(a.headers.get("vary") ?? "", /Host, X-Forwarded-Host, X-Forwarded-Proto/);
  } finally {
    await app.close();
  }
});

test("with PUBLIC_URL the document is the same for every request and publicly cacheable", async () => {
  const app = await settingsApp("https://ingest.example.com");
  try {
    const a = await app.get({ "x-forwarded-host": "evil.example" });
    assert.is(a.segment?.apiHost, "ingest.example.com/v1", "the forwarded host is ignored");
    assert.match(a.headers.get("cache-control") ?? "", /^public, max-age=\d+$/);
    assert.not.match(a.headers.get("vary") ?? "", /Host/);
  } finally {
    await app.close();
  }
});

test.run();
