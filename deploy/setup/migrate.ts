/**
 * Applies the ClickHouse model (schemas/clickhouse/), idempotently, so running it at every
 * start is safe: tables and columns are `IF NOT EXISTS`, our views are replaced, a backfill is
 * recorded in `schema_migrations` when it finished and run again after a crash. An events table
 * of the unpartitioned layout (releases before the time-ordered one) is moved into the new
 * layout while sinks may still be writing to it (`moveToTimeOrdered`). Throws if ClickHouse is
 * unreachable or refuses a statement, and throws before any DDL when an object bearing one of
 * our names is not ours (deploy/setup/ownership.ts): it then changes nothing. With CLICKHOUSE_CLUSTER
 * every statement runs ON CLUSTER (ClickHouse waits for each server up to its
 * distributed_ddl_task_timeout, 180 s by default) and makes the Replicated and Distributed tables
 * of schemas/clickhouse/; a cluster starts with the current layout (nothing to move).
 */
import { deliveryFailuresDdl } from "../../schemas/clickhouse/deliveries";
import { auditTableDdl } from "../../schemas/clickhouse/audit";
import { type Dialect, dialectFor, storageName, quoteIdent, quoteString, columnsQuery, onCluster } from "../../schemas/clickhouse/sql";
import { type ClickHouseConfig } from "../../schemas/config";
import {
  tableNameConflict,
  migrationsTableDdl,
  rejectedRetentionDdl,
  rejectedTableDdl,
  aggregateRetentionDdl,
  REJECTED_TABLE,
  privacyTableDdl,
  MIGRATIONS_TABLE,
} from "../../schemas/clickhouse/tables";
import { clusterObjectNames, classifyExisting, type TableRow, existingObjectsQuery, conflictMessage, bare } from "./ownership";
import {
  tableDdl,
  retentionDdl,
  EVENTS_SORTING_KEY,
  UNPARTITIONED_SORTING_KEY,
  eventsTableDdl,
  eventMonthsQuery,
  inEventMonths,
  copyEventsSql,
  addColumnsDdl,
  retypeColumnsDdl,
} from "../../schemas/clickhouse/events";
import { forcedMergeResetDdl } from "../../schemas/clickhouse/partitions";
import { viewsDdl, USERS_TABLE, feeds, type Feed } from "../../schemas/clickhouse/analyst";
import { catalogFeed, catalogViewsDdl } from "../../schemas/clickhouse/catalog";
import { Sql, serverPartitionsPerInsert, serverVersion } from "../../schemas/clickhouse/client";

/** The server's version and the DDL dialect chosen for it. */
export interface MigrationResult {
  version: string;
  dialect: Dialect;
  /** Set when this run moved rows from the unpartitioned layout: how many, and where the old table is kept. */
  moved?: { rows: number; keptAs: string };
}

/** The setup step recorded once an unpartitioned table's rows are all in the time-ordered one. */
const LAYOUT_STEP = "events: time-ordered layout";

/**
 * Creates or migrates the database, the events table, `rejected_messages`, the per-type views,
 * `users`, `identities` and `catalog_shapes` with their materialized views (backfilled from events
 * once; a view whose definition changed since, by its feed's `revision` step, replaced), and
 * applies RETENTION_DAYS as TTLs (events, refused items, users, identities, catalog shapes) on
 * current ClickHouse, where it also turns off the forced merge of closed months that earlier
 * releases set (forcedMergeResetDdl); on 18.16 the sink applies it (sink/upkeep/retention.ts).
 * Checks every reserved name first and refuses, naming all conflicts, so a user's own `users`
 * table is never dropped.
 */
