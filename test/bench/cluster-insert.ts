/**
 * `npm run bench:cluster-insert` (on `npm run stack:cluster:start`): the two ways the sink can insert
 * into a ClickHouse cluster of two shards, on the same rows, one after the other:
 * - distributed: INSERT INTO the Distributed `events` with insert_distributed_sync=1 (one server
 *   parses the rows, splits them and sends each shard its part);
 * - shards: the bench splits the rows itself (shardOf below, as a sink would) and inserts each part into a replica's
 *   `events_local` itself, the shards in parallel.
 * Prints rows/s and CPU µs per row of the sink process and of the ClickHouse servers, for each,
 * and checks that every row the sink placed is on the shard ClickHouse's key names.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import { clusterSettings, quoteIdent } from "../../schemas/clickhouse/sql";
import { EVENT_ROW_COLUMNS, messageRow, rowStringField } from "../../schemas/row";
import type { Message } from "../../schemas/messages";
import { clientSql } from "../../schemas/clickhouse/client";
import { migrate } from "../../deploy/setup/migrate";
import { classifyInsertError, clickhouseInsertLines, type InsertRows } from "../../sink/loop/writer";
import { corpus } from "./corpus";
import { cpuSeconds } from "./procstat";
import { ROOT } from "../support/paths";

const CLUSTER = "pipeline";
const NODES = [1, 2, 3, 4].map((n) => `http://127.0.0.1:2${n}123`);
const ROWS = Number(process.env.BENCH_ROWS ?? 400_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 10_000);
const DATABASE = "bench_cluster_insert";

function serverPids(): number[] {
  return [1, 2, 3, 4].map((n) =>
    Number(readFileSync(join(ROOT, ".stack", "cluster", `clickhouse-${n}`, "clickhouse", "clickhouse.pid"), "utf8").trim()),
  );
}

/** `n` events row lines as the ingest writes them, with unique messageIds prefixed `prefix`. */
function rowLines(n: number, prefix: string): Buffer[] {
  const messages = corpus(1000);
  const receivedAt = new Date().toISOString();
  return Array.from({ length: n }, (_, i) => {
    const m = { ...messages[i % messages.length], messageId: `${prefix}-${i}` } as unknown as Message;
    const row = messageRow(m, {
      workspaceId: "ws-bench",
      receivedAt,
      sentAt: null,
      originalTimestamp: null,
      timestamp: receivedAt,
      context: m.context,
    });
    return Buffer.from(JSON.stringify(row));
  });
}

/** rows/s of one run, printed with the CPU per row of the sink process and of the four servers. */
async function measure(name: string, insert: InsertRows<Buffer>, lines: Buffer[]): Promise<number> {
  const pids = serverPids();
  const cpu0 = { self: process.cpuUsage(), servers: pids.map(cpuSeconds) };
  const started = process.hrtime.bigint();
  for (let i = 0; i < lines.length; i += BATCH) await insert(lines.slice(i, i + BATCH));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const self = process.cpuUsage(cpu0.self);
  const servers = pids.map(cpuSeconds).reduce((a, b, i) => a + b - cpu0.servers[i]!, 0);
  const perRow = (s: number) => ((s * 1e6) / lines.length).toFixed(1);
  const rate = Math.round(lines.length / seconds);
  console.log(
    `${name.padEnd(12)} ${lines.length} rows in ${seconds.toFixed(2)} s = ${rate} rows/s; ` +
      `CPU µs/row: sink ${perRow((self.user + self.system) / 1e6)}, ClickHouse (4 servers) ${perRow(servers)}`,
  );
  return rate;
}

/** Once replicas caught up: rows under FINAL, rows without an event_date, rows on a shard the key does not name. */
async function check(clients: ClickHouseClient[]): Promise<string> {
  // A read through the Distributed table may reach either replica: wait until each has fetched every part.
  await Promise.all(clients.map((c) => c.command({ query: `SYSTEM SYNC REPLICA ${DATABASE}.events_local` })));
  const one = async (node: number, query: string) =>
    Number((await (await clients[node]!.query({ query, format: "JSONEachRow" })).json<{ n: string }>())[0]!.n);
  const rows = await one(0, `SELECT count() AS n FROM ${DATABASE}.events FINAL`);
  const undated = await one(0, `SELECT count() AS n FROM ${DATABASE}.events WHERE event_date = toDate(0)`);
  const misplaced = await Promise.all(
    [0, 2].map((node) => one(node, `SELECT count() AS n FROM ${DATABASE}.events_local WHERE halfMD5(message_id) % 2 != ${node / 2}`)),
  );
  return `rows under FINAL ${rows}, without an event_date ${undated}, on a shard the key does not name ${misplaced[0]! + misplaced[1]!}`;
}

