/**
 * The catalog views (schemas/clickhouse/catalog.ts) on both engines, ClickHouse 18.16 (the live local
 * server) and current ClickHouse (chdb): rows inserted as the sink inserts them, a retry of two
 * messages in a later insert (only the shape's hash: its list went out earlier), and the catalogs count each message once, keep the first and last
 * receipt and every JSON type a key was sent with; the enrichment columns reach the type views;
 * rows the ingest marked over their workspace's daily caps make one over-cap row per type and day,
 * and setup replaces a catalog view of an earlier release.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Sql } from "../../schemas/clickhouse/client";
import { readCatalog } from "../../deploy/commands/catalog";
import type { Message } from "../../schemas/messages";
import { messageRow } from "../../schemas/row";
import type { Enrichment } from "../../schemas/enrichment";
import { migrate } from "../../deploy/setup/migrate";
import { openCurrentEngine, openLegacyServer, type OpenEngine } from "../support/engines";
import { OVER_CAP_SHAPE } from "../../schemas/catalog";
import { CATALOG_MV, catalogFeed } from "../../schemas/clickhouse/catalog";

const BOT: Enrichment = { browser: "", browser_version: "", os: "", device_type: "bot", is_bot: 1, country: "FR" };

/** A row as the sink inserts it; `listed` false: only its shape's hash, as the ingest sends once the list went out (ingest/records/catalog.ts). */
function line(message: Message, receivedAt: string, enrichment?: Enrichment, listed = true): string {
  const context = { ip: "198.51.100.0", userAgent: "Googlebot/2.1" };
  const time = "2026-11-20T10:00:00.000Z";
  const stamp = { workspaceId: "ws1", receivedAt, sentAt: null, originalTimestamp: time, timestamp: time, context };
  const row = messageRow(message, enrichment === undefined ? stamp : { ...stamp, enrichment });
  return JSON.stringify(listed ? row : { ...row, catalog_keys: undefined });
}

const order = (id: string, plan: unknown): Message => ({
  type: "track",
  messageId: id,
  userId: "u1",
  event: "Order Completed",
  properties: { plan, revenue: 10 },
});

