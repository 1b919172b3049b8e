/**
 * Live end-to-end tests: HTTP -> real ingest -> real Kafka -> real sink -> real ClickHouse.
 * Needs the local stack (test/run.sh starts it). Each run uses its own topic and table.
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { ClickHouseClient } from "@clickhouse/client";
import { samples } from "./samples";
import {
  cleanup,
  clickhouse,
  clickhouseSettings,
  freePort,
  groupLag,
  runScript,
  select,
  spawnService,
  sqlList,
  stopService,
  waitFor,
  type Service,
} from "./harness";

interface Row {
  workspace_id: string;
  message_id: string;
  type: string;
  event: string;
  user_id: string;
  anonymous_id: string;
  timestamp: string;
  received_at: string;
  properties: string;
  traits: string;
  context: string;
}

const ctx = { base: "", ch: undefined as unknown as ClickHouseClient, ingest: undefined as unknown as Service, sink: undefined as unknown as Service };
const table = () => `${clickhouseSettings.database}.${clickhouseSettings.table}`;
const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString("base64")}`;

async function post(path: string, body: unknown, headers: Record<string, string> = { authorization: basic("test-key") }) {
  const response = await fetch(`${ctx.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

/** Rows under FINAL for these message ids. */
function finalRows(ids: string[]): Promise<Row[]> {
  return select<Row>(ctx.ch, `SELECT * FROM ${table()} FINAL WHERE message_id IN (${sqlList(ids)}) ORDER BY message_id`);
}

/** Waits until exactly `n` rows exist under FINAL for the ids. */
function rowsLanded(ids: string[], n = ids.length): Promise<Row[]> {
  return waitFor(`${n} rows for ${ids.length} ids`, async () => {
    const rows = await finalRows(ids);
    return rows.length === n ? rows : undefined;
  });
}

/** Posts one valid marker message and waits for its row: the sink has caught up with earlier posts. */
async function marker(): Promise<void> {
  const id = `marker-${randomUUID()}`;
  assert.is((await post("/api/public/apps/batch", { batch: [{ type: "track", event: "marker", userId: "m", messageId: id }] })).status, 204);
  await rowsLanded([id]);
}

function withIds<T extends { batch: { messageId: string }[] }>(body: T): T {
  return { ...body, batch: body.batch.map((m) => ({ ...m, messageId: randomUUID() })) };
}

const live = suite("pipeline (live Kafka + ClickHouse)");

live.before(async () => {
  await runScript("sink/setup.js");
  ctx.ch = clickhouse();
  const port = await freePort();
  ctx.base = `http://127.0.0.1:${port}`;
  ctx.ingest = spawnService("ingest/main.js", { INGEST_PORT: String(port) });
  ctx.sink = spawnService("sink/main.js");
  await waitFor("ingest /readyz", async () => ((await fetch(`${ctx.base}/readyz`)).status === 200 ? true : undefined));
});

live.after(async () => {
  await Promise.all([ctx.ingest && stopService(ctx.ingest), ctx.sink && stopService(ctx.sink)]);
  if (ctx.ch) {
    await cleanup(ctx.ch);
    await ctx.ch.close();
  }
});

live("identify -> 204 with an empty body, then one row with the right fields", async () => {
  const body = { ...samples.identify, messageId: randomUUID() };
  const response = await post("/api/public/apps/identify", body);
  assert.is(response.status, 204);
  assert.is(response.text, "");
  const [row] = await rowsLanded([body.messageId]);
  assert.is(row!.workspace_id, "ws-test");
  assert.is(row!.type, "identify");
  assert.is(row!.user_id, "1043");
  assert.is(row!.anonymous_id, "");
  assert.equal(JSON.parse(row!.traits), body.traits);
  assert.equal(JSON.parse(row!.context), { ip: "66.249.66.1" });
  assert.is(row!.timestamp.slice(0, 19).replace(" ", "T"), body.timestamp.slice(0, 19));
});

live("mixed identify+track batch -> one row per item", async () => {
  const body = withIds(samples.batch);
  assert.is((await post("/api/public/apps/batch", body)).status, 204);
  const rows = await rowsLanded(body.batch.map((m) => m.messageId));
  const byId = new Map(rows.map((r) => [r.message_id, r]));
  const track = byId.get(body.batch[1]!.messageId)!;
  assert.is(byId.get(body.batch[0]!.messageId)!.type, "identify");
  assert.is(track.type, "track");
  assert.is(track.event, "Added to cart");
  assert.equal(JSON.parse(track.properties), { productId: "ab123", price: 12.5 });
  assert.equal(JSON.parse(track.context), { ip: "66.249.66.1" }, "batch context merged into the item");
});

live("a batch of every message type -> one row each, typed", async () => {
  const body = withIds(samples.everyType);
  assert.is((await post("/api/public/apps/batch", body)).status, 204);
  const rows = await rowsLanded(body.batch.map((m) => m.messageId));
  assert.equal(rows.map((r) => r.type).sort(), ["alias", "group", "identify", "page", "screen", "track"]);
});

