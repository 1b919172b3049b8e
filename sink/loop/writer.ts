/**
 * Inserts batches into ClickHouse. Failures are sorted where they are caught (`classifyInsertError`):
 * an infrastructure failure (no answer, timeout, overload, a missing table, auth) is retried
 * with backoff until it succeeds or the sink stops; any other refusal, whatever its code, is
 * narrowed by halving the batch to the rows that cause it, which become dead letters once a
 * probe shows ClickHouse otherwise accepts inserts into the table. The rest land. Nothing is
 * committed until this returns.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { columnsQuery } from "../../schemas/clickhouse/sql";
import type { EventRow } from "../../schemas/row";
import type { Sql } from "../../schemas/clickhouse/client";
import type { BatchItem, DeadLetter } from "./batch";

/**
 * Inserts rows in one INSERT; resolves when ClickHouse acknowledged it. `signal` (the sink's stop
 * giving up) ends an insert under way and refuses to start one: the error carries no ClickHouse
 * code, so it is sorted as infrastructure (retried whole, never narrowed to dead letters).
 */
export type InsertRows<Row = EventRow> = (rows: Row[], signal?: AbortSignal) => Promise<void>;

/** Resolves when ClickHouse accepts an insert into the table at all; throws otherwise (and once `signal` aborts). */
export type ProbeInsert = (signal?: AbortSignal) => Promise<void>;

/** Throws when `signal` has aborted: the client sends a request whose signal aborted before it began. */
function notStopped(signal: AbortSignal | undefined): { abort_signal?: AbortSignal } {
  if (signal?.aborted) throw new Error("not sent: the sink is stopping");
  return signal === undefined ? {} : { abort_signal: signal };
}

/**
 * Reads which of the settings INSERT_SETTINGS pins the server has: `SELECT name FROM
 * system.settings WHERE name IN (...)`, one row per setting it knows.
 */
export const INSERT_SETTINGS_QUERY = "SELECT name FROM system.settings WHERE name IN ('async_insert')";

/**
 * Settings every sink INSERT carries, by what the server knows (the rows of INSERT_SETTINGS_QUERY):
 * `async_insert` 0 where it exists (ClickHouse 21.11 on), so a user profile's `async_insert=1,
 * wait_for_async_insert=0` cannot acknowledge an insert before its rows are parsed (the sink would
 * commit offsets for rows ClickHouse later refuses, and bisect none of them to the DLQ). Nothing
 * on 18.16, which would refuse the unknown setting.
 */
export function insertSettings(known: readonly string[]): { async_insert?: 0 } {
  return known.includes("async_insert") ? { async_insert: 0 } : {};
}

/** insertSettings of the server `sql` reaches. */
export async function serverInsertSettings(sql: Sql): Promise<{ async_insert?: 0 }> {
  return insertSettings((await sql.rows<{ name: string }>(INSERT_SETTINGS_QUERY)).map((r) => r.name));
}

/**
 * An insert function bound to a client and table (JSONEachRow, ISO times parsed best-effort);
 * `settings`: the server's insertSettings.
 */
export function clickhouseInsert<Row = EventRow>(
  client: ClickHouseClient,
  table: string,
  settings: { async_insert?: 0 } = {},
): InsertRows<Row> {
  return async (rows, signal) => {
    await client.insert({
      ...notStopped(signal),
      table,
      values: rows,
      format: "JSONEachRow",
      clickhouse_settings: { date_time_input_format: "best_effort", ...settings },
    });
  };
}

/**
 * An insert function for rows already in JSONEachRow form (one UTF-8 line each, no newline, the
 * keys `columns`): the lines are joined into one body, copied once, and sent as they are. The
 * columns are named so that the table computes every other column from its DEFAULT (18.16 reads
 * a field missing from a JSONEachRow line as the type's zero, not the column's DEFAULT). A field
 * naming no column is refused (input_format_skip_unknown_fields=0). Throws ClickHouse's error
 * (sorted by classifyInsertError) or the connection's.
 */
export function clickhouseInsertLines(
  client: ClickHouseClient,
  table: string,
  columns: readonly string[],
  settings: { async_insert?: 0 } = {},
): InsertRows<Buffer> {
  const query = `INSERT INTO ${table} (${columns.join(", ")}) FORMAT JSONEachRow`;
  return async (lines, signal) => {
    const result = await client.exec({
      ...notStopped(signal),
      query,
      values: Readable.from([joinLines(lines)]),
      // A key that names no column is refused (117, data), not skipped: 18.16's default, not current ClickHouse's.
      clickhouse_settings: { date_time_input_format: "best_effort", input_format_skip_unknown_fields: 0, ...settings },
    });
    result.stream.resume();
    await finished(result.stream);
  };
}

