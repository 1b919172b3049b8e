/**
 * What a writeKey holder can grow, and rank, in the aggregate tables (issue 46, rows 4 and 10), on
 * both engines: ClickHouse 18.16 (the live local server) and current ClickHouse (chdb).
 * - A flood of random userIds, anonymousIds and event names older than RETENTION_DAYS leaves
 *   `users`, `identities` and `catalog_shapes` once an install of an earlier release is migrated
 *   and a retention step ran (current: setup's TTL; 18.16: the sink's deletion), while what was
 *   seen within the window stays. The counts before and after are printed.
 * - An identify dated at the end of tomorrow does not win `users` traits over the user's real,
 *   later identify, and an install whose `users_mv` ranks by `timestamp` gets the new definition
 *   from migrate, leaving no stand-in view behind.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Sql } from "../../schemas/clickhouse/client";
import { dialectFor, type Dialect } from "../../schemas/clickhouse/sql";
import { USERS_RANK_STEP } from "../../schemas/clickhouse/analyst";
import type { ClickHouseConfig } from "../../schemas/config";
import type { Message } from "../../schemas/messages";
import { storedLine } from "../support/samples";
import { migrate } from "../../deploy/setup/migrate";
import { applyRetention } from "../../sink/upkeep/retention";
import { openCurrentEngine, openLegacyServer, type OpenEngine } from "../support/engines";

const DAY_MS = 86_400_000;
/** Distinct random userIds (each with its own anonymousId) and event names in the flood. */
const FLOOD = 3000;
/** Random property keys on each flooded track. */
const FLOOD_KEYS = 20;

/** One events row line for `m` in ws1, client-dated and received at `time` (or received at `receivedAt`). */
const line = (m: Message, time: Date, receivedAt: Date = time): string => storedLine("ws1", m, time, receivedAt);

const random = () => Math.random().toString(36).slice(2, 12);

/** The flood: FLOOD identifies of random users with random anonymousIds, FLOOD tracks of random names and keys. */
function flood(at: Date): string[] {
  const lines: string[] = [];
  for (let i = 0; i < FLOOD; i++) {
    const user = `junk-${random()}`;
    lines.push(line({ type: "identify", messageId: `fi-${i}`, userId: user, anonymousId: `anon-${random()}`, traits: { x: 1 } }, at));
    const properties = Object.fromEntries(Array.from({ length: FLOOD_KEYS }, () => [`k${random()}`, 1]));
    lines.push(line({ type: "track", messageId: `ft-${i}`, userId: user, event: `ev-${random()}`, properties }, at));
  }
  return lines;
}

