/**
 * The ClickHouse answers the sink and the migration depend on, on both engines: ClickHouse 18.16
 * (the live local server) and current ClickHouse (chdb-core in-process, test/support/chdb.ts). Rows are
 * events-topic values as the ingest writes them (messageRow). Shown on each engine: a flush
 * spread over 1,500 months (the sink's worst case: records of any ingest release, or replayed)
 * lands whole in inserts the server accepts (current ClickHouse refuses one INSERT over
 * `max_partitions_per_insert_block`); without the split the refusal is narrowed by bisection, not
 * retried for ever; a poison row becomes a dead letter and the rest land; the probe tells a
 * table that takes inserts from one that does not; the ends of the storable time range are
 * stored as sent; the migration's copy of a table holding 150 months succeeds; a deletion's
 * mutations run and leave every row of the users a planted link names; a deletion takes the
 * user's refused items, stored by this release or an earlier one, and not another user's item that
 * names her in its data; the sink merges a closed month that no longer gets parts into one, once
 * (late one-row parts leave it), and setup turns off
 * the forced merge of earlier releases on current ClickHouse; setup makes `event` LowCardinality
 * there in a table of an earlier release.
 */
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { unpartitionedEventsTableDdl } from "../../schemas/clickhouse/events";
import { quoteString, type Dialect } from "../../schemas/clickhouse/sql";
import { clickhouseConfig, type ClickHouseConfig } from "../../schemas/config";
import type { Message } from "../../schemas/messages";
import { deletionTargets, linkedIdsQuery, type DeletionTarget } from "../../schemas/privacy/deletion";
import { auditInsert, deleteRows, RowsRemainError } from "../../deploy/commands/privacy";
import { EVENT_ROW_COLUMNS, messageRow } from "../../schemas/row";
import { buildRejected } from "../../ingest/records/rejected";
import { decodeRejected } from "../../sink/loop/decode";
import type { BatchItem, DeadLetter, PartitionBatch } from "../../sink/loop/batch";
import { Flusher } from "../../sink/loop/flush";
import { clientSql, serverPartitionsPerInsert, type Sql } from "../../schemas/clickhouse/client";
import { migrate } from "../../deploy/setup/migrate";
import { deleteExpiredRejected, mergeClosedMonth } from "../../sink/upkeep/retention";
import { eventLineMonth, partitionChunks } from "../../sink/loop/partitions";
import {
  classifyInsertError,
  clickhouseInsertLines,
  clickhouseProbe,
  joinLines,
  serverInsertSettings,
  PROBE_BODY,
  probeQuery,
  type InsertRows,
  type ProbeInsert,
} from "../../sink/loop/writer";
import { Chdb } from "../support/chdb";
import { REPLICA_COLUMNS } from "../../sink/monitors/redundancy";

/** One engine: its Sql, and the sink's insert and probe for a (quoted) table on it. */
interface Engine {
  dialect: Dialect;
  sql: Sql;
  insertLines: (table: string) => InsertRows<Buffer>;
  probe: (table: string) => ProbeInsert;
}

const scratch = (database: string): ClickHouseConfig => ({ url: "", username: "", password: "", database, table: "events" });

/** The month `i` months after 1970-01 as a client timestamp (mid-month, noon UTC). */
const monthTime = (i: number) =>
  `${String(1970 + Math.floor(i / 12)).padStart(4, "0")}-${String((i % 12) + 1).padStart(2, "0")}-15T12:00:00.000Z`;

/**
 * Events-topic values (schemas/row.ts messageRow, the ingest's format) for tracks whose client
 * time is `timestamps` (messageId m<i>), received at `receivedAt`. Rows are made here, not by the
 * ingest: its window would place far times at their arrival, and the sink must take any row an
 * ingest of any release (or a replay) wrote.
 */
function lines(timestamps: string[], receivedAt = "2026-11-24T10:00:00.000Z", prefix = "m"): Buffer[] {
  return timestamps.map((time, i) => {
    const message: Message = { type: "track", messageId: `${prefix}${i}`, userId: `u${i % 7}`, event: "E", timestamp: time };
    const row = messageRow(message, {
      workspaceId: "ws1",
      receivedAt,
      sentAt: null,
      originalTimestamp: time,
      timestamp: time,
      context: undefined,
    });
    return Buffer.from(JSON.stringify(row));
  });
}

/** The lines as one partition's batch, offsets from 0. */
function batchOf(rows: Buffer[]): PartitionBatch<Buffer> {
  const items: BatchItem<Buffer>[] = rows.map((row, i) => ({ row, partition: 0, offset: String(i), key: null, value: row, timestamp: 0 }));
  return { partition: 0, items, deadLetters: [], lastOffset: String(rows.length - 1), openedAt: 0 };
}