/** Lines -> one buffer, each line followed by a newline. */
export function joinLines(lines: readonly Buffer[]): Buffer {
  let bytes = 0;
  for (const line of lines) bytes += line.length + 1;
  const body = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (const line of lines) {
    at += line.copy(body, at);
    body[at++] = 0x0a;
  }
  return body;
}

/**
 * The columns of `table` missing from `wanted`, read from system.columns (throws if ClickHouse
 * does not answer). A sink newer than its table would otherwise see every row refused ("Unknown
 * field", a data error) and dead-letter all of them: it refuses to start instead.
 */
export async function missingColumns(
  client: ClickHouseClient,
  database: string,
  table: string,
  wanted: readonly string[],
): Promise<string[]> {
  const result = await client.query({ query: columnsQuery(database, table), format: "JSONEachRow" });
  const have = new Set((await result.json<{ name: string }>()).map((c) => c.name));
  return wanted.filter((c) => !have.has(c));
}

/** The probe's statement (clickhouseProbe); its data, PROBE_BODY, follows it or is the request's body. */
export function probeQuery(table: string, columns?: readonly string[]): string {
  return `INSERT INTO ${table}${columns === undefined ? "" : ` (${columns.join(", ")})`} FORMAT JSONEachRow`;
}

/** The probe's data: no rows. */
export const PROBE_BODY = "\n";

/**
 * A probe bound to a client and a (quoted) table, with the columns the sink names when it
 * inserts: an INSERT of no rows (JSONEachRow, a body of one newline), which fails when the table
 * is gone or read-only or the user may not insert into it, and succeeds in milliseconds
 * otherwise. It needs the INSERT right only (no SELECT), on 18.16 and current ClickHouse alike.
 * The newline makes it an insert of no rows rather than one without data, which current
 * ClickHouse's own clients refuse (NO_DATA_TO_INSERT). Throws ClickHouse's error or the connection's.
 */
export function clickhouseProbe(client: ClickHouseClient, table: string, columns?: readonly string[]): ProbeInsert {
  const query = probeQuery(table, columns);
  return async (signal) => {
    const result = await client.exec({ ...notStopped(signal), query, values: Readable.from([Buffer.from(PROBE_BODY)]) });
    result.stream.resume();
    await finished(result.stream);
  };
}

/**
 * ClickHouse error codes (https://github.com/ClickHouse/ClickHouse/blob/master/src/Common/ErrorCodes.cpp) meaning "this data is bad": parse failures
 * (25 is a lone surrogate in a JSON string), type mismatches, out-of-range values.
 */
const DATA_ERROR_CODES = new Set([6, 25, 26, 27, 32, 33, 38, 41, 53, 69, 70, 72, 117, 131, 321]);

/**
 * ClickHouse error codes meaning "the server or its setup is unwell, the data may be fine":
 * missing database/table/column (a migration not run), timeouts, overload, memory, disk,
 * read-only replicas, ZooKeeper/Keeper, auth, unknown insert status; on a cluster, every replica
 * of a shard unreachable (279) and too few live replicas for a quorum insert (285, 286). Also the
 * write path and transport, which the zero-row probe does not exercise (it writes no part):
 * CANNOT_WRITE_TO_FILE_DESCRIPTOR 75, CANNOT_OPEN_FILE 76, CANNOT_READ_FROM_SOCKET 95,
 * CANNOT_WRITE_TO_SOCKET 96, CANNOT_FSYNC 204, CANNOT_WRITE_TO_FILE 294, DEADLOCK_AVOIDED 473,
 * TABLE_IS_BEING_RESTARTED 733, and NO_REMOTE_SHARD_AVAILABLE 519 (current ClickHouse, a shard down;
 * names: errorCodeToName on current ClickHouse).
 */
const INFRA_ERROR_CODES = new Set([
  3, 16, 60, 75, 76, 81, 95, 96, 159, 160, 164, 173, 192, 193, 194, 195, 202, 203, 204, 209, 210, 225, 236, 241, 242, 243, 252, 279, 285,
  286, 294, 319, 394, 425, 439, 473, 497, 516, 519, 733, 999, 1000, 1001,
]);