live("the same messageId posted twice, without timestamp, seconds apart -> one row (the later)", async () => {
  const id = randomUUID();
  const message = { type: "track", event: "Retried", userId: "u-retry", messageId: id };
  assert.is((await post("/api/public/apps/batch", { batch: [message] })).status, 204);
  const [first] = await rowsLanded([id]);
  await new Promise((r) => setTimeout(r, 1_100)); // received_at differs by at least a second
  assert.is((await post("/api/public/apps/batch", { batch: [message] })).status, 204);
  const rows = await waitFor("the retry to replace the first row", async () => {
    const found = await finalRows([id]);
    return found.length === 1 && found[0]!.received_at > first!.received_at ? found : undefined;
  });
  assert.is(rows.length, 1);
  const [{ n }] = await select<{ n: string }>(ctx.ch, `SELECT count() AS n FROM ${table()} FINAL WHERE message_id = '${id}'`);
  assert.is(Number(n), 1);
});

live("an invalid batch -> 400 naming each bad field, and none of it is stored", async () => {
  const good = randomUUID();
  const body = {
    batch: [
      { type: "track", event: "Fine", userId: "u", messageId: good },
      { type: "track", userId: "u", messageId: randomUUID() },
      { type: "identify", messageId: randomUUID(), traits: "not-an-object", userId: "u" },
    ],
  };
  const response = await post("/api/public/apps/batch", body);
  assert.is(response.status, 400);
  assert.is(response.json!.error, "invalid_body");
  const paths = (response.json!.issues as { path: string }[]).map((i) => i.path).sort();
  assert.equal(paths, ["batch[1].event", "batch[2].traits"]);
  await marker();
  assert.equal(await finalRows(body.batch.map((m) => m.messageId)), []);
});

live("malformed JSON -> 400, wrong Content-Type -> 415, oversized body -> 413", async () => {
  const bad = await post("/api/public/apps/batch", "{\"batch\": [");
  assert.is(bad.status, 400);
  assert.is(bad.json!.error, "invalid_json");
  const text = await fetch(`${ctx.base}/api/public/apps/batch`, {
    method: "POST",
    headers: { authorization: basic("test-key"), "content-type": "application/xml" },
    body: "<batch/>",
  });
  assert.is(text.status, 415);
  assert.is(((await text.json()) as { error: string }).error, "unsupported_media_type");
  const huge = { batch: [{ type: "track", event: "Big", userId: "u", messageId: randomUUID(), properties: { blob: "x".repeat(600 * 1024) } }] };
  const big = await post("/api/public/apps/batch", huge);
  assert.is(big.status, 413);
  assert.is(big.json!.error, "payload_too_large");
});

live("a missing or unknown writeKey -> 401 and nothing stored", async () => {
  const ids = [randomUUID(), randomUUID()];
  const missing = await post("/api/public/apps/batch", { batch: [{ type: "track", event: "E", userId: "u", messageId: ids[0] }] }, {});
  assert.is(missing.status, 401);
  assert.is(missing.json!.error, "unauthorized");
  const unknown = await post("/api/public/apps/identify", { messageId: ids[1], userId: "u" }, { authorization: basic("nope") });
  assert.is(unknown.status, 401);
  await marker();
  assert.equal(await finalRows(ids), []);
});

live("sink SIGKILLed after its insert but before its commit, restarted -> still one row per messageId", async () => {
  await stopService(ctx.sink);
  const before = await groupLag();
  assert.is(before.committed, before.end, "the graceful stop committed everything");
  const crashing = spawnService("sink/main.js", { SINK_CRASH_AFTER_INSERT: "1" });
  const body = { batch: Array.from({ length: 30 }, (_, i) => ({ type: "track", event: `Crash ${i}`, userId: "u-crash", messageId: randomUUID() })) };
  const ids = body.batch.map((m) => m.messageId);
  assert.is((await post("/api/public/apps/batch", body)).status, 204);
  const exit = await crashing.exited;
  assert.is(exit.signal, "SIGKILL");
  const [{ n: inserted }] = await select<{ n: string }>(ctx.ch, `SELECT count() AS n FROM ${table()} WHERE message_id IN (${sqlList(ids)})`);
  assert.ok(Number(inserted) > 0, "the crashing sink inserted rows before dying");
  const crashed = await groupLag();
  assert.ok(crashed.committed < crashed.end, "those rows were not committed");

  ctx.sink = spawnService("sink/main.js");
  await waitFor("the restarted sink to commit to the end", async () => {
    const lag = await groupLag();
    return lag.committed === lag.end ? lag : undefined;
  }, 40_000); // the killed member holds its partitions until its 6 s session times out
  const rows = await rowsLanded(ids);
  assert.is(rows.length, 30);
  const [{ total, unique }] = await select<{ total: string; unique: string }>(
    ctx.ch,
    `SELECT count() AS total, uniqExact(message_id) AS unique FROM ${table()} FINAL WHERE message_id IN (${sqlList(ids)})`,
  );
  assert.is(Number(total), 30);
  assert.is(Number(unique), 30);
});

live.run();
