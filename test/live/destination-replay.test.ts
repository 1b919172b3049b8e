/**
 * `destinations replay <id> --from --to` from ClickHouse. On both engines (the 18.16 server of
 * the local stack, current ClickHouse in chdb): the pages a replay reads hold one row per
 * messageId and type as FINAL sees it (the latest retry), in order, only the destination's
 * workspace and range, across page boundaries (a messageId stored under two types on both sides of
 * one included). End to end on the live stack: events posted to the ingest (some posted twice, as
 * an SDK retries) reach an HTTP receiver on 127.0.0.1 once each through the CLI, at most `--rate`
 * requests a second, a suppressed user's never; the position the CLI prints at the end of a replay
 * of the range's first part, passed back with `--after`, sends only what follows it.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readReplayPage } from "../../deploy/commands/replay-range";
import type { Sql } from "../../schemas/clickhouse/client";
import { eventsTableDdl } from "../../schemas/clickhouse/events";
import { parsePosition, replayCountQuery, type ReplayPosition } from "../../schemas/clickhouse/replay";
import { dialectFor, type Dialect } from "../../schemas/clickhouse/sql";
import type { Message } from "../../schemas/messages";
import { openCurrentEngine, openLegacyServer, type OpenEngine } from "../support/engines";
import { LiveStack, sqlList, waitFor } from "../support/harness";
import { storedLine } from "../support/samples";

const line = storedLine;

function pagesSuite(name: string, open: () => Promise<OpenEngine>, database: string) {
  const s = suite(name);
  let sql: Sql;
  let close: () => Promise<void>;
  let dialect: Dialect;
  const base = Date.UTC(2026, 10, 20, 12);
  const at = (seconds: number) => new Date(base + seconds * 1000);
  s.before(async () => {
    ({ sql, close } = await open());
    dialect = dialectFor((await sql.rows<{ v: string }>("SELECT version() AS v"))[0]!.v);
    await sql.command(`DROP DATABASE IF EXISTS \`${database}\``);
    await sql.command(`CREATE DATABASE \`${database}\``);
    await sql.command(eventsTableDdl(dialect, database, "events"));
    const track = (id: string, total: number): Message =>
      ({ type: "track", event: "Order Completed", userId: "u1", messageId: id, properties: { total } }) as Message;
    const lines = [
      // m00..m11 in ws-a, two a second; m03 sent again 30 s later with another total (a retry: the latest wins)
      ...Array.from({ length: 12 }, (_, i) =>
        line("ws-a", track(`m${String(i).padStart(2, "0")}`, i), at(Math.floor(i / 2)), at(Math.floor(i / 2))),
      ),
      line("ws-a", track("m03", 1003), at(1), at(31)),
      // m05 again as an identify in the same second: two rows under FINAL (type is in the key), the
      // identify first ('identify' < 'track'), the fifth row: the last of the first page of 5
      line("ws-a", { type: "identify", userId: "u1", messageId: "m05", traits: {} } as Message, at(2), at(2)),
      line("ws-b", track("b00", 0), at(2), at(2)),
      line("ws-a", track("early", 0), at(-100), at(-100)),
      line("ws-a", track("late", 0), at(100), at(100)),
    ];
    // In two inserts, so the retry sits in another part until FINAL merges them.
    const insert = (part: string[]) =>
      sql.command(
        `INSERT INTO \`${database}\`.events ${dialect === "current" ? "SETTINGS date_time_input_format = 'best_effort' " : ""}FORMAT JSONEachRow\n${part.join("\n")}`,
      );
    await insert(lines.slice(0, 12));
    await insert(lines.slice(12));
  });
  s.after(async () => {
    await sql?.command(`DROP DATABASE IF EXISTS \`${database}\``);
    await close?.();
  });

  s(
    "pages hold one row per messageId and type (the latest retry), in order, only the workspace's range, across page boundaries",
    async () => {
      const range = { workspaceId: "ws-a", fromMs: at(-10).getTime(), toMs: at(60).getTime() };
      const where = { database, table: "events" };
      const seen: string[] = [];
      const types: string[] = [];
      let after: ReplayPosition | undefined;
      let m03Total: unknown;
      for (let pages = 0; pages < 10; pages++) {
        const page = await readReplayPage(sql, dialect, where, range, after, 5);
        if (page.length === 0) break;
        for (const { row } of page) {
          seen.push(row.message_id);
          if (row.message_id === "m05") types.push(row.type);
          if (row.message_id === "m03") m03Total = (JSON.parse(row.properties) as { total: number }).total;
          assert.match(row.received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        }
        after = page.at(-1)!.position;
      }
      const expected = ["m00", "m01", "m02", "m04", "m05", "m05", "m06", "m07", "m08", "m09", "m10", "m11", "m03"];
      assert.equal(seen, expected, "received_at, messageId, type order; m03 at its retry's receipt; m05 twice");
      assert.equal(types, ["identify", "track"], "m05's second row, past the page boundary, is read too");
      assert.is(m03Total, 1003, "the latest retry's values");
      const total = Number((await sql.rows<{ n: string | number }>(replayCountQuery(dialect, database, "events", range)))[0]!.n);
      assert.is(total, 13);
    },
  );

  return s;
}

pagesSuite("replay pages on ClickHouse 18.16 (live)", openLegacyServer, "test_replay_legacy").run();
pagesSuite("replay pages on current ClickHouse (chdb)", openCurrentEngine, "test_replay_current").run();

const SECRET_KEY = "test-destinations-secret-key-0123456789";
const live = suite("destinations replay end to end (live)");
let stack: LiveStack;
let server: Server;
/** Each request the receiver got: when, and its messageId. */
const got: { at: number; messageId: string }[] = [];