export async function migrate(sql: Sql, config: ClickHouseConfig): Promise<MigrationResult> {
  const { database, table } = config;
  const reserved = tableNameConflict(table, config.cluster);
  if (reserved) throw new Error(reserved);
  const version = await serverVersion(sql);
  const dialect = dialectFor(version);
  const { cluster } = config;
  const names = cluster === undefined ? undefined : clusterObjectNames(table, cluster);
  const owned = classifyExisting(await sql.rows<TableRow>(existingObjectsQuery(database, names)), database, table, cluster);
  if (owned.conflicts.length > 0) throw new Error(conflictMessage(owned.conflicts));
  const [createDatabase, ...createEvents] = tableDdl(dialect, database, table, config.retentionDays, cluster);
  await sql.command(createDatabase!);
  await sql.command(migrationsTableDdl(database, cluster));
  const moved = cluster === undefined ? await moveToTimeOrdered(sql, dialect, database, table, config.retentionDays) : undefined;
  for (const query of createEvents) await sql.command(query);
  await addMissingColumns(sql, dialect, database, table, cluster, true);
  const [events] = await tablesNamed(sql, database, [storageName(table, cluster)]);
  for (const query of retentionDdl(dialect, database, table, events?.create_table_query ?? "", config.retentionDays, cluster))
    await sql.command(query);
  for (const query of forcedMergeResetDdl(dialect, database, table, events?.create_table_query ?? "", cluster)) await sql.command(query);
  for (const query of rejectedTableDdl(dialect, database, cluster, config.retentionDays)) await sql.command(query);
  const [rejected] = await tablesNamed(sql, database, [storageName(REJECTED_TABLE, cluster)]);
  for (const query of rejectedRetentionDdl(dialect, database, rejected?.create_table_query ?? "", config.retentionDays, cluster))
    await sql.command(query);
  for (const query of privacyTableDdl(database, cluster)) await sql.command(query);
  for (const query of deliveryFailuresDdl(dialect, database, cluster)) await sql.command(query);
  for (const query of auditTableDdl(dialect, database, cluster)) await sql.command(query);
  for (const query of viewsDdl(dialect, database, table, owned.ours, cluster)) await sql.command(query);
  if (owned.usersIsView) await sql.command(`DROP TABLE ${quoteIdent(database)}.${quoteIdent(USERS_TABLE)}`);
  const { retentionDays } = config;
  for (const feed of [
    ...feeds(dialect, database, table, cluster, retentionDays),
    catalogFeed(dialect, database, table, cluster, retentionDays),
  ]) {
    for (const query of feed.tableDdl) await sql.command(query);
    const [target] = await tablesNamed(sql, database, [storageName(feed.table, cluster)]);
    for (const query of aggregateRetentionDdl(
      dialect,
      database,
      feed.table,
      feed.expiresBy,
      target?.create_table_query ?? "",
      retentionDays,
      cluster,
    ))
      await sql.command(query);
    // The view first, then the backfill: rows inserted meanwhile are counted by both, which the
    // aggregates (argMax, min, max, uniq) absorb; a crash before the record runs it again.
    const [view] = await tablesNamed(sql, database, [feed.view]);
    // An outdated view (its mark missing, or its revision not recorded) is replaced through a
    // stand-in (replaceFeedView), so no insert meanwhile misses its table.
    const outdated = view !== undefined && feed.viewMark !== undefined && !view.create_table_query.includes(feed.viewMark);
    if (view === undefined) {
      await sql.command(feed.viewDdl);
      if (feed.revision !== undefined) await recordStep(sql, database, feed.revision);
    } else if (outdated || (feed.revision !== undefined && !(await stepDone(sql, database, feed.revision)))) {
      await replaceFeedView(sql, database, feed, cluster);
      if (feed.revision !== undefined) await recordStep(sql, database, feed.revision);
    }
    const step = `${feed.table}: backfill from ${table}`;
    if (!(await stepDone(sql, database, step))) {
      await sql.command(feed.backfill);
      await recordStep(sql, database, step);
    }
  }
  for (const query of catalogViewsDdl(dialect, database, owned.ours, cluster)) await sql.command(query);
  return { version, dialect, ...(moved ? { moved } : {}) };
}

/** The materialized view that stands in for a feed's view while replaceFeedView makes it again. */
const standIn = (view: string) => `${view}__next`;

/**
 * Gives an existing feed view its current definition without a moment in which inserted events
 * feed nothing: a stand-in view of the new definition first, then the old view dropped and made
 * again, then the stand-in dropped (18.16 cannot rename a materialized view). While two views run,
 * a block is counted twice, which the idempotent aggregates (argMax, min, max, uniq) absorb. A
 * stand-in left by a crashed run (a materialized view by that name) is dropped first; the view is
 * ours (ownership.ts checked it before any DDL). Throws on ClickHouse errors.
 */
