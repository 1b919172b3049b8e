/**
 * Live end-to-end tests of the delivery path: HTTP -> real ingest -> real Kafka -> real sink ->
 * real ClickHouse. Needs the local stack (test/run.sh starts it).
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, LiveStack, sqlList, stopService, waitFor } from "../support/harness";
import { samples } from "../support/samples";
import { ENRICHMENT_COLUMNS, NO_ENRICHMENT } from "../../schemas/enrichment";

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
  catalog_keys?: string[];
}

const stack = new LiveStack();
const live = suite("pipeline (live Kafka + ClickHouse)");

function withIds<T extends { batch: { messageId: string }[] }>(body: T): T {
  return { ...body, batch: body.batch.map((m) => ({ ...m, messageId: randomUUID() })) };
}

live.before(() => stack.start());
live.after(() => stack.stop());

live("identify -> 200 with an empty body, then one row with the right fields", async () => {
  const body = { ...samples.identify, messageId: randomUUID() };
  const response = await stack.post("/api/public/apps/identify", body);
  assert.is(response.status, 200);
  assert.is(response.text, "");
  const [row] = await stack.rowsLanded<Row>([body.messageId]);
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
  assert.is((await stack.post("/api/public/apps/batch", body)).status, 200);
  const rows = await stack.rowsLanded<Row>(body.batch.map((m) => m.messageId));
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
  assert.is((await stack.post("/api/public/apps/batch", body)).status, 200);
  const rows = await stack.rowsLanded<Row>(body.batch.map((m) => m.messageId));
  assert.equal(rows.map((r) => r.type).sort(), ["alias", "group", "identify", "page", "screen", "track"]);
});

live("the same messageId posted twice, without timestamp, seconds apart -> one row (the later)", async () => {
  const id = randomUUID();
  const message = { type: "track", event: "Retried", userId: "u-retry", messageId: id };
  assert.is((await stack.post("/api/public/apps/batch", { batch: [message] })).status, 200);
  const [first] = await stack.rowsLanded<Row>([id]);
  await new Promise((r) => setTimeout(r, 1_100)); // received_at differs by at least a second
  assert.is((await stack.post("/api/public/apps/batch", { batch: [message] })).status, 200);
  const rows = await waitFor("the retry to replace the first row", async () => {
    const found = await stack.finalRows<Row>([id]);
    return found.length === 1 && found[0]!.received_at > first!.received_at ? found : undefined;
  });
  assert.is(rows.length, 1);
  const [{ n }] = (await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} FINAL WHERE message_id = '${id}'`)) as [
    { n: string },
  ];
  assert.is(Number(n), 1);
});

live(
  "every field a client sends is kept: a track's name and category, an identify's event, a batch's integrations go to extra",
  async () => {
    const [t, i] = [randomUUID(), randomUUID()];
    const body = {
      integrations: { All: false, Mixpanel: true },
      batch: [
        { type: "track", event: "E", name: "n1", category: "c1", userId: "u-extra", messageId: t },
        { type: "identify", event: "signed up", userId: "u-extra", messageId: i, integrations: { Mixpanel: false } },
      ],
    };
    assert.is((await stack.post("/v1/batch", body)).status, 200);
    const rows = await stack.rowsLanded<Row & { extra: string; name: string }>([t, i]);
    const byId = new Map(rows.map((r) => [r.message_id, r]));
    assert.is(byId.get(t)!.name, "");
    assert.equal(JSON.parse(byId.get(t)!.extra), { name: "n1", category: "c1", integrations: { All: false, Mixpanel: true } });
    assert.equal(JSON.parse(byId.get(i)!.extra), { event: "signed up", integrations: { All: false, Mixpanel: false } });
  },
);

live("client times: 2106 is refused by name and kept; 1975 places the row at its arrival and keeps the text", async () => {
  const [late, early] = [randomUUID(), randomUUID()];
  const refused = await stack.post("/v1/track", { event: "E", userId: "u-time", messageId: late, timestamp: "2106-01-15T12:00:00.000Z" });
  assert.is(refused.status, 400);
  assert.match(refused.text, /timestamp/);
  await waitFor("the refused item in rejected_messages", async () => {
    const [row] = await stack.select<{ n: string }>(
      `SELECT count() AS n FROM ${stack.database}.rejected_messages WHERE message_id = '${late}'`,
    );
    return Number(row!.n) === 1 ? true : undefined;
  });
  assert.is(
    (await stack.post("/v1/track", { event: "E", userId: "u-time", messageId: early, timestamp: "1975-03-02T00:00:00.000Z" })).status,
    200,
  );
  await stack.rowsLanded([early]);
  const [row] = await stack.select<{ day: string; today: string; original: string | null; extra: string }>(
    `SELECT toString(event_date) AS day, toString(toDate(received_at)) AS today, original_timestamp AS original, extra FROM ${stack.table} FINAL WHERE message_id = '${early}'`,
  );
  assert.is(row!.day, row!.today);
  assert.is(row!.original, null);
  assert.equal(JSON.parse(row!.extra), { timestamp: "1975-03-02T00:00:00.000Z" });
});

live("one messageId sent as a page and as a screen is two rows (GUARANTEES: a messageId is unique within its type)", async () => {
  const id = randomUUID();
  const at = "2026-11-20T10:00:00.000Z";
  assert.is((await stack.post("/v1/page", { name: "Home", userId: "u-types", messageId: id, timestamp: at })).status, 200);
  assert.is((await stack.post("/v1/screen", { name: "Home", userId: "u-types", messageId: id, timestamp: at })).status, 200);
  const rows = await waitFor("both rows", async () => {
    const found = await stack.finalRows<Row>([id]);
    return found.length === 2 ? found : undefined;
  });
  assert.equal(rows.map((r) => r.type).sort(), ["page", "screen"]);
});

live("a batch with bad items: the good ones land, each bad one is kept in rejected_messages with its reasons", async () => {
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  const body = {
    batch: [
      { type: "track", event: "Fine", userId: "u", messageId: ids[0] },
      { type: "track", userId: "u", messageId: ids[1] },
      { type: "identify", messageId: ids[2], traits: "not-an-object", userId: "u" },
    ],
  };
  const response = await stack.post("/api/public/apps/batch", body);
  assert.is(response.status, 200);
  assert.is(response.text, "", "the spec's empty success body");
  assert.is(response.headers.get("x-rejected-messages"), "2");
  const [fine] = await stack.rowsLanded([ids[0]!]);
  assert.is(fine!.event, "Fine");
  const rejected = await waitFor("the refused items in rejected_messages", async () => {
    const rows = await stack.select<{ message_id: string; reasons: string[]; raw: string; type: string; workspace_id: string }>(
      `SELECT message_id, reasons, raw, type, workspace_id FROM ${stack.database}.rejected_messages FINAL WHERE message_id IN ('${ids[1]}', '${ids[2]}') ORDER BY message_id`,
    );
    return rows.length === 2 ? rows : undefined;
  });
  const byId = Object.fromEntries(rejected.map((r) => [r.message_id, r]));
  assert.equal(
    byId[ids[1]!]!.reasons.map((r) => r.split(":")[0]),
    ["batch[1].event"],
  );
  assert.equal(
    byId[ids[2]!]!.reasons.map((r) => r.split(":")[0]),
    ["batch[2].traits"],
  );
  assert.equal(JSON.parse(byId[ids[2]!]!.raw), body.batch[2]);
  assert.is(byId[ids[1]!]!.type, "track");
  assert.is(byId[ids[1]!]!.workspace_id, "ws-test");
  assert.equal(await stack.finalRows([ids[1]!, ids[2]!]), [], "no refused item is among the events");
});

live("a batch with no valid item -> 400 naming each bad field; the items are still kept in rejected_messages", async () => {
  const ids = [randomUUID(), randomUUID()];
  const body = {
    batch: [
      { type: "track", userId: "u", messageId: ids[0] },
      { type: "identify", messageId: ids[1], traits: 5, userId: "u" },
    ],
  };
  const response = await stack.post("/v1/batch", body);
  assert.is(response.status, 400);
  assert.is(response.json!.error, "invalid_body");
  assert.equal((response.json!.issues as { path: string }[]).map((i) => i.path).sort(), ["batch[0].event", "batch[1].traits"]);
  const kept = await waitFor("both in rejected_messages", async () => {
    const rows = await stack.select<{ n: string }>(
      `SELECT count() AS n FROM ${stack.database}.rejected_messages FINAL WHERE message_id IN ('${ids[0]}', '${ids[1]}')`,
    );
    return Number(rows[0]!.n) === 2 ? 2 : undefined;
  });
  assert.is(kept, 2);
  // The same items sent again are one row each (the rejection id is a hash of workspace and item).
  assert.is((await stack.post("/v1/batch", body)).status, 400);
  await stack.marker();
  const [again] = await stack.select<{ n: string }>(
    `SELECT count() AS n FROM ${stack.database}.rejected_messages FINAL WHERE message_id IN ('${ids[0]}', '${ids[1]}')`,
  );
  assert.is(Number(again!.n), 2);
});

live("malformed JSON -> 400, wrong Content-Type -> 415, oversized body -> 413", async () => {
  const bad = await stack.post("/api/public/apps/batch", '{"batch": [');
  assert.is(bad.status, 400);
  assert.is(bad.json!.error, "invalid_json");
  const xml = await stack.post("/api/public/apps/batch", "<batch/>", {
    authorization: basic("test-key"),
    "content-type": "application/xml",
  });
  assert.is(xml.status, 415);
  assert.is(xml.json!.error, "unsupported_media_type");
  const huge = {
    batch: [{ type: "track", event: "Big", userId: "u", messageId: randomUUID(), properties: { blob: "x".repeat(600 * 1024) } }],
  };
  const big = await stack.post("/api/public/apps/batch", huge);
  assert.is(big.status, 413);
  assert.is(big.json!.error, "payload_too_large");
});

live("a missing or unknown writeKey -> 401 and nothing stored", async () => {
  const ids = [randomUUID(), randomUUID()];
  const missing = await stack.post(
    "/api/public/apps/batch",
    { batch: [{ type: "track", event: "E", userId: "u", messageId: ids[0] }] },
    {},
  );
  assert.is(missing.status, 401);
  assert.is(missing.json!.error, "unauthorized");
  const unknown = await stack.post("/api/public/apps/identify", { messageId: ids[1], userId: "u" }, { authorization: basic("nope") });
  assert.is(unknown.status, 401);
  await stack.marker();
  assert.equal(await stack.finalRows(ids), []);
});

live("sink SIGKILLed after its insert but before its commit, restarted -> still one row per messageId", async () => {
  await stopService(stack.sink!);
  const before = await stack.groupLag();
  assert.is(before.committed, before.end, "the graceful stop committed everything");
  const crashing = stack.spawn("sink/main.js", { SINK_CRASH_AT: "after-insert" });
  const body = {
    batch: Array.from({ length: 30 }, (_, i) => ({ type: "track", event: `Crash ${i}`, userId: "u-crash", messageId: randomUUID() })),
  };
  const ids = body.batch.map((m) => m.messageId);
  assert.is((await stack.post("/api/public/apps/batch", body)).status, 200);
  const exit = await crashing.exited;
  assert.is(exit.signal, "SIGKILL");
  const [inserted] = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} WHERE message_id IN (${sqlList(ids)})`);
  assert.ok(Number(inserted!.n) > 0, "the crashing sink inserted rows before dying");
  const crashed = await stack.groupLag();
  assert.ok(crashed.committed < crashed.end, "those rows were not committed");

  stack.sink = stack.spawn("sink/main.js");
  await waitFor(
    "the restarted sink to commit to the end",
    async () => {
      const lag = await stack.groupLag();
      return lag.committed === lag.end ? lag : undefined;
    },
    40_000, // the killed member holds its partitions until its 6 s session times out
  );
  const rows = await stack.rowsLanded(ids);
  assert.is(rows.length, 30);
  const [counts] = await stack.select<{ total: string; unique: string }>(
    `SELECT count() AS total, uniqExact(message_id) AS unique FROM ${stack.table} FINAL WHERE message_id IN (${sqlList(ids)})`,
  );
  assert.is(Number(counts!.total), 30);
  assert.is(Number(counts!.unique), 30);
});

live("an earlier release's envelope (format 1) on the topic lands like the ingest's rows (format 2), both the same row", async () => {
  const viaIngest = { ...samples.identify, messageId: randomUUID() };
  assert.is((await stack.post("/api/public/apps/identify", viaIngest)).status, 200);
  const [stored] = await stack.rowsLanded<Row>([viaIngest.messageId]);
  // What the previous ingest wrote for the same message: the envelope around it.
  const legacyId = randomUUID();
  const envelope = {
    workspaceId: "ws-test",
    receivedAt: new Date(Date.parse(stored!.received_at.replace(" ", "T") + "Z")).toISOString(),
    originalTimestamp: viaIngest.timestamp,
    message: { ...viaIngest, type: "identify", messageId: legacyId, timestamp: viaIngest.timestamp, context: JSON.parse(stored!.context) },
  };
  const producer = stack.kafka.producer();
  await producer.connect();
  await producer.send({ topic: stack.env.KAFKA_TOPIC!, acks: -1, messages: [{ key: legacyId, value: JSON.stringify(envelope) }] });
  await producer.disconnect();
  const [legacy] = await stack.rowsLanded<Row>([legacyId]);
  // An earlier release's envelope was not enriched by its ingest: the sink stores the defaults.
  const enriched = Object.fromEntries(ENRICHMENT_COLUMNS.map((c) => [c, (stored as unknown as Record<string, unknown>)[c]]));
  assert.is(enriched.country, "US", "the ingest's row: 66.249.66.1 in the bundled database");
  // The ingest lists a shape's keys only until a request listing it was acknowledged (ingest/records/catalog.ts):
  // its row carries the list or, when an earlier test sent this traits shape, the hash alone.
  assert.is(legacy!.catalog_keys?.length, 5, "the sink lists a format-1 envelope's keys itself");
  assert.ok(
    stored!.catalog_keys?.length === 0 || stored!.catalog_keys?.join() === legacy!.catalog_keys?.join(),
    stored!.catalog_keys?.join(),
  );
  assert.equal({ ...legacy, message_id: "", catalog_keys: [] }, { ...stored, ...NO_ENRICHMENT, message_id: "", catalog_keys: [] });
});

live.run();