async function main(): Promise<void> {
  const settings = clusterSettings(CLUSTER);
  const clients: ClickHouseClient[] = NODES.map((url) => createClient({ url, clickhouse_settings: settings }));
  const setup = clientSql(createClient({ url: NODES[0]!, clickhouse_settings: settings, request_timeout: 300_000 }));
  const config = { url: NODES[0]!, username: "default", password: "", database: DATABASE, table: "events", cluster: CLUSTER };
  const drop = () => setup.command(`DROP DATABASE IF EXISTS ${quoteIdent(DATABASE)} ON CLUSTER ${CLUSTER}`);
  const paths: [string, InsertRows<Buffer>][] = [
    ["distributed", clickhouseInsertLines(clients[0]!, `${DATABASE}.events`, EVENT_ROW_COLUMNS)],
    [
      "shards",
      shardedInsertLines(
        [
          [clients[0]!, clients[1]!],
          [clients[2]!, clients[3]!],
        ],
        `${DATABASE}.events_local`,
      ),
    ],
  ];
  console.log(`cluster-insert: ${ROWS} rows per run, batches of ${BATCH}, 2 shards x 2 replicas (ClickHouse 18.16), empty tables each run`);
  const rates = new Map<string, number[]>();
  for (const round of [1, 2, 3]) {
    for (const [name, insert] of paths) {
      await drop();
      await migrate(setup, config);
      rates.set(name, [...(rates.get(name) ?? []), await measure(name, insert, rowLines(ROWS, `${name}${round}`))]);
      console.log(`             ${await check(clients)}`);
    }
  }
  for (const [name, list] of rates) console.log(`${name}: median ${[...list].sort((a, b) => a - b)[1]} rows/s of ${list.join(", ")}`);
  await drop();
  await Promise.all(clients.map((c) => c.close()));
}

// The "shards" path: what the sink would do to insert into each shard itself.

/**
 * The 0-based shard of `messageId` among `shards` equally weighted shards: the Distributed
 * table's `halfMD5(message_id) % shards`. halfMD5 is the first 8 bytes of the MD5 of the string
 * read as a big-endian UInt64 (ClickHouse docs); main() checks the placement against the server.
 */
function shardOf(messageId: string, shards: number): number {
  if (shards <= 1) return 0;
  const key = createHash("md5").update(messageId, "utf8").digest().readBigUInt64BE(0);
  return Number(key % BigInt(shards));
}

/**
 * An InsertRows over `shards` (for each shard in shard_num order, a client per replica) into
 * `table` (quoted, the `_local` table). A replica that fails for an infrastructure reason
 * (classifyInsertError) is passed over for the shard's next; when every replica of a shard
 * failed, or one refused the data, that error is thrown (the writer retries or narrows it).
 */
function shardedInsertLines(shards: readonly (readonly ClickHouseClient[])[], table: string): InsertRows<Buffer> {
  const replicas = shards.map((clients) => clients.map((client) => clickhouseInsertLines(client, table, EVENT_ROW_COLUMNS)));
  return async (lines) => {
    const parts = splitByShard(lines, shards.length);
    await Promise.all(
      parts.map(async (part, shard) => {
        if (part.length === 0) return;
        await insertIntoShard(replicas[shard]!, part);
      }),
    );
  };
}

/** Row lines -> one list per shard (shardOf the line's message_id; a line without one goes to shard 0). */
function splitByShard(lines: readonly Buffer[], shards: number): Buffer[][] {
  const parts: Buffer[][] = Array.from({ length: shards }, () => []);
  for (const line of lines) {
    const messageId = rowStringField(line, "message_id");
    parts[messageId === undefined ? 0 : shardOf(messageId, shards)]!.push(line);
  }
  return parts;
}

async function insertIntoShard(replicas: readonly InsertRows<Buffer>[], lines: Buffer[]): Promise<void> {
  let last: unknown;
  for (const insert of replicas) {
    try {
      await insert(lines);
      return;
    } catch (error) {
      if (classifyInsertError(error) !== "infra") throw error;
      last = error;
    }
  }
  throw last;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