/** A flusher over the engine's table, chunked by `maxPartitions` when given; retries nothing (an infra error fails the test). */
function flusherFor(engine: Engine, table: string, maxPartitions?: number) {
  const letters: DeadLetter[] = [];
  const inserts: number[] = [];
  const insert = engine.insertLines(table);
  const flusher = new Flusher<Buffer>({
    topic: "events",
    insert: async (rows) => {
      await insert(rows);
      inserts.push(rows.length);
    },
    ...(maxPartitions === undefined
      ? {}
      : { chunk: (items: BatchItem<Buffer>[]) => partitionChunks(items, eventLineMonth, maxPartitions) }),
    probe: engine.probe(table),
    sendDeadLetters: async (l) => void letters.push(...l),
    commit: async () => {},
    retry: (_what, fn) => fn(),
  });
  return { flusher, letters, inserts };
}

const count = async (sql: Sql, query: string) => Number((await sql.rows<{ n: string | number }>(query))[0]?.n);

/** An events-topic value (messageRow) of message `m` in workspace ws1, received and timed at `at`. */
const eventLine = (m: Record<string, unknown>, at: string) =>
  Buffer.from(
    JSON.stringify(
      messageRow(m as unknown as Message, {
        workspaceId: "ws1",
        receivedAt: at,
        sentAt: null,
        originalTimestamp: at,
        timestamp: at,
        context: undefined,
      }),
    ),
  );

/** Runs a deletion's targets as `users delete` does (deploy/commands/privacy.ts deleteRows), at most 60 s. */
const applyDeletion = (sql: Sql, d: string, targets: readonly DeletionTarget[]) => deleteRows(sql, d, targets, 60_000);