function retentionSuite(name: string, open: () => Promise<OpenEngine>, database: string) {
  const s = suite(name);
  const config: ClickHouseConfig = { url: "", username: "", password: "", database, table: "events" };
  let sql: Sql;
  let close: () => Promise<void>;
  let dialect: Dialect;
  // ISO 8601 times: the 18.16 client reads them with best_effort already (engines.ts), which its
  // INSERT does not take as a clause.
  const insert = (lines: string[]) =>
    sql.command(
      `INSERT INTO \`${database}\`.events ${dialect === "current" ? "SETTINGS date_time_input_format = 'best_effort' " : ""}FORMAT JSONEachRow\n${lines.join("\n")}`,
    );
  const count = async (query: string) => Number((await sql.rows<{ n: number | string }>(query))[0]?.n ?? 0);
  const rows = (table: string) => count(`SELECT count() AS n FROM \`${database}\`.${table}`);
  s.before(async () => {
    ({ sql, close } = await open());
    dialect = dialectFor((await sql.rows<{ v: string }>("SELECT version() AS v"))[0]!.v);
    await sql.command(`DROP DATABASE IF EXISTS \`${database}\``);
  });
  s.after(async () => {
    await sql.command(`DROP DATABASE IF EXISTS \`${database}\``);
    await close();
  });

  s("a flood older than RETENTION_DAYS leaves users, identities and catalog_shapes; what was seen in the window stays", async () => {
    // An install of an earlier release: no retention then.
    await migrate(sql, config);
    const now = Date.now();
    const old = new Date(now - 40 * DAY_MS);
    await insert(flood(old));
    // Kept: a user identified 40 days ago who tracked yesterday (one row once merged), a link and
    // a shape seen yesterday.
    await insert([line({ type: "identify", messageId: "k-1", userId: "kept", anonymousId: "anon-kept", traits: { plan: "pro" } }, old)]);
    await insert([
      line(
        { type: "identify", messageId: "k-2", userId: "kept", anonymousId: "anon-kept", traits: { plan: "pro" } },
        new Date(now - DAY_MS),
      ),
      line({ type: "track", messageId: "k-3", userId: "kept", event: "Signed up", properties: { plan: "pro" } }, new Date(now - DAY_MS)),
    ]);
    const tables = ["users", "identities", "catalog_shapes"];
    const before = await Promise.all(tables.map(rows));
    const retained = { ...config, retentionDays: 30 };
    await migrate(sql, retained);
    const today = new Date(now).toISOString().slice(0, 10);
    const done = await applyRetention(sql, retained, today);
    // A mutation (18.16) or the TTL's rewrite (current) may finish after the statement answered.
    let after = await Promise.all(tables.map(rows));
    for (let i = 0; i < 120 && after.some((n, t) => n >= FLOOD && before[t]! >= FLOOD); i++) {
      await new Promise((r) => setTimeout(r, 500));
      after = await Promise.all(tables.map(rows));
    }
    console.log(
      `  ${dialect}: rows before -> after a retention step of 30 days: ${tables.map((t, i) => `${t} ${before[i]} -> ${after[i]}`).join(", ")}`,
    );
    for (const [i, table] of tables.entries()) {
      assert.ok(before[i]! >= FLOOD, `${table}: the flood made ${before[i]} rows`);
      assert.ok(after[i]! < 10, `${table}: ${after[i]} rows left after the retention step`);
      // 18.16: the step queued each table's deletion; current ClickHouse: the TTL did it, not the sink.
      const queued = done.rowsDeleted[table] ?? 0;
      assert.ok(dialect === "legacy" ? queued >= FLOOD : queued === 0, `${table}: ${JSON.stringify(done.rowsDeleted)}`);
    }
    const [kept] = await sql.rows<{ traits: string; n: number | string }>(
      `SELECT argMaxMerge(traits) AS traits, uniqMerge(events) AS n FROM \`${database}\`.users WHERE user_id = 'kept' GROUP BY user_id`,
    );
    assert.ok(kept !== undefined && JSON.parse(kept.traits).plan === "pro", `the user seen yesterday stays: ${JSON.stringify(kept)}`);
    assert.is(await count(`SELECT count() AS n FROM \`${database}\`.identities WHERE user_id = 'kept'`), 1, "its link stays");
    const events = await sql.rows<{ event: string }>(
      `SELECT event FROM \`${database}\`.event_catalog WHERE workspace_id = 'ws1' AND type = 'track'`,
    );
    assert.equal(
      events.map((e) => e.event).filter((e) => !e.startsWith("ev-")),
      ["Signed up"],
      "the event seen yesterday stays in the catalog",
    );
    if (dialect === "current") {
      const [ttl] = await sql.rows<{ q: string }>(
        `SELECT create_table_query AS q FROM system.tables WHERE database = '${database}' AND name = 'users'`,
      );
      assert.match(ttl!.q, /TTL toDate\(finalizeAggregation\(last_seen\)\) \+ toIntervalDay\(30\)/);
    }
  });

  s("an identify dated the end of tomorrow does not win users' traits over the user's real, later identify", async () => {
    await migrate(sql, config);
    const now = new Date();
    const endOfTomorrow = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 2) - 1000);
    const forged: Message = { type: "identify", messageId: "forged", userId: "victim", traits: { email: "attacker@example.com" } };
    const real: Message = { type: "identify", messageId: "real", userId: "victim", traits: { email: "victim@example.com" } };
    // Received a minute before the real one, dated the end of tomorrow.
    await insert([line(forged, endOfTomorrow, new Date(now.getTime() - 60_000))]);
    await insert([line(real, new Date(now.getTime() - 1000))]);
    const [user] = await sql.rows<{ traits: string }>(
      `SELECT argMaxMerge(traits) AS traits FROM \`${database}\`.users WHERE workspace_id = 'ws1' AND user_id = 'victim' GROUP BY user_id`,
    );
    console.log(`  ${dialect}: traits of the user after an identify dated ${endOfTomorrow.toISOString()} and a real one: ${user?.traits}`);
    assert.equal(JSON.parse(user!.traits), { email: "victim@example.com" }, "the real, later identify wins");
  });

  s("migrate gives an install's users_mv that ranks by timestamp the new ranking, leaving no stand-in view", async () => {
    const q = `\`${database}\``;
    await migrate(sql, config);
    const usersViews = () =>
      sql.rows<{ name: string; q: string }>(
        `SELECT name, create_table_query AS q FROM system.tables WHERE database = '${database}' AND name LIKE 'users_mv%' ORDER BY name`,
      );
    const [view] = await usersViews();
    assert.ok(view!.q.includes("least(timestamp, received_at)"), view!.q);
    // The view of the releases before issue 46, and no record of the new one.
    await sql.command(`DROP TABLE ${q}.users_mv`);
    await sql.command(view!.q.split("least(timestamp, received_at)").join("timestamp"));
    await sql.command(`DROP TABLE ${q}.schema_migrations`);
    assert.not.ok((await usersViews())[0]!.q.includes("least("), "an older users_mv");
    await migrate(sql, config);
    const views = await usersViews();
    assert.equal(
      views.map((o) => o.name),
      ["users_mv"],
      "no stand-in left",
    );
    assert.ok(views[0]!.q.includes("least(timestamp, received_at)"), `migrate gave users_mv the new ranking: ${views[0]!.q}`);
    assert.is(await count(`SELECT count() AS n FROM ${q}.schema_migrations WHERE step = '${USERS_RANK_STEP}'`), 1, "the step is recorded");
  });

  s.run();
}

retentionSuite("aggregate retention and users ranking on ClickHouse 18.16 (live server)", openLegacyServer, "test_retention_legacy");
retentionSuite("aggregate retention and users ranking on current ClickHouse (chdb)", openCurrentEngine, "test_retention_current");