async function replaceFeedView(sql: Sql, database: string, feed: Feed, cluster?: string): Promise<void> {
  const named = (view: string) => `${quoteIdent(database)}.${quoteIdent(view)}`;
  const create = `CREATE MATERIALIZED VIEW ${named(feed.view)}`;
  if (!feed.viewDdl.startsWith(create)) throw new Error(`${feed.view}: unexpected view statement`);
  const next = standIn(feed.view);
  const drop = (view: string) => sql.command(`DROP TABLE IF EXISTS ${named(view)}${onCluster(cluster)}`);
  const [leftover] = await tablesNamed(sql, database, [next]);
  if (leftover !== undefined) {
    if (leftover.engine !== "MaterializedView")
      throw new Error(`${database}.${next} (${leftover.engine}) is in the way; ClickHouse left unchanged`);
    await drop(next);
  }
  await sql.command(`CREATE MATERIALIZED VIEW ${named(next)}${feed.viewDdl.slice(create.length)}`);
  await drop(feed.view);
  await sql.command(feed.viewDdl);
  await drop(next);
}

/**
 * Moves an unpartitioned events table into the time-ordered layout, losing and doubling no row
 * (under FINAL) while sinks keep inserting into `table`:
 * 1. create `<table>__copy` (new layout), stop merges on `table`, note its active parts P0;
 * 2. copy the rows of P0 (computing event_date); 3. `RENAME table -> <table>__old, <table>__copy
 * -> table` in one statement, after which sinks insert into the new table; 4. copy the rows of
 * `<table>__old`'s parts not in P0 (inserted during the copy); 5. record the step. The old table
 * is kept as `<table>__old` for the operator to drop.
 * Resuming: before 3, the copy is dropped and made again; after 3 (P0 unknown) step 4 copies all
 * of `<table>__old` again, which ReplacingMergeTree collapses (same sorting key and partition).
 * Returns undefined when there was nothing to move.
 */
async function moveToTimeOrdered(
  sql: Sql,
  dialect: Dialect,
  database: string,
  table: string,
  retentionDays: number | undefined,
): Promise<MigrationResult["moved"]> {
  const copy = `${table}__copy`;
  const old = `${table}__old`;
  const found = new Map((await tablesNamed(sql, database, [table, copy, old])).map((r) => [r.name, r]));
  const layout = (name: string) => {
    const row = found.get(name);
    if (row === undefined) return "absent";
    if (row.engine === "ReplacingMergeTree" && bare(row.sorting_key) === EVENTS_SORTING_KEY) return "time-ordered";
    if (row.engine === "ReplacingMergeTree" && bare(row.sorting_key) === UNPARTITIONED_SORTING_KEY) return "unpartitioned";
    throw new Error(
      `${database}.${name} (${row.engine}, ORDER BY ${row.sorting_key}) is not an events table setup knows; ClickHouse left unchanged`,
    );
  };
  const q = (name: string) => `${quoteIdent(database)}.${quoteIdent(name)}`;
  const [now, withCopy, withOld] = [layout(table), layout(copy), layout(old)];
  if (withCopy === "unpartitioned" || withOld === "time-ordered")
    throw new Error(`${database}.${copy} or ${old} has an unexpected layout; ClickHouse left unchanged`);
  let partsBefore: string[] | undefined;
  if (now === "unpartitioned") {
    if (withOld !== "absent")
      throw new Error(`${database}.${old} exists beside an unpartitioned ${table}; drop or rename it, then run setup again`);
    await addMissingColumns(sql, dialect, database, table);
    if (withCopy !== "absent") await sql.command(`DROP TABLE ${q(copy)}`); // a crashed run's, by its layout ours
    await sql.command(eventsTableDdl(dialect, database, copy, retentionDays));
    // Without merges the parts noted stay the parts copied, so the difference is only new inserts;
    // a user without the SYSTEM grant copies merged parts twice instead, which FINAL collapses.
    await sql.command(`SYSTEM STOP MERGES ${q(table)}`).catch(() => undefined);
    partsBefore = await activeParts(sql, database, table);
    if (partsBefore.length > 0) await copyEvents(sql, database, table, copy, `_part IN (${partsBefore.map(quoteString).join(", ")})`);
    await sql.command(`RENAME TABLE ${q(table)} TO ${q(old)}, ${q(copy)} TO ${q(table)}`);
  } else if (now === "absent" && withOld === "unpartitioned") {
    // a crash between the two renames (or after them, with the new table dropped by hand)
    if (withCopy === "time-ordered") await sql.command(`RENAME TABLE ${q(copy)} TO ${q(table)}`);
    else await sql.command(eventsTableDdl(dialect, database, table, retentionDays));
  } else if (now === "absent" || withOld === "absent" || (await stepDone(sql, database, LAYOUT_STEP))) {
    return undefined;
  }
  // `table` is time-ordered and `old` holds the unpartitioned rows: copy what the first copy missed.
  const missed = partsBefore === undefined ? undefined : `_part NOT IN (${["''", ...partsBefore.map(quoteString)].join(", ")})`;
  await copyEvents(sql, database, old, table, missed);
  await recordStep(sql, database, LAYOUT_STEP);
  const [count] = await sql.rows<{ n: string }>(`SELECT count() AS n FROM ${q(old)}`);
  return { rows: Number(count?.n ?? 0), keptAs: `${database}.${old}` };
}