/**
 * ATTEMPT_TO_READ_AFTER_EOF (32) from a connection: ClickHouse's Connection::receivePacket adds
 * "while receiving packet from <host:port>" to it (18.16 and current), as when a shard drops the
 * connection during a Distributed insert. Code 32 of a truncated JSONEachRow field says "while
 * read(ing) the value of key <name>" instead: data. Matched at the start of the exception's text
 * (current: the message; 18.16: after "DB::Exception: "), so a row's bytes quoted later in a
 * message cannot make a data error look like infrastructure.
 */
const EOF_FROM_CONNECTION = /(?:^|DB::Exception: )Attempt to read after eof: while receiving packet from /;

/** Current ClickHouse's text for an insert block over `max_partitions_per_insert_block` (code 252). */
const TOO_MANY_PARTITIONS = /Too many partitions for single INSERT block/i;

/** How an insert failure is handled. */
export type InsertFailure = "infra" | "data" | "unknown";

/** The ClickHouse error code of a failure, if ClickHouse answered with one. */
export function clickhouseCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown }).code;
  const fromField = typeof code === "string" || typeof code === "number" ? Number(code) : Number.NaN;
  if (Number.isInteger(fromField)) return fromField;
  // ClickHouse before 21.x writes "Code: 27, e.displayText() = ..." which the client does not parse.
  const fromText = Number(/Code: (\d+)/.exec(String((error as Error).message ?? ""))?.[1]);
  return Number.isInteger(fromText) ? fromText : undefined;
}

/**
 * Sorts an insert failure: `infra` (no ClickHouse answer - refused connection, reset, timeout -
 * an infrastructure code, or 32 read from a connection) is retried as a whole; `data` (a known data code, or an insert over
 * the partitions an INSERT may touch) and `unknown` (any other code) are narrowed to the rows
 * that cause them.
 */
export function classifyInsertError(error: unknown): InsertFailure {
  const code = clickhouseCode(error);
  // 252 is also "too many parts" (merges behind: infrastructure); over max_partitions_per_insert_block
  // the rows themselves span too many months, and a smaller slice of them is accepted.
  const message = String((error as Error).message ?? "");
  if (code === 252 && TOO_MANY_PARTITIONS.test(message)) return "data";
  if (code === undefined || INFRA_ERROR_CODES.has(code)) return "infra";
  if (code === 32 && EOF_FROM_CONNECTION.test(message)) return "infra";
  return DATA_ERROR_CODES.has(code) ? "data" : "unknown";
}

/** Whether ClickHouse refused the data itself (retrying the same rows cannot succeed). */
export function isDataError(error: unknown): boolean {
  return classifyInsertError(error) === "data";
}

/**
 * Inserts the items' rows. If ClickHouse refuses them for any reason but infrastructure, halves
 * the batch until each refused row stands alone, inserts the rest, and returns the refused rows
 * as dead letters. A lone row refused with a code not known as a data error becomes a dead
 * letter only if `probe` shows the table otherwise takes inserts; if the probe fails, the
 * original error is thrown (retriable). Throws every infrastructure error.
 *
 * | failure of this slice | one row                            | several rows      |
 * |-----------------------|------------------------------------|-------------------|
 * | infra                 | throw                              | throw             |
 * | data                  | dead letter                        | bisect            |
 * | unknown               | probe ok: dead letter; else throw  | bisect            |
 */
export async function insertOrBisect<Row>(insert: InsertRows<Row>, items: BatchItem<Row>[], probe: ProbeInsert): Promise<DeadLetter[]> {
  if (items.length === 0) return [];
  try {
    await insert(items.map((i) => i.row));
    return [];
  } catch (error) {
    const kind = classifyInsertError(error);
    if (kind === "infra") throw error;
    if (items.length === 1) {
      if (kind === "unknown") {
        try {
          await probe();
        } catch {
          throw error; // the table refuses everything: not this row's fault
        }
      }
      const { partition, offset, key, value } = items[0]!;
      return [{ partition, offset, key, value, step: "insert", reason: String((error as Error).message).slice(0, 500) }];
    }
    const mid = Math.floor(items.length / 2);
    const left = await insertOrBisect(insert, items.slice(0, mid), probe);
    const right = await insertOrBisect(insert, items.slice(mid), probe);
    return [...left, ...right];
  }
}
