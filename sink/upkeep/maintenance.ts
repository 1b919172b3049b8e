/**
 * The sink's scheduled work on stored rows (retention.ts does each step): with RETENTION_DAYS,
 * the drop of expired events months at start and hourly, and the deletion of expired refused
 * items, users, identities and catalog shapes on 18.16 (each table's at most once a day) a random
 * 0 to SINK_RETENTION_JITTER_MS (10 minutes) after each of those
 * (replicas started together would otherwise each find no deletion queued, a check then a
 * command, and queue one; each rewrites that table); on both engines, the merge of a
 * closed month a minute after start and hourly. Every sink replica runs it. A step that fails is
 * logged and tried again at its next tick: maintenance never stops the sink.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import type { Logger } from "pino";
import { clientSql, createClickHouse } from "../../schemas/clickhouse/client";
import type { ClickHouseConfig } from "../../schemas/config";
import { deleteAllExpired, dropExpiredPartitions, mergeClosedMonth } from "./retention";

/** How often the sink applies RETENTION_DAYS (after once at start), ms. */
const RETENTION_INTERVAL_MS = 3_600_000;

/** How often the sink merges a closed month (retention.ts mergeClosedMonth), ms. */
const MERGE_INTERVAL_MS = 3_600_000;

/** When the first merge of a closed month runs after start, ms: sinks restarted more often than hourly still merge. */
const MERGE_FIRST_DELAY_MS = 60_000;

/** How long one month's merge may take before the sink stops waiting for it (ClickHouse goes on), ms. */
const MERGE_TIMEOUT_MS = 3_600_000;

/** A day, ms: how long a month tried is left before it is tried again. */
const DAY_MS = 86_400_000;

/** The running schedule. */
export interface Maintenance {
  /** Clears its timers: no step starts after it (one under way goes on). Call first at a stop. */
  cancel(): void;
  /** Closes its merge client (a merge being waited for is left to ClickHouse). */
  close(): Promise<void>;
}

/**
 * Starts the schedule on `client` (the sink's), `jitterMs` the longest wait before a deletion of
 * refused items (SinkConfig.retentionJitterMs), and a client of its own for merges (one server's
 * OPTIMIZE waits for the merge, up to MERGE_TIMEOUT_MS; on a replicated cluster it is only queued,
 * so the DDL queue is not held). Resolves once the start's drop of expired months ran (its failure
 * is logged, not thrown).
 */
export async function startMaintenance(
  ch: ClickHouseConfig,
  client: ClickHouseClient,
  jitterMs: number,
  log: Logger,
): Promise<Maintenance> {
  const utcDay = () => new Date().toISOString().slice(0, 10);
  const timers = new Set<NodeJS.Timeout>();
  let cancelled = false;
  const later = (ms: number, fn: () => void) => {
    if (cancelled) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };
  // Retention on 18.16, which has no TTL (on current ClickHouse the TTLs also apply): dropping a
  // partition already gone is a no-op, and a deletion of a table's expired rows (refused items,
  // users, identities, catalog shapes) is queued at most once a day per table (deleteExpired),
  // whichever replica comes first.
  const deleteRows = () =>
    deleteAllExpired(clientSql(client), ch, utcDay()).then(
      (rowsDeleted) =>
        Object.values(rowsDeleted).some((n) => n > 0) && log.info({ rowsDeleted, retentionDays: ch.retentionDays }, "retention applied"),
      (error: unknown) => log.warn({ err: error }, "retention of expired rows failed; retried in an hour"),
    );
  const retain = async () => {
    later(Math.random() * jitterMs, () => void deleteRows());
    await dropExpiredPartitions(clientSql(client), ch, utcDay()).then(
      (dropped) => dropped.length > 0 && log.info({ dropped, retentionDays: ch.retentionDays }, "retention applied"),
      (error: unknown) => log.warn({ err: error }, "retention step failed; retried in an hour"),
    );
  };
  const retention = ch.retentionDays === undefined ? undefined : setInterval(() => void retain(), RETENTION_INTERVAL_MS);
  if (retention !== undefined) await retain();

  // One closed month a tick; a tick while a merge is under way is skipped, and a month tried is
  // left for a day (an OPTIMIZE that merged nothing does not fail). A second OPTIMIZE, from another
  // replica, of a month being merged finds nothing to do.
  const maintenance = createClickHouse(ch, {
    useDatabase: true,
    requestTimeoutMs: MERGE_TIMEOUT_MS,
    settings: { replication_alter_partitions_sync: 0 },
  });
  const tried = new Map<string, number>();
  let merging = false;
  const mergeClosed = () => {
    if (merging) return;
    merging = true;
    for (const [id, at] of tried) if (Date.now() - at > DAY_MS) tried.delete(id);
    mergeClosedMonth(clientSql(maintenance), ch, utcDay().slice(0, 7).replace("-", ""), new Set(tried.keys()))
      .then(
        (id) => {
          if (id === undefined) return;
          tried.set(id, Date.now());
          log.info({ partition: id }, "closed month merge ran");
        },
        (error: unknown) => log.warn({ err: error }, "closed month merge failed; tried again in an hour"),
      )
      .finally(() => (merging = false));
  };
  const closedMonths = setInterval(mergeClosed, MERGE_INTERVAL_MS);
  later(MERGE_FIRST_DELAY_MS, mergeClosed);

  return {
    cancel: () => {
      cancelled = true;
      clearInterval(retention);
      clearInterval(closedMonths);
      for (const timer of timers) clearTimeout(timer);
    },
    close: () => maintenance.close(),
  };
}