/**
 * Copies the rows of `from` matching `where` into `to` (copyEventsSql), at most as many
 * partitions (months) per INSERT as the server allows (partitionsPerInsert): current ClickHouse
 * refuses an insert block over `max_partitions_per_insert_block`, and a table may hold rows of
 * any month a client sent. Throws on ClickHouse errors.
 */
export async function copyEvents(sql: Sql, database: string, from: string, to: string, where?: string): Promise<void> {
  const limit = await serverPartitionsPerInsert(sql);
  const months = (await sql.rows<{ month: number | string }>(eventMonthsQuery(database, from, where))).map((r) => Number(r.month));
  for (let at = 0; at < months.length; at += limit) {
    const chunk = inEventMonths(months.slice(at, at + limit));
    await sql.command(copyEventsSql(database, from, to, where === undefined ? chunk : `(${where}) AND ${chunk}`));
  }
}

async function tablesNamed(sql: Sql, database: string, names: string[]): Promise<TableRow[]> {
  return sql.rows<TableRow>(existingObjectsQuery(database, names));
}

/**
 * Adds the columns of later releases that `table` lacks (18.16 has no ADD COLUMN IF NOT EXISTS)
 * and, with `retype`, gives retyped columns their new type (retypeColumnsDdl).
 */
async function addMissingColumns(
  sql: Sql,
  dialect: Dialect,
  database: string,
  table: string,
  cluster?: string,
  retype = false,
): Promise<void> {
  const columns = await sql.rows<{ name: string; type: string }>(columnsQuery(database, storageName(table, cluster)));
  const types = new Map(columns.map((c) => [c.name, c.type]));
  for (const query of addColumnsDdl(dialect, database, table, new Set(types.keys()), cluster)) await sql.command(query);
  if (retype) for (const query of retypeColumnsDdl(dialect, database, table, types, cluster)) await sql.command(query);
}

async function activeParts(sql: Sql, database: string, table: string): Promise<string[]> {
  const rows = await sql.rows<{ name: string }>(
    `SELECT name FROM system.parts WHERE database = ${quoteString(database)} AND table = ${quoteString(table)} AND active`,
  );
  return rows.map((r) => r.name);
}

async function stepDone(sql: Sql, database: string, step: string): Promise<boolean> {
  const [row] = await sql.rows<{ n: string }>(
    `SELECT count() AS n FROM ${quoteIdent(database)}.${quoteIdent(MIGRATIONS_TABLE)} WHERE step = ${quoteString(step)}`,
  );
  return Number(row?.n ?? 0) > 0;
}

async function recordStep(sql: Sql, database: string, step: string): Promise<void> {
  await sql.command(
    `INSERT INTO ${quoteIdent(database)}.${quoteIdent(MIGRATIONS_TABLE)} (step, done_at) VALUES (${quoteString(step)}, now())`,
  );
}