function engineSuite(name: string, open: () => Promise<Engine>, close: () => Promise<void>, prefix: string) {
  const s = suite(name);
  let engine: Engine;
  const db = (tag: string) => `${prefix}_${tag}`;
  const events = (tag: string) => `\`${db(tag)}\`.events`;
  s.before(async () => {
    engine = await open();
  });
  s.after(async () => {
    for (const tag of [
      "spread",
      "bisect",
      "poison",
      "ends",
      "copy",
      "privacy",
      "audit",
      "closed",
      "retype",
      "expiry",
      "bigdelete",
      "rewrites",
      "refused",
    ])
      await engine.sql.command(`DROP DATABASE IF EXISTS \`${db(tag)}\``);
    await close();
  });

  s("a flush over 1,500 months, each message twice, lands whole in inserts of at most the server's partitions", async () => {
    await migrate(engine.sql, scratch(db("spread")));
    const limit = await serverPartitionsPerInsert(engine.sql);
    assert.is(limit, 100);
    const months = [...Array(1500).keys()].map(monthTime);
    const first = lines(months, "2026-11-24T10:00:00.000Z");
    const retry = lines(months, "2026-11-24T10:00:05.000Z"); // the SDK's retry: same messageId and timestamp
    const { flusher, letters, inserts } = flusherFor(engine, events("spread"), limit);
    const result = await flusher.write([batchOf([...first, ...retry])]);
    assert.equal(letters, []);
    assert.is(result.inserted, 3000);
    assert.is(inserts.length, 1500 / limit, `1,500 months in inserts of ${limit}`);
    // Not FINAL: on 18.16 a FINAL read of 1,000 parts runs out of query memory (code 241; 600 passed, measured);
    // the ingest's client-time window keeps a live table far below that (test/unit/ingest/records/build.test.ts).
    assert.is(await count(engine.sql, `SELECT uniqExact(message_id) AS n FROM ${events("spread")}`), 1500);
    const partitions = `SELECT uniqExact(partition) AS n FROM system.parts WHERE database = '${db("spread")}' AND table = 'events' AND active`;
    assert.is(await count(engine.sql, partitions), 1500, "one partition a month, no more");
  });

  s("one insert over the partition limit: current ClickHouse refuses it (252), the sink narrows it and every row lands", async () => {
    await migrate(engine.sql, scratch(db("bisect")));
    const rows = lines([...Array(150).keys()].map(monthTime));
    const refusal = await engine
      .insertLines(events("bisect"))(rows)
      .then(() => undefined)
      .catch((error: unknown) => error);
    if (engine.dialect === "current") {
      assert.match(String((refusal as Error).message), /Too many partitions for single INSERT block/);
      assert.is(classifyInsertError(refusal), "data", "narrowed, not retried as infrastructure");
    } else assert.is(refusal, undefined, "18.16 has no such limit");
    const { flusher, letters } = flusherFor(engine, events("bisect")); // no split: bisection alone
    await flusher.write([batchOf(rows)]);
    assert.equal(letters, []);
    assert.is(await count(engine.sql, `SELECT count() AS n FROM ${events("bisect")} FINAL`), 150);
  });

  s("a poison row is a dead letter, the rest land; the probe tells a table that takes inserts from a missing one", async () => {
    await migrate(engine.sql, scratch(db("poison")));
    const rows = lines(["2026-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z", "2026-04-01T00:00:00.000Z"]);
    rows[2] = Buffer.from(rows[2]!.toString().replace('"timestamp":"2026-03-01T00:00:00.000Z"', '"timestamp":"not a time"'));
    const { flusher, letters } = flusherFor(engine, events("poison"), 100);
    const result = await flusher.write([batchOf(rows)]);
    assert.equal(
      letters.map((l) => l.offset),
      ["2"],
    );
    assert.is(result.inserted, 3);
    assert.is(await count(engine.sql, `SELECT count() AS n FROM ${events("poison")} FINAL`), 3);
    await engine.probe(events("poison"))();
    const missing = await engine
      .probe(`\`${db("poison")}\`.nothing_here`)()
      .then(() => "accepted")
      .catch(() => "refused");
    assert.is(missing, "refused");
  });

  s("the ends of the storable range are stored as sent, with their own day", async () => {
    await migrate(engine.sql, scratch(db("ends")));
    const { flusher, letters } = flusherFor(engine, events("ends"), 100);
    await flusher.write([batchOf(lines(["1970-01-01T00:00:00.000Z", "2105-12-31T23:59:59.000Z"]))]);
    assert.equal(letters, []);
    const rows = await engine.sql.rows<{ s: string | number; d: string }>(
      `SELECT toUInt32(toUnixTimestamp(timestamp)) AS s, toString(toYYYYMMDD(event_date)) AS d FROM ${events("ends")} FINAL ORDER BY s`,
    );
    assert.equal(
      rows.map((r) => [Number(r.s), r.d]),
      [
        [0, "19700101"],
        [4291747199, "21051231"],
      ],
    );
  });

  s("the migration copies a table holding rows of 150 months into the partitioned layout", async () => {
    const d = db("copy");
    await engine.sql.command(`CREATE DATABASE \`${d}\``);
    await engine.sql.command(unpartitionedEventsTableDdl(engine.dialect, d, "events"));
    await engine.insertLines(`\`${d}\`.events`)(lines([...Array(150).keys()].map(monthTime)));
    const result = await migrate(engine.sql, scratch(d));
    assert.is(result.moved?.rows, 150);
    assert.is(await count(engine.sql, `SELECT count() AS n FROM \`${d}\`.events FINAL`), 150);
    assert.is(await count(engine.sql, `SELECT uniqExact(toYYYYMM(event_date)) AS n FROM \`${d}\`.events`), 150);
  });

  s("a deletion runs on this engine and touches only the person asked for (a planted link reaches no identified row)", async () => {
    const d = db("privacy");
    await migrate(engine.sql, scratch(d));
    const at = "2026-11-24T10:00:00.000Z";
    const row = (m: Record<string, unknown>) => eventLine(m, at);
    const rows = [
      row({ type: "identify", messageId: "a1", userId: "alice", anonymousId: "alice-dev", traits: { plan: "pro" } }),
      row({ type: "track", messageId: "a2", userId: "alice", event: "E" }),
      row({ type: "track", messageId: "a3", userId: "alice", event: "E" }),
      row({ type: "page", messageId: "a4", anonymousId: "alice-dev" }),
      row({ type: "identify", messageId: "m1", userId: "mallory", anonymousId: "alice" }), // the planted link
      row({ type: "track", messageId: "m2", userId: "mallory", event: "E" }),
      row({ type: "page", messageId: "m3", anonymousId: "alice" }), // anonymous, under the linked id
    ];
    const { flusher } = flusherFor(engine, `\`${d}\`.events`, 100);
    await flusher.write([batchOf(rows)]);
    const linked = (await engine.sql.rows<{ id: string }>(linkedIdsQuery(d, "events", "ws1", "mallory"))).map((r) => r.id);
    assert.equal(linked, ["alice"]);
    await applyDeletion(engine.sql, d, deletionTargets(d, "events", "ws1", "mallory", linked, Date.parse(at) / 1000 + 60));
    const ids = await engine.sql.rows<{ message_id: string }>(`SELECT message_id FROM \`${d}\`.events FINAL ORDER BY message_id`);
    assert.equal(
      ids.map((r) => r.message_id),
      ["a1", "a2", "a3", "a4"],
    );
    assert.is(
      (await count(engine.sql, `SELECT count() AS n FROM \`${d}\`.users WHERE user_id = 'alice'`)) > 0,
      true,
      "alice's users row stays",
    );
    assert.is(await count(engine.sql, `SELECT count() AS n FROM \`${d}\`.users WHERE user_id = 'mallory'`), 0);
  });

  s("a deletion finishes while the user keeps sending: what came before the request goes, what came after stays", async () => {
    const d = db("busy");
    await migrate(engine.sql, scratch(d));
    const before = "2026-11-24T10:00:00.000Z";
    const insert = engine.insertLines(`\`${d}\`.events`);
    await insert([
      eventLine({ type: "identify", messageId: "old1", userId: "alice", anonymousId: "alice-dev", traits: { plan: "free" } }, before),
      eventLine({ type: "track", messageId: "old2", userId: "alice", event: "E" }, before),
    ]);
    const refused = (id: string, at: string) =>
      engine.sql.command(`INSERT INTO \`${d}\`.rejected_messages (workspace_id, received_at, rejection_id, message_id, type, reasons, raw)
SELECT 'ws1', toDateTime(${quoteString(at.slice(0, 19).replace("T", " "))}), ${quoteString(id)}, ${quoteString(id)}, 'track', ['event: string'], ${quoteString(JSON.stringify({ type: "track", messageId: id, properties: { userId: "alice" } }))}`);
    await refused("old-refused", before);
    // As a running sink would: after each statement of the deletion, one more of alice's events
    // and a refused item naming her in its data (any writeKey holder can send one), received
    // after the request.
    const after = "2026-11-24T11:00:00.000Z";
    let sent = 0;
    const busy: Sql = {
      ...engine.sql,
      command: async (query) => {
        await engine.sql.command(query);
        if (!/ DELETE WHERE /.test(query)) return;
        sent += 1;
        await insert([eventLine({ type: "identify", messageId: `new${sent}`, userId: "alice", traits: { plan: "pro" } }, after)]);
        await refused(`new-refused${sent}`, after);
      },
    };
    const targets = deletionTargets(d, "events", "ws1", "alice", ["alice-dev"], Date.parse(before) / 1000 + 60);
    const removed = await deleteRows(busy, d, targets, 60_000, undefined, false);
    assert.ok(sent > 0);
    assert.equal(
      targets.map((t, i) => `${t.table} ${removed[i]}`),
      ["events 2", "users 1", "identities 1", "rejected_messages 1", "delivery_failures 0"],
    );
    const ids = await engine.sql.rows<{ message_id: string }>(`SELECT message_id FROM \`${d}\`.events FINAL ORDER BY message_id`);
    assert.ok(
      ids.every((r) => r.message_id.startsWith("new")),
      `only what came after the request: ${ids.map((r) => r.message_id).join(", ")}`,
    );
    assert.is(await count(engine.sql, `SELECT count() AS n FROM \`${d}\`.rejected_messages WHERE message_id = 'old-refused'`), 0);
    assert.ok((await count(engine.sql, `SELECT count() AS n FROM \`${d}\`.rejected_messages`)) > 0, "the later refused items stay");
    // A suppressed user's new events are never stored: a users row still there after the rounds is an error.
    const again = deletionTargets(d, "events", "ws1", "alice", [], Date.parse(after) / 1000 - 60);
    const error = await deleteRows(busy, d, again, 60_000, undefined, true).catch((e: unknown) => e);
    assert.instance(error, RowsRemainError);
    assert.equal((error as RowsRemainError).tables, ["users"]);
  });

  s(
    "refused items: a deletion takes the user's own (userId first, or without one a linked id anywhere, old texts too), not bob's naming her",
    async () => {
      const d = db("refused");
      await migrate(engine.sql, scratch(d));
      const hostile = ('\u0001"\'\\\n\t\u0000\b\f\r é\u2028\\"' + "\u001f".repeat(200)).slice(0, 200);
      // [item, stored as an earlier release did (the item as sent, ids anywhere)]; a* are alice's, b* not.
      const items: [Record<string, unknown>, boolean?][] = [
        [{ messageId: "a1", type: "track", event: 5, userId: "alice" }],
        [{ messageId: "a2", type: "track", event: 7, anonymousId: "anon-alice", properties: { userId: "u-invitee" } }],
        [{ messageId: "a3", type: "alias", previousId: "prev-alice", userId: "" }],
        [{ messageId: "a4", type: "track", event: 1, anonymousId: hostile }],
        [{ messageId: "a5", type: "track", event: 5, userId: "alice" }, true],
        [{ messageId: "a6", type: "track", anonymousId: "anon-alice", properties: { userId: "x" } }, true],
        [{ messageId: "b1", type: "track", event: 9, userId: "bob", properties: { userId: "alice" } }],
        [{ messageId: "b2", type: "track", event: 9, userId: "bob", anonymousId: "anon-alice" }],
        [{ userId: "bob", messageId: "b3", properties: { userId: "alice" } }, true],
      ];
      const rows = items.map(([item, old]) => {
        const [record] = buildRejected(
          [{ item, reasons: ["event: string"] }],
          { workspaceId: "ws1", receivedAt: "2026-11-26T10:00:00.000Z" },
          32_768,
        );
        const decoded = decodeRejected(Buffer.from(record!.value));
        assert.ok(decoded.ok);
        return { ...decoded.row, received_at: "2026-11-26 10:00:00", ...(old ? { raw: JSON.stringify(item) } : {}) };
      });
      await engine.sql.command(
        `INSERT INTO \`${d}\`.rejected_messages FORMAT JSONEachRow\n${rows.map((r) => JSON.stringify(r)).join("\n")}`,
      );
      const targets = deletionTargets(
        d,
        "events",
        "ws1",
        "alice",
        ["anon-alice", "prev-alice", hostile],
        Date.parse("2026-11-26T11:00:00.000Z") / 1000,
      );
      const removed = await applyDeletion(engine.sql, d, targets);
      const refused = targets.flatMap((t, i) => (t.table === "rejected_messages" ? [removed[i]!] : []));
      assert.is(refused.at(-1), 6, "alice's six refused items");
      const left = await engine.sql.rows<{ message_id: string }>(`SELECT message_id FROM \`${d}\`.rejected_messages ORDER BY message_id`);
      assert.equal(
        left.map((r) => r.message_id),
        ["b1", "b2", "b3"],
      );
    },
  );

  s("the sink's insert settings: async_insert pinned off where the engine has it, nothing 18.16 would refuse", async () => {
    const settings = await serverInsertSettings(engine.sql);
    assert.equal(settings, engine.dialect === "current" ? { async_insert: 0 } : {});
    // Every insert of this suite carried them (insertLines): a flush lands with them.
    const d = db("settings");
    await migrate(engine.sql, scratch(d));
    await engine.insertLines(`\`${d}\`.events`)(lines([monthTime(600)]));
    assert.is(await count(engine.sql, `SELECT count() AS n FROM \`${d}\`.events`), 1);
  });

  s("the sink's read of ClickHouse's replicas (sink/monitors/redundancy.ts) names columns this engine's system.replicas has", async () => {
    // One server has no replicated table: no row, but every column must exist (the cluster suite reads real rows).
    const rows = await engine.sql.rows(`SELECT ${REPLICA_COLUMNS} FROM system.replicas LIMIT 1`);
    assert.ok(rows.length <= 1);
  });

  s("a string literal of quoteString reads back as the same text: backslashes, quotes, escaped control characters", async () => {
    const text = "a\nb\r\tc\b\f\u00001 \\ 'q' \u0001 é \\n";
    const [row] = await engine.sql.rows<{ t: string }>(`SELECT ${quoteString(text)} AS t`);
    assert.is(row!.t, text);
    assert.not.match(quoteString(text), /[\n\r\t\b\f\0]/);
  });

  s("the largest deletion statements parse and run: 2,500 UUID-sized linked ids and 300 of control characters", async () => {
    const d = db("bigdelete");
    await migrate(engine.sql, scratch(d));
    const at = "2026-11-24T10:00:00.000Z";
    const uuids = [...Array(2_500).keys()].map((i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`);
    const controls = [...Array(300).keys()].map((i) => `c${i}-`.padEnd(200, "\u0001"));
    const kept = "someone-else";
    const rows = [uuids[0]!, uuids.at(-1)!, controls[0]!, controls.at(-1)!, kept].map((anonymousId, i) =>
      eventLine({ type: "page", messageId: `p${i}`, anonymousId }, at),
    );
    await engine.insertLines(`\`${d}\`.events`)(rows);
    // A refused alias naming two linked ids that fall in different refused-item statements.
    const alias = JSON.stringify({ type: "alias", previousId: controls.at(-1), anonymousId: uuids[0] });
    await engine.sql
      .command(`INSERT INTO \`${d}\`.rejected_messages (workspace_id, received_at, rejection_id, message_id, type, reasons, raw)
SELECT 'ws1', toDateTime('2026-11-24 10:00:00'), 'both', '', 'alias', ['userId: expected string'], ${quoteString(alias)}`);
    const targets = deletionTargets(d, "events", "ws1", "nobody", [...uuids, ...controls], Date.parse(at) / 1000 + 60);
    const statements = (table: string) => targets.filter((t) => t.table === table);
    // 2,801 ids in 2 statements on events (15 of 200 ids before), the refused-items ones by bytes.
    assert.is(statements("events").length, 2, JSON.stringify(targets.map((t) => t.table)));
    for (const target of targets) assert.ok(Buffer.byteLength(target.mutation) < 262_144, `${Buffer.byteLength(target.mutation)} bytes`);
    const removed = await applyDeletion(engine.sql, d, targets);
    const refused = targets.flatMap((t, i) => (t.table === "rejected_messages" ? [removed[i]!] : []));
    assert.ok(refused.length > 1);
    assert.is(
      refused.reduce((a, b) => a + b, 0),
      1,
      `the refused alias counted once: ${refused.join(", ")}`,
    );
    assert.is(await count(engine.sql, `SELECT count() AS n FROM \`${d}\`.rejected_messages`), 0);
    const left = await engine.sql.rows<{ anonymous_id: string }>(`SELECT anonymous_id FROM \`${d}\`.events FINAL`);
    assert.equal(
      left.map((r) => r.anonymous_id),
      [kept],
    );
  });

  s(
    "a privacy request's audit row with 1,400 linked ids of 200 characters (285 KB, past max_query_size as SQL) is stored whole",
    async () => {
      const d = db("audit");
      await migrate(engine.sql, scratch(d));
      const ids = ["victim", ...[...Array(1_400).keys()].map((i) => `dev-${i}-`.padEnd(200, "x"))];
      const started = Date.parse("2026-11-26T10:00:00.000Z") + 999;
      const request = { action: "delete" as const, workspaceId: "ws1", userId: "victim", suppress: true, requestedBy: 'ops "jane"' };
      const removed = [
        { table: "events", rows: 1_402 },
        { table: "users", rows: 1 },
      ];
      await engine.sql.command(auditInsert(d, "r1", request, started, ids, removed));
      const [row] = await engine.sql.rows<Record<string, unknown>>(
        `SELECT action, requested_by, toUnixTimestamp(requested_at) AS at, ids, tables, rows_removed FROM \`${d}\`.privacy_requests`,
      );
      assert.equal(
        { ...row, at: Number(row!.at), rows_removed: (row!.rows_removed as unknown[]).map(Number) },
        {
          action: "delete+suppress",
          requested_by: 'ops "jane"',
          at: Date.parse("2026-11-26T10:00:00.000Z") / 1000,
          ids,
          tables: ["events", "users"],
          rows_removed: [1_402, 1],
        },
      );
    },
  );

  s(
    "a table of a release before event was LowCardinality: setup retypes it on current ClickHouse, keeps String on 18.16, rows intact",
    async () => {
      await migrate(engine.sql, scratch(db("retype")));
      const type = async () =>
        (
          await engine.sql.rows<{ type: string }>(
            `SELECT type FROM system.columns WHERE database = '${db("retype")}' AND table = 'events' AND name = 'event'`,
          )
        )[0]!.type;
      const wanted = engine.dialect === "current" ? "LowCardinality(String)" : "String";
      assert.is(await type(), wanted);
      if (engine.dialect === "current")
        await engine.sql.command(`ALTER TABLE ${events("retype")} MODIFY COLUMN event String SETTINGS mutations_sync = 1`);
      assert.is(await type(), "String");
      await engine.insertLines(events("retype"))(lines(["2026-10-01T00:00:00.000Z", "2026-11-01T00:00:00.000Z"]));
      await migrate(engine.sql, scratch(db("retype")));
      assert.is(await type(), wanted);
      const rows = await engine.sql.rows<{ event: string; n: string | number }>(
        `SELECT event, count() AS n FROM ${events("retype")} FINAL GROUP BY event`,
      );
      assert.equal(
        rows.map((r) => [r.event, Number(r.n)]),
        [["E", 2]],
      );
    },
  );

  s(
    "closed months: the sink merges a quiet one in several parts into one, once; a late one-row part leaves it; setup turns off the forced merge earlier releases set",
    async () => {
      const config = scratch(db("closed"));
      await migrate(engine.sql, config);
      const insert = engine.insertLines(events("closed"));
      const september = (n: number, prefix: string) =>
        lines(
          Array.from({ length: n }, (_, i) => `2026-09-${String(1 + (i % 28)).padStart(2, "0")}T12:00:00.000Z`),
          undefined,
          prefix,
        );
      // ClickHouse's own merges held while the parts are counted (tiny parts merge after about 10 s);
      // let go for each merge the step runs (OPTIMIZE is cancelled while they are held).
      const merges = (verb: "STOP" | "START") => engine.sql.command(`SYSTEM ${verb} MERGES ${events("closed")}`);
      await merges("STOP");
      await insert(september(20_000, "a"));
      await insert(september(20_000, "b"));
      await insert(september(3, "c"));
      await insert(lines(["2026-11-20T12:00:00.000Z"], undefined, "open1-"));
      await insert(lines(["2026-11-21T12:00:00.000Z"], undefined, "open2-"));
      const parts = async () =>
        Object.fromEntries(
          (
            await engine.sql.rows<{ partition: string; n: string | number }>(
              `SELECT partition, count() AS n FROM system.parts WHERE database = '${db("closed")}' AND table = 'events' AND active GROUP BY partition`,
            )
          ).map((r) => [r.partition, Number(r.n)]),
        );
      /** Runs the step with merges let go, then waits for the month to be one part (18.16: a background merge may have taken the parts first). */
      const merge = async () => {
        await merges("START");
        const id = await mergeClosedMonth(engine.sql, config, "202611", undefined, 0);
        for (let i = 0; i < 60 && (await parts())["202609"] !== 1; i++) await new Promise((r) => setTimeout(r, 500));
        await merges("STOP");
        return id;
      };
      assert.equal(await parts(), { "202609": 3, "202611": 2 });
      // Parts written just now: the month is still arriving.
      assert.is(await mergeClosedMonth(engine.sql, config, "202611"), undefined);
      assert.is(await merge(), "202609", "the closed month merged, not the open one");
      assert.is((await parts())["202609"], 1, "the closed month in one part");
      assert.is(await mergeClosedMonth(engine.sql, config, "202611", undefined, 0), undefined, "nothing more to merge");
      // A late event: its one-row part stays beside the month's part; a month's worth more: merged.
      await insert(lines(["2026-09-15T08:00:00.000Z"], undefined, "late-"));
      assert.is((await parts())["202609"], 2);
      assert.is(await mergeClosedMonth(engine.sql, config, "202611", undefined, 0), undefined);
      await insert(september(20_000, "d"));
      assert.is(await mergeClosedMonth(engine.sql, config, "202611", new Set(["202609"]), 0), undefined, "a month tried lately is left");
      assert.is(await merge(), "202609");
      assert.is((await parts())["202609"], 1);
      assert.is(await count(engine.sql, `SELECT count() AS n FROM ${events("closed")} FINAL WHERE event_date < '2026-10-01'`), 60_004);

      const created = async () =>
        (
          await engine.sql.rows<{ q: string }>(
            `SELECT create_table_query AS q FROM system.tables WHERE database = '${db("closed")}' AND name = 'events'`,
          )
        )[0]!.q;
      if (engine.dialect === "legacy") return assert.not.match(await created(), /force_merge/);
      // A table of an earlier release: its forced merge turned off; an operator's value stays.
      await engine.sql.command(`ALTER TABLE ${events("closed")} MODIFY SETTING min_partition_age_to_force_merge_seconds = 86400`);
      await migrate(engine.sql, config);
      assert.match(await created(), /min_partition_age_to_force_merge_seconds = 0\b/);
      await engine.sql.command(`ALTER TABLE ${events("closed")} MODIFY SETTING min_partition_age_to_force_merge_seconds = 3600`);
      await migrate(engine.sql, config);
      assert.match(await created(), /min_partition_age_to_force_merge_seconds = 3600\b/);
    },
  );

  s(
    "a deletion spread over many statements by planted links: sent without waiting in between, 18.16 applies several in one rewrite of a part",
    async () => {
      const d = db("rewrites");
      await migrate(engine.sql, scratch(d));
      const events = `\`${d}\`.events`;
      // Three months of 1,000,000 rows, one part each (a part alone in its month is not merged): a
      // part's rewrite takes a while, and the statements sent meanwhile are applied in its next one.
      for (const month of ["07", "08", "09"])
        await engine.sql
          .command(`INSERT INTO ${events} (workspace_id, message_id, type, event, user_id, anonymous_id, received_at, timestamp)
SELECT 'ws1', concat('${month}-', toString(number)), 'track', 'E', '', concat('filler-', toString(number)), toDateTime('2026-${month}-15 12:00:00'), toDateTime('2026-${month}-15 12:00:00') FROM numbers(1000000)`);
      // 6,000 linked ids of 200 characters (a newline is 2 bytes in a statement): several statements.
      const planted = [...Array(6_000).keys()].map((i) => `p${i}-`.padEnd(200, "\n"));
      const at = "2026-10-20T10:00:00.000Z"; // a month of their own: no merge with the filler
      const anonymous = planted
        .filter((_, i) => i % 200 === 0 || i === planted.length - 1)
        .map((anonymousId, i) => eventLine({ type: "page", messageId: `a${i}`, anonymousId }, at));
      await engine.insertLines(events)(anonymous);
      const targets = deletionTargets(d, "events", "ws1", "mallory", planted, Date.parse(at) / 1000 + 60).filter(
        (t) => t.table === "events",
      );
      assert.ok(targets.length >= 10, `${targets.length} statements on events`);
      const partsBefore = await count(
        engine.sql,
        `SELECT count() AS n FROM system.parts WHERE database = '${d}' AND table = 'events' AND active`,
      );
      const removed = await applyDeletion(engine.sql, d, targets);
      assert.is(
        removed.reduce((a, b) => a + b, 0),
        anonymous.length,
        "every planted id's row found",
      );
      assert.is(await count(engine.sql, `SELECT count() AS n FROM ${events} WHERE anonymous_id LIKE 'p%'`), 0);
      assert.is(await count(engine.sql, `SELECT count() AS n FROM ${events}`), 3_000_000);
      // Each new version of a part leaves the one it replaced (inactive, kept 8 minutes): names per
      // original part. 18.16 rewrites a part for a mutation; current ClickHouse only hard-links a
      // part no row of which matches (here all but the planted rows' part), so there the count is
      // of cheap copies, which the timing of the statements decides: shown, not bounded.
      const versions = await engine.sql.rows<{ part: string; n: string | number }>(
        `SELECT arrayStringConcat(arraySlice(splitByChar('_', name), 1, 4), '_') AS part, count() AS n FROM system.parts
WHERE database = '${d}' AND table = 'events' GROUP BY part ORDER BY part`,
      );
      console.log(`  ${engine.dialect}: ${targets.length} statements on events; versions per part ${versions.map((v) => v.n).join(", ")}`);
      assert.ok(versions.length >= partsBefore);
      // Waiting after each statement made one rewrite a statement: statements + 1 versions a part.
      const sent = removed.filter((n) => n > 0).length;
      assert.is(sent, targets.length, `each statement had rows to delete: ${removed.join(", ")}`);
      if (engine.dialect === "legacy")
        for (const { part, n } of versions)
          assert.ok(Number(n) <= sent, `${part}: ${n} versions for ${sent} statements (fewer rewrites than statements)`);
    },
  );

  s(
    "RETENTION_DAYS on refused items: the expired ones leave, today's and the last 29 days' stay (current: setup's TTL, also on a table of an earlier release; 18.16: the sink's deletion, once a day)",
    async () => {
      const config = { ...scratch(db("expiry")), retentionDays: 30 };
      const table = `\`${db("expiry")}\`.rejected_messages`;
      const today = new Date().toISOString().slice(0, 10);
      const insert = (id: string, daysAgo: number) =>
        engine.sql.command(
          `INSERT INTO ${table} (workspace_id, received_at, rejection_id, message_id, type, reasons, raw) SELECT 'ws1', now() - INTERVAL ${daysAgo} DAY, '${id}', '', 'track', ['event: string'], '{}'`,
        );
      const ids = async () =>
        (await engine.sql.rows<{ id: string }>(`SELECT rejection_id AS id FROM ${table} ORDER BY id`)).map((r) => r.id);
      /** The ids once ClickHouse applied what is queued (a mutation, a TTL materialized), at most 60 s. */
      const settled = async (expected: string[]) => {
        for (let i = 0; i < 120 && JSON.stringify(await ids()) !== JSON.stringify(expected); i++)
          await new Promise((r) => setTimeout(r, 500));
        return ids();
      };
      // A table of an earlier release (no retention then), holding an expired item.
      await migrate(engine.sql, { ...config, retentionDays: undefined });
      for (const [id, daysAgo] of [
        ["old", 40],
        ["edge", 29],
        ["new", 0],
      ] as const)
        await insert(id, daysAgo);
      assert.is(await deleteExpiredRejected(engine.sql, { ...config, retentionDays: undefined }, today), 0, "no RETENTION_DAYS: nothing");
      await migrate(engine.sql, config);
      if (engine.dialect === "current") {
        assert.match(
          (
            await engine.sql.rows<{ q: string }>(
              `SELECT create_table_query AS q FROM system.tables WHERE database = '${db("expiry")}' AND name = 'rejected_messages'`,
            )
          )[0]!.q,
          /TTL toDate\(received_at\) \+ toIntervalDay\(30\)/,
        );
        assert.equal(await settled(["edge", "new"]), ["edge", "new"], "setup's TTL removed the expired item");
        await insert("later", 45);
        await engine.sql.command(`OPTIMIZE TABLE ${table} FINAL`);
        assert.equal(await ids(), ["edge", "new"], "a merge removes an expired item");
        assert.is(await deleteExpiredRejected(engine.sql, config, today), 0, "current ClickHouse: the TTL, not the sink");
        return;
      }
      assert.equal(await ids(), ["edge", "new", "old"], "18.16: setup leaves the rows (no TTL)");
      // 30,000 days reach before 1970, which 18.16 would read as a time past 2100: nothing expired.
      assert.is(await deleteExpiredRejected(engine.sql, { ...config, retentionDays: 30_000 }, today), 0);
      assert.equal(await ids(), ["edge", "new", "old"]);
      assert.is(await deleteExpiredRejected(engine.sql, config, today), 1, "one expired item deleted");
      assert.equal(await settled(["edge", "new"]), ["edge", "new"]);
      await insert("later", 45);
      assert.is(await deleteExpiredRejected(engine.sql, config, today), 0, "a deletion began in the last day: none more");
      assert.equal(await ids(), ["edge", "later", "new"]);
    },
  );

  s.run();
}

// ClickHouse 18.16, the local server.
let client: ClickHouseClient;
engineSuite(
  "sink and migration on ClickHouse 18.16",
  async () => {
    const c = clickhouseConfig(process.env as Record<string, string>);
    client = createClient({ url: c.url, username: c.username, password: c.password });
    // The sink's own insert settings, as it reads them from this server.
    const settings = await serverInsertSettings(clientSql(client));
    return {
      dialect: "legacy",
      sql: clientSql(client),
      insertLines: (table) => clickhouseInsertLines(client, table, EVENT_ROW_COLUMNS, settings),
      probe: (table) => clickhouseProbe(client, table, EVENT_ROW_COLUMNS),
    };
  },
  () => client.close(),
  `engines_${process.pid}`,
);

// Current ClickHouse, in-process.
let chdb: Chdb;
engineSuite(
  "sink and migration on current ClickHouse (chdb)",
  async () => {
    chdb = new Chdb();
    assert.ok(Number((await chdb.start()).split(".")[0]) >= 23, `current ClickHouse, got ${chdb.version}`);
    // chdb embeds with mutations_sync = 1, so each ALTER ... DELETE would wait for itself; a server's
    // default is 0 (mutations run in the background), which `users delete` relies on.
    const sql: Sql = {
      command: (query) => chdb.command(/^ALTER TABLE .* DELETE WHERE /s.test(query) ? `${query} SETTINGS mutations_sync = 0` : query),
      rows: (query) => chdb.rows(query),
    };
    // The sink's own insert settings, as it reads them from this engine, in the INSERT's SETTINGS.
    const pinned = Object.entries(await serverInsertSettings(sql)).map(([name, value]) => `, ${name} = ${value}`);
    return {
      dialect: "current",
      sql,
      insertLines: (table) => async (rows) =>
        chdb.command(
          `INSERT INTO ${table} (${EVENT_ROW_COLUMNS.join(", ")}) SETTINGS date_time_input_format = 'best_effort'${pinned.join("")} FORMAT JSONEachRow\n${joinLines(rows).toString()}`,
        ),
      probe: (table) => () => chdb.command(`${probeQuery(table, EVENT_ROW_COLUMNS)}\n${PROBE_BODY}`),
    };
  },
  () => chdb.close(),
  "engines",
);