function catalogSuite(name: string, open: () => Promise<OpenEngine>, database: string) {
  const s = suite(name);
  let sql: Sql;
  let close: () => Promise<void>;
  s.before(async () => {
    ({ sql, close } = await open());
    await sql.command(`DROP DATABASE IF EXISTS ${database}`);
    await migrate(sql, { url: "", username: "", password: "", database, table: "events" });
  });
  s.after(async () => {
    await sql.command(`DROP DATABASE IF EXISTS ${database}`);
    await close();
  });

  s("retried messages count once; first and last receipt; every JSON type a key was sent with", async () => {
    const insert = (lines: string[]) => sql.command(`INSERT INTO ${database}.events FORMAT JSONEachRow\n${lines.join("\n")}`);
    const page: Message = { type: "page", messageId: "p1", anonymousId: "a1", name: "Home", properties: { path: "/" } };
    await insert([
      line(order("m1", "pro"), "2026-11-24T10:00:00.000Z", BOT),
      line(order("m2", "team"), "2026-11-24T10:00:01.000Z", undefined, false), // m1's shape, listed by m1
      line(order("m3", 3), "2026-11-24T10:00:02.000Z"),
      line(page, "2026-11-24T10:00:03.000Z"),
    ]);
    // the SDK's retries of m1 and m2, in a later insert (another sink flush)
    await insert([
      line(order("m1", "pro"), "2026-11-24T10:00:09.000Z", BOT, false),
      line(order("m2", "team"), "2026-11-24T10:00:10.000Z", undefined, false),
    ]);
    for (const pass of ["as inserted", "after merges"]) {
      const { events, properties } = await readCatalog(sql, database, "ws1");
      assert.equal(
        events.map((r) => [r.type, r.event || r.name, r.count]),
        [
          ["track", "Order Completed", "3"],
          ["page", "Home", "1"],
        ],
        pass,
      );
      assert.match(events[0]!.first_seen, /^2026-11-24 10:00:00/);
      assert.match(events[0]!.last_seen, /^2026-11-24 10:00:10/);
      const of = (event: string, source: string, key: string) =>
        properties.find((r) => (r.event || r.name) === event && r.source === source && r.key === key);
      assert.equal(of("Order Completed", "properties", "plan")?.types, ["number", "string"], pass);
      assert.is(of("Order Completed", "properties", "plan")?.count, "3", pass);
      assert.equal(of("Order Completed", "properties", "revenue")?.types, ["number"]);
      assert.is(of("Order Completed", "context", "userAgent")?.count, "3");
      assert.is(of("Home", "properties", "path")?.count, "1");
      assert.is(of("Home", "properties", "plan"), undefined);
      assert.is(properties.length, 7); // plan, revenue, ip, userAgent of the order; path, ip, userAgent of the page
      for (const table of ["events", "catalog_shapes"]) await sql.command(`OPTIMIZE TABLE ${database}.${table} FINAL`);
    }
  });

  s("the enrichment columns are stored and reach the type views", async () => {
    const rows = await sql.rows<{ message_id: string; device_type: string; is_bot: number | string; country: string }>(
      `SELECT message_id, device_type, is_bot, country FROM ${database}.tracks ORDER BY message_id`,
    );
    assert.equal(
      rows.map((r) => [r.message_id, r.device_type, Number(r.is_bot), r.country]),
      [
        ["m1", "bot", 1, "FR"],
        ["m2", "other", 0, ""],
        ["m3", "other", 0, ""],
      ],
    );
  });

  s("rows over the caps: one over-cap row per workspace, type and day, events kept as sent, no keys", async () => {
    const capped = (id: string, event: string, receivedAt: string, workspaceId = "ws1") => {
      const row = JSON.parse(line(order(id, "x"), receivedAt, undefined, false)) as Record<string, unknown>;
      return JSON.stringify({ ...row, workspace_id: workspaceId, event, catalog_shape: OVER_CAP_SHAPE });
    };
    const lines = Array.from({ length: 40 }, (_, i) => capped(`x${i}`, `junk ${i}`, `2026-11-2${i < 30 ? 5 : 6}T23:59:0${i % 10}.000Z`));
    const page: Message = { type: "page", messageId: "xp", anonymousId: "a1", name: "R".repeat(30_000) };
    const pageRow = JSON.parse(line(page, "2026-11-25T08:00:00.000Z")) as Record<string, unknown>;
    lines.push(JSON.stringify({ ...pageRow, catalog_shape: OVER_CAP_SHAPE, catalog_keys: undefined }));
    lines.push(capped("y1", "junk 0", "2026-11-25T10:00:00.000Z", "ws2"));
    const shapesBefore = Number((await sql.rows<{ n: number }>(`SELECT count() AS n FROM ${database}.catalog_shapes`))[0]!.n);
    await sql.command(`INSERT INTO ${database}.events FORMAT JSONEachRow\n${lines.join("\n")}`);
    const shapesAfter = Number((await sql.rows<{ n: number }>(`SELECT count() AS n FROM ${database}.catalog_shapes`))[0]!.n);
    assert.ok(
      shapesAfter - shapesBefore <= 4,
      `42 messages made ${shapesAfter - shapesBefore} catalog rows (one per workspace, type and day)`,
    );
    const stored = await sql.rows<{ n: number }>(
      `SELECT uniqExact(event) AS n FROM ${database}.events WHERE message_id LIKE 'x%' AND type = 'track'`,
    );
    assert.is(Number(stored[0]!.n), 40, "the events keep their names");
    const { events, properties } = await readCatalog(sql, database);
    const over = events.filter((r) => r.over_cap === 1).map((r) => [r.workspace_id, r.type, r.event, r.name, r.count]);
    assert.equal(
      over,
      [
        ["ws1", "track", "", "2026-11-25", "30"],
        ["ws1", "page", "", "2026-11-25", "1"],
        ["ws1", "track", "", "2026-11-26", "10"],
        ["ws2", "track", "", "2026-11-25", "1"],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : Number(b[4]) - Number(a[4]))),
    );
    assert.ok(events.filter((r) => r.over_cap !== 1).every((r) => !r.event.startsWith("junk") && r.name.length < 100));
    assert.ok(properties.every((r) => !r.event.startsWith("junk") && r.workspace_id === "ws1" && r.name.length < 100));
  });

  s("setup replaces a catalog view of an earlier release (without the over-cap row)", async () => {
    const view = `${database}.${CATALOG_MV}`;
    const current = catalogFeed("legacy", database, "events").viewDdl;
    const earlier = current
      .replace(/if\(catalog_shape = \d+, '', event\) AS event/, "event")
      .replace(/if\(catalog_shape = \d+, [^\n]*, name\) AS name/, "name");
    assert.not.match(earlier, new RegExp(String(OVER_CAP_SHAPE)));
    await sql.command(`DROP TABLE ${view}`);
    await sql.command(earlier);
    await migrate(sql, { url: "", username: "", password: "", database, table: "events" });
    const [row] = await sql.rows<{ create_table_query: string }>(
      `SELECT create_table_query FROM system.tables WHERE database = '${database}' AND name = '${CATALOG_MV}'`,
    );
    assert.match(row!.create_table_query, new RegExp(String(OVER_CAP_SHAPE)));
  });

  s.run();
}

catalogSuite("catalog on ClickHouse 18.16 (live server)", openLegacyServer, "test_catalog_legacy");
catalogSuite("catalog on current ClickHouse (chdb)", openCurrentEngine, "test_catalog_current");
