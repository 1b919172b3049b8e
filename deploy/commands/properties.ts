/**
 * `cli properties materialize <key> [--from properties|traits|context] [--type String|Float64|Int64|UInt8]`,
 * `cli properties dematerialize <key> [--from ...]` and `cli properties list`: a column per hot
 * key (schemas/clickhouse/materialize.ts), computed at every insert and written into the rows
 * stored before it: on current ClickHouse by a MATERIALIZE COLUMN mutation, on 18.16 by
 * rewriting each month partition that lacks it (OPTIMIZE ... FINAL). Idempotent: a column that
 * exists is left as it is (its type reported as system.columns gives it). Without --type the
 * type is one the catalog saw alone for the key (columnTypeFor), else an error value.
 */
import type { Sql } from "../../schemas/clickhouse/client";
import { serverVersion } from "../../schemas/clickhouse/client";
import type { KeyTypeSeen } from "../../schemas/clickhouse/catalog";
import {
  addColumnDdl,
  columnName,
  columnTypeFor,
  dropColumnDdl,
  fillPartitionsQuery,
  keyTypesSeen,
  keyTypesSeenQuery,
  materializeColumnDdl,
  materializedColumnsQuery,
  optimizePartitionDdl,
  type ColumnType,
  type PropertySource,
} from "../../schemas/clickhouse/materialize";
import { columnsQuery, dialectFor, storageName } from "../../schemas/clickhouse/sql";
import type { ClickHouseConfig } from "../../schemas/config";
import { mutationWaiter } from "../../schemas/clickhouse/mutations";
import { pollUntil } from "../../schemas/runtime/poll";

/**
 * What `materialize` did: the column, its type (of a column that existed, as system.columns
 * gives it, whatever --type asked), and how the stored rows were filled; or why nothing was done.
 */
export type MaterializeResult =
  { ok: true; column: string; type: string; existed: boolean; filled: string; seconds: number } | { ok: false; error: string };

/** How long the fill may take before the command gives up (the column stays, computed at read), ms. */
const FILL_WAIT_MS = 3_600_000;
const POLL_MS = 500;

/** The type of the events table's column (on a cluster, `<table>_local`'s); undefined when there is none. */
async function columnType(sql: Sql, config: ClickHouseConfig, column: string): Promise<string | undefined> {
  const columns = await sql.rows<{ name: string; type: string }>(columnsQuery(config.database, storageName(config.table, config.cluster)));
  return columns.find((c) => c.name === column)?.type;
}

/**
 * The JSON types the catalog saw for a key in every workspace, in memory bounded by the shapes
 * holding the key (keyTypesSeenQuery). Throws when the catalog cannot be read.
 */
async function catalogTypes(sql: Sql, database: string, source: PropertySource, key: string): Promise<KeyTypeSeen[]> {
  return keyTypesSeen(
    await sql.rows<{ code: string; messages: number | string; workspaces: number | string }>(keyTypesSeenQuery(database, source, key)),
  );
}

/**
 * Adds the key's column and fills it for stored rows. `type` unset: the one the catalog saw
 * (columnTypeFor). A key that cannot be a column, or whose catalog types do not decide, is an
 * error value and nothing is changed; ClickHouse failures (a catalog that cannot be read too) throw.
 */
export async function materializeKey(
  sql: Sql,
  config: ClickHouseConfig,
  source: PropertySource,
  key: string,
  type?: ColumnType,
): Promise<MaterializeResult> {
  const named = columnName(source, key);
  if (!named.ok) return named;
  const { column } = named;
  const started = Date.now();
  const dialect = dialectFor(await serverVersion(sql));
  let existing = await columnType(sql, config, column);
  const existed = existing !== undefined;
  if (existing === undefined) {
    const chosen =
      type === undefined ? columnTypeFor(source, key, await catalogTypes(sql, config.database, source, key)) : { ok: true as const, type };
    if (!chosen.ok) return chosen;
    for (const ddl of addColumnDdl(dialect, config.database, config.table, column, { source, key, type: chosen.type }, config.cluster))
      await sql.command(ddl);
    existing = chosen.type;
  }
  const filled = dialect === "current" ? await fillByMutation(sql, config, column) : await fillByRewrite(sql, config, column);
  return { ok: true, column, type: existing, existed, filled, seconds: (Date.now() - started) / 1000 };
}

async function fillByMutation(sql: Sql, config: ClickHouseConfig, column: string): Promise<string> {
  const table = storageName(config.table, config.cluster);
  await sql.command(materializeColumnDdl(config.database, config.table, column, config.cluster));
  const pending = await mutationWaiter(sql, config.database, table, config.cluster);
  const done = async () => ((await pending()).length === 0 ? true : undefined);
  if (!(await pollUntil(done, { intervalMs: POLL_MS, timeoutMs: FILL_WAIT_MS })))
    throw new Error(`${column}: the MATERIALIZE COLUMN mutation did not finish within ${FILL_WAIT_MS} ms`);
  return "MATERIALIZE COLUMN";
}

/** 18.16: rewrites every partition with a part lacking the column; a rewrite the server skipped (a merge in the way) is asked again. */
async function fillByRewrite(sql: Sql, config: ClickHouseConfig, column: string): Promise<string> {
  let rewritten = 0;
  let lacking = 0;
  const rewriteLacking = async (): Promise<string | undefined> => {
    const partitions = (
      await sql.rows<{ partition: string }>(fillPartitionsQuery(config.database, config.table, column, config.cluster))
    ).map((p) => p.partition);
    lacking = partitions.length;
    if (partitions.length === 0) return `${rewritten} partition rewrite(s)`;
    for (const partition of partitions) {
      await sql.command(optimizePartitionDdl(config.database, config.table, partition, config.cluster));
      rewritten++;
    }
    return undefined;
  };
  const done = await pollUntil(rewriteLacking, { intervalMs: POLL_MS, timeoutMs: FILL_WAIT_MS });
  if (done === undefined) throw new Error(`${column}: ${lacking} partition(s) still lack the column after ${FILL_WAIT_MS} ms`);
  return done;
}

/** Drops the key's column; false when there was none. */
export async function dematerializeKey(
  sql: Sql,
  config: ClickHouseConfig,
  source: PropertySource,
  key: string,
): Promise<{ ok: true; dropped: boolean } | { ok: false; error: string }> {
  const named = columnName(source, key);
  if (!named.ok) return named;
  if ((await columnType(sql, config, named.column)) === undefined) return { ok: true, dropped: false };
  const dialect = dialectFor(await serverVersion(sql));
  for (const ddl of dropColumnDdl(dialect, config.database, config.table, named.column, config.cluster)) await sql.command(ddl);
  return { ok: true, dropped: true };
}

/** The materialized key columns of the events table (on a cluster, of `<table>_local`). */
export function listMaterialized(
  sql: Sql,
  config: ClickHouseConfig,
): Promise<{ name: string; type: string; kind: string; expression: string }[]> {
  return sql.rows(materializedColumnsQuery(config.database, storageName(config.table, config.cluster)));
}