live.before(async () => {
  stack = new LiveStack({ DESTINATIONS_SECRET_KEY: SECRET_KEY });
  await stack.start();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      got.push({ at: Date.now(), messageId: (JSON.parse(Buffer.concat(chunks).toString()) as { messageId: string }).messageId });
      res.writeHead(200).end("{}");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
});

live.after(async () => {
  server?.closeAllConnections();
  server?.close();
  await stack?.stop();
});

async function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  const service = stack.spawn("deploy/cli.js", { DESTINATIONS_SECRET_KEY: SECRET_KEY }, args);
  const { code } = await service.exited;
  return { code, output: service.output() };
}

/** Posts `batch` to the ingest and waits until ClickHouse holds `n` rows of `ids` under FINAL. */
async function stored(batch: Record<string, unknown>[], ids: string[], n = ids.length): Promise<void> {
  assert.is((await stack.post("/v1/batch", { batch })).status, 200);
  await waitFor(
    `${n} rows`,
    async () => {
      const rows = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} FINAL WHERE message_id IN (${sqlList(ids)})`);
      return Number(rows[0]!.n) === n ? true : undefined;
    },
    60_000,
  );
}

live("every stored messageId once, at the rate asked, a suppressed user's never; --after sends only what follows", async () => {
  const from = new Date(Date.now() - 2_000).toISOString();
  const ids = Array.from({ length: 30 }, () => randomUUID());
  const quiet = Array.from({ length: 5 }, () => randomUUID());
  const track = (userId: string) => (messageId: string) => ({ type: "track", event: "Signed Up", userId, messageId });
  const batch = [...ids.map(track("u1")), ...quiet.map(track("u-quiet"))];
  await stored(batch, [...ids, ...quiet]);
  assert.is((await stack.post("/v1/batch", { batch: batch.slice(0, 10) })).status, 200, "ten sent again, as an SDK retries");
  // The later part, received two seconds on (18.16 keeps whole seconds): what a resume must send.
  await new Promise((r) => setTimeout(r, 1_100));
  const mid = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 2_000));
  const later = Array.from({ length: 10 }, () => randomUUID());
  await stored(later.map(track("u1")), later);
  const suppressed = await cli(["users", "suppress", "ws-test", "u-quiet"]);
  assert.is(suppressed.code, 0, suppressed.output);
  const added = await cli(["destinations", "add", "ws-test", "webhook", `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`]);
  const id = added.output.split("\n").find((l) => /^d-[0-9a-f]{8}$/.test(l))!;
  assert.ok(id, added.output);
  const to = new Date(Date.now() + 2_000).toISOString();

  const replay = await cli(["destinations", "replay", id, "--from", from, "--to", to, "--rate", "10"]);
  assert.is(replay.code, 0, replay.output);
  assert.match(replay.output, /\[#{20}\] 100% 45\/45 read, 40 delivered, 0 failed, 5 skipped/);
  const counts = new Map<string, number>();
  for (const r of got) counts.set(r.messageId, (counts.get(r.messageId) ?? 0) + 1);
  assert.equal([...counts.keys()].sort(), [...ids, ...later].sort(), "each stored messageId of the range, none of the suppressed user's");
  assert.ok(
    [...counts.values()].every((n) => n === 1),
    "once each, though ten were stored twice",
  );
  const busiest = Math.max(...got.map((r) => got.filter((o) => o.at >= r.at && o.at < r.at + 1_000).length));
  console.log(`  replay of 45 stored (40 sent, 5 suppressed) at --rate 10: at most ${busiest} requests in any second`);
  assert.ok(busiest <= 11, `at most 10 requests a second (+1 at a window's edge), saw ${busiest}`);

  // A replay of the first part prints, at its end, the position it reached; --after it over the whole range sends the rest only.
  got.length = 0;
  const first = await cli(["destinations", "replay", id, "--from", from, "--to", mid, "--rate", "100"]);
  assert.is(first.code, 0, first.output);
  assert.equal(got.map((r) => r.messageId).sort(), [...ids].sort(), "the first part: the first batch");
  const position = /\tposition (\S+)\n/.exec(first.output)?.[1];
  assert.ok(position !== undefined && parsePosition(position) !== undefined, `a position on the last line: ${first.output}`);
  got.length = 0;
  const resumed = await cli(["destinations", "replay", id, "--from", from, "--to", to, "--rate", "100", "--after", position!]);
  assert.is(resumed.code, 0, resumed.output);
  assert.equal(got.map((r) => r.messageId).sort(), [...later].sort(), "only what follows the printed position");
});

live.run();
