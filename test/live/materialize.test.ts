/**
 * `properties materialize` on both engines, ClickHouse 18.16 (the live local server) and current
 * ClickHouse (chdb): rows stored before the column existed get it written into their parts (not
 * only computed at read), rows stored after get it at insert, a filter on it finds the right
 * rows, the type follows what the catalog saw, and `dematerialize` drops it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { serverVersion, type Sql } from "../../schemas/clickhouse/client";
import { dialectFor } from "../../schemas/clickhouse/sql";
import type { ClickHouseConfig } from "../../schemas/config";
import type { Message } from "../../schemas/messages";
import { messageRow } from "../../schemas/row";
import { migrate } from "../../deploy/setup/migrate";
import { dematerializeKey, listMaterialized, materializeKey } from "../../deploy/commands/properties";
import { openCurrentEngine, openLegacyServer, type OpenEngine } from "../support/engines";

function line(id: string, time: string, properties: Record<string, unknown>): string {
  const message: Message = { type: "track", messageId: id, userId: "u1", event: "Order Completed", properties };
  const stamp = { workspaceId: "ws1", receivedAt: time, sentAt: null, originalTimestamp: time, timestamp: time, context: undefined };
  return JSON.stringify(messageRow(message, stamp));
}

function materializeSuite(name: string, open: () => Promise<OpenEngine>, database: string) {
  const s = suite(name);
  const config: ClickHouseConfig = { url: "", username: "", password: "", database, table: "events" };
  let sql: Sql;
  let close: () => Promise<void>;
  const insert = (lines: string[]) => sql.command(`INSERT INTO ${database}.events FORMAT JSONEachRow\n${lines.join("\n")}`);
  s.before(async () => {
    ({ sql, close } = await open());
    await sql.command(`DROP DATABASE IF EXISTS ${database}`);
    await migrate(sql, config);
  });
  s.after(async () => {
    await sql.command(`DROP DATABASE IF EXISTS ${database}`);
    await close();
  });

  s("an old row gets the column in its part; new rows at insert; the filter finds them; the catalog picks the type", async () => {
    // two months, so two partitions hold rows stored before the column
    await insert([
      line("old-1", "2026-10-05T10:00:00.000Z", { plan: "pro", revenue: 30, nested: { plan: "x" } }),
      line("old-2", "2026-11-05T10:00:00.000Z", { plan: "free", revenue: 0 }),
    ]);
    const plan = await materializeKey(sql, config, "properties", "plan");
    assert.ok(plan.ok && plan.column === "prop_plan" && plan.type === "String" && !plan.existed, JSON.stringify(plan));
    const revenue = await materializeKey(sql, config, "properties", "revenue");
    assert.ok(revenue.ok && revenue.type === "Float64", `the catalog saw numbers only: ${JSON.stringify(revenue)}`);
    const lacking = await sql.rows<{ name: string }>(
      `SELECT name FROM system.parts WHERE database = '${database}' AND table = 'events' AND active
       AND name NOT IN (SELECT name FROM system.parts_columns WHERE database = '${database}' AND table = 'events' AND active AND column = 'prop_plan')`,
    );
    assert.equal(lacking, [], "every active part holds prop_plan");
    await insert([line("new-1", "2026-11-20T10:00:00.000Z", { plan: "pro", revenue: 12.5 })]);
    const pro = await sql.rows<{ message_id: string; prop_plan: string; prop_revenue: number }>(
      `SELECT message_id, prop_plan, prop_revenue FROM ${database}.events FINAL WHERE prop_plan = 'pro' ORDER BY message_id`,
    );
    assert.equal(
      pro.map((r) => [r.message_id, r.prop_plan, Number(r.prop_revenue)]),
      [
        ["new-1", "pro", 12.5],
        ["old-1", "pro", 30],
      ],
    );
    const again = await materializeKey(sql, config, "properties", "plan");
    assert.ok(again.ok && again.existed, "a second materialize leaves the column as it is");
    assert.equal(
      (await listMaterialized(sql, config)).map((c) => [c.name, c.type]),
      [
        ["prop_plan", "String"],
        ["prop_revenue", "Float64"],
      ],
    );
  });

  s("a key that cannot be a column is refused by name; dematerialize drops the column", async () => {
    const refused = await materializeKey(sql, config, "properties", "utm source");
    assert.ok(!refused.ok && refused.error.includes('"utm source"'), JSON.stringify(refused));
    assert.equal(await dematerializeKey(sql, config, "properties", "plan"), { ok: true, dropped: true });
    assert.equal(await dematerializeKey(sql, config, "properties", "plan"), { ok: true, dropped: false });
    assert.equal(
      (await listMaterialized(sql, config)).map((c) => c.name),
      ["prop_revenue"],
    );
  });

  s("without --type, the type comes from the catalog within bounded memory, whatever junk shapes it holds", async () => {
    const current = dialectFor(await serverVersion(sql)) === "current";
    // A writeKey holder's flood: tracks of random names, each with 100 random keys, one in ten
    // also with utm_source (a string) and amount (a number); fewer on 18.16, which shares the
    // machine's server. Stored as the catalog's view would store them.
    const junk = current ? 100_000 : 20_000;
    const time = current ? "toDateTime64(now(), 3, 'UTC')" : "now()";
    const tagged = "if(number % 10 = 0, ['psutm_source', 'pnamount'], emptyArrayString())";
    await sql.command(
      `INSERT INTO ${database}.catalog_shapes SELECT 'junk', 'track', concat('ev-', toString(number)), '', cityHash64('junk', number),
  argMaxState(arrayConcat(${tagged}, arrayMap(i -> concat('pn', hex(cityHash64(number, i))), range(100))), toUInt64(102)),
  minState(${time}), maxState(${time}), uniqState(toString(number))
FROM numbers(${junk}) GROUP BY number`,
    );
    await insert([line("junk-real", "2026-11-21T10:00:00.000Z", { utm_source: "google", amount: "12" })]);
    // chdb: under a 100 MB query limit (merging every shape's list needed about 190 MB there).
    if (current) await sql.command("SET max_memory_usage = 100000000");
    try {
      const started = Date.now();
      const utm = await materializeKey(sql, config, "properties", "utm_source");
      console.log(
        `  ${current ? "chdb" : "18.16"}: ${junk} junk shapes, utm_source typed in ${Date.now() - started} ms: ${JSON.stringify(utm)}`,
      );
      assert.ok(utm.ok && utm.type === "String", JSON.stringify(utm));
      const amount = await materializeKey(sql, config, "properties", "amount");
      assert.ok(!amount.ok, JSON.stringify(amount));
      const counts = `number (${junk / 10} messages, 1 workspace), string (1 message, 1 workspace)`;
      assert.ok(amount.error.includes(`2 JSON types: ${counts}`), amount.error);
    } finally {
      if (current) await sql.command("SET max_memory_usage = 0");
    }
  });

  s.run();
}

materializeSuite("properties materialize on ClickHouse 18.16 (live server)", openLegacyServer, "test_materialize_legacy");
materializeSuite("properties materialize on current ClickHouse (chdb)", openCurrentEngine, "test_materialize_current");
