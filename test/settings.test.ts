import { test } from "uvu";
import * as assert from "uvu/assert";
import { publicAddress, settingsDocument } from "../ingest/settings";
import { routeTable } from "../ingest/routes";

test("PUBLIC_URL wins over the request's address; unset, the request's protocol and host are used", () => {
  const seen = { protocol: "http", host: "10.0.0.5:3000" };
  assert.equal(publicAddress("https://ingest.example.com", seen), { protocol: "https", host: "ingest.example.com" });
  assert.equal(publicAddress("http://127.0.0.1:8080/", seen), { protocol: "http", host: "127.0.0.1:8080" });
  assert.equal(publicAddress(undefined, seen), seen);
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
  const paths = new Map(routeTable({ maxBatchMessages: 10 }).map((r) => [r.path, r.kind]));
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

test.run();
