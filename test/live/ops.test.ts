/**
 * Operations, live: /metrics on ingest and sink appear and move after traffic, without workspace
 * ids or keys in them; the keys file CLI round trip (`keys ... --file`) against a running ingest (create -> the key
 * authenticates -> revoke -> 401, no restart); request ids; logs without keys or bodies.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminPort, basic, LiveStack, sinkPort, waitFor } from "../support/harness";

const keysFile = join(mkdtempSync(join(tmpdir(), "keys-")), "write-keys");
const stack = new LiveStack({ WRITE_KEYS_FILE: keysFile });
const ops = suite("operations (live)");

ops.before(() => stack.start());
ops.after(() => stack.stop());

/** The value of one sample line of Prometheus text (0 when absent). */
function sample(text: string, name: string, labels = ""): number {
  const line = text
    .split("\n")
    .find((l) => l.startsWith(labels ? `${name}{${labels}}` : `${name} `) || (labels === "" && l.startsWith(`${name}{`)));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

const ingestMetricsPort = () => adminPort(stack.ingest!);

ops("metrics of ingest and sink appear and move after a batch; no ids or keys in them", async () => {
  const sinkMetricsUrl = `http://127.0.0.1:${await sinkPort(stack.sink!)}/metrics`;
  const ingestMetricsUrl = `http://127.0.0.1:${await ingestMetricsPort()}/metrics`;
  assert.is((await fetch(`${stack.base}/metrics`)).status, 404, "/metrics is not served on the public port");
  const scrape = async () => [await (await fetch(ingestMetricsUrl)).text(), await (await fetch(sinkMetricsUrl)).text()] as const;
  const [ingestBefore, sinkBefore] = await scrape();
  const batch = Array.from({ length: 25 }, () => ({ type: "track", event: "Metered", userId: "u-metrics", messageId: randomUUID() }));
  assert.is((await stack.post("/v1/batch", { batch })).status, 200);
  await stack.rowsLanded(batch.map((m) => m.messageId));
  const [ingestAfter, sinkAfter] = await waitFor("sink metrics to count the rows", async () => {
    const both = await scrape();
    return sample(both[1], "sink_rows_inserted_total", `topic="${stack.env.KAFKA_TOPIC}"`) >= 25 ? both : undefined;
  });
  const route = 'route="/v1/batch",status="200"';
  assert.is(sample(ingestAfter, "ingest_requests_total", route) - sample(ingestBefore, "ingest_requests_total", route), 1);
  const produced = `topic="${stack.env.KAFKA_TOPIC}"`;
  assert.is(
    sample(ingestAfter, "ingest_records_produced_total", produced) - sample(ingestBefore, "ingest_records_produced_total", produced),
    25,
  );
  assert.ok(
    sample(ingestAfter, "ingest_produce_duration_seconds_count", 'status="ok"') >
      sample(ingestBefore, "ingest_produce_duration_seconds_count", 'status="ok"'),
  );
  assert.ok(sample(ingestAfter, "ingest_request_duration_seconds_count", 'route="/v1/batch"') >= 1);
  assert.ok(sample(sinkAfter, "sink_rows_inserted_total", produced) - sample(sinkBefore, "sink_rows_inserted_total", produced) >= 25);
  assert.ok(sinkAfter.includes("sink_batch_write_seconds_count"));
  assert.ok(sinkAfter.includes("sink_event_delay_seconds_count"));
  assert.ok(sinkAfter.includes("sink_consumer_lag_records{"));
  assert.ok(sinkAfter.includes('sink_commits_total{status="ok"}'));
  // The copies of the topics, read from Kafka's metadata at start (one broker here: 1 of 1).
  assert.is(sample(sinkAfter, "sink_kafka_partition_replicas", `${produced},partition="0"`), 1);
  assert.is(sample(sinkAfter, "sink_kafka_partition_in_sync_replicas", `${produced},partition="0"`), 1);
  assert.not.ok(sinkAfter.includes("sink_clickhouse_replicas{"), "one ClickHouse server: no replicated table");
  for (const text of [ingestAfter, sinkAfter]) {
    assert.not.ok(
      text.includes("ws-test") || text.includes("test-key") || text.includes("u-metrics"),
      "no workspace, key or user in metrics",
    );
  }
  const shown = ingestAfter
    .split("\n")
    .filter((l) => /^ingest_(requests_total|records_produced_total|produce_duration_seconds_(count|sum))/.test(l));
  const sinkShown = sinkAfter
    .split("\n")
    .filter((l) =>
      /^sink_(rows_inserted_total|batch_rows_(count|sum)|batch_write_seconds_(count|sum)|event_delay_seconds_(count|sum)|commits_total|consumer_lag_records)/.test(
        l,
      ),
    );
  console.log(`\n  /metrics after a batch of 25:\n    ${[...shown, ...sinkShown].join("\n    ")}`);
});

/**
 * Creates a key for `workspaceId` with the keys CLI and waits until the running ingest accepts it;
 * returns a function posting one track event with that key (resolving with the status).
 */
async function newKeyPoster(workspaceId: string): Promise<() => Promise<number>> {
  const create = stack.spawn("deploy/cli.js", { WRITE_KEYS_FILE: keysFile }, ["keys", "create", workspaceId, "--file"]);
  assert.is((await create.exited).code, 0, create.output());
  const key = create
    .output()
    .split("\n")
    .find((l) => l.startsWith("wk_"));
  assert.ok(key, create.output());
  const post = async () =>
    (await stack.post("/v1/track", { event: "Keyed", userId: "u", messageId: randomUUID() }, { authorization: basic(key!) })).status;
  await waitFor("the new key to authenticate", async () => ((await post()) === 200 ? true : undefined), 10_000);
  return post;
}

ops("keys CLI round trip: create -> the key authenticates -> revoke -> 401, without a restart", async () => {
  const post = await newKeyPoster("ws-keys");
  const revoke = stack.spawn("deploy/cli.js", { WRITE_KEYS_FILE: keysFile }, ["keys", "revoke", "ws-keys", "--file"]);
  assert.is((await revoke.exited).code, 0, revoke.output());
  await waitFor("the revoked key to be refused", async () => ((await post()) === 401 ? true : undefined), 10_000);
  assert.is(stack.ingest!.child.exitCode, null, "the same ingest process");
});

ops("a keys file that disappears keeps the last good keys (and says so); its return is read again", async () => {
  const post = await newKeyPoster("ws-vanish");
  const saved = readFileSync(keysFile, "utf8");
  rmSync(keysFile);
  await waitFor("the ingest to notice", async () => (stack.ingest!.output().includes("keys file is gone") ? true : undefined), 10_000);
  assert.is(await post(), 200, "the key still authenticates while the file is gone");
  // A Secret remount puts the file back, without the key this time: now it is revoked.
  writeFileSync(
    keysFile,
    saved
      .split("\n")
      .filter((l) => !l.endsWith("=ws-vanish"))
      .join("\n"),
  );
  await waitFor("the key to be refused once the file says so", async () => ((await post()) === 401 ? true : undefined), 10_000);
});

ops("request ids: a client's X-Request-Id is echoed, others get a new one", async () => {
  const given = await stack.post(
    "/v1/track",
    { event: "E", userId: "u", messageId: randomUUID() },
    { authorization: basic("test-key"), "x-request-id": "client-abc-123" },
  );
  assert.is(given.headers.get("x-request-id"), "client-abc-123");
  const fresh = await stack.post("/v1/track", { event: "E", userId: "u", messageId: randomUUID() });
  assert.match(fresh.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
});

ops("logs are pino JSON lines without writeKeys or message bodies", async () => {
  await stack.post("/v1/track", { event: "Secret Event Name", userId: "u", messageId: randomUUID() }, { authorization: basic("test-key") });
  await stack.post("/v1/track", { event: "E" }, { authorization: basic("not-a-key-9f8e7d") });
  const lines = stack.ingest!.output().split("\n").filter(Boolean);
  assert.ok(lines.length > 0);
  for (const line of lines) assert.ok(JSON.parse(line).level !== undefined, line);
  const text = lines.join("\n");
  assert.not.ok(text.includes("test-key") || text.includes("not-a-key-9f8e7d") || text.includes("Secret Event Name"));
});

ops.run();
