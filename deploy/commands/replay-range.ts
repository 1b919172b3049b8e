/**
 * `cli destinations replay <id> --from <time> --to <time> [--after <position>] [--rate N] [--max-wait-s N]`:
 * sends a destination its workspace's stored events received in [from, to) again, one copy per
 * messageId and type as `FINAL` sees it (schemas/clickhouse/replay.ts), in (receivedAt, messageId,
 * type) order,
 * chosen and batched as the delivery process chooses (its types, events, consent, integrations;
 * a deleted or suppressed user's events never sent: sink/deliver/request.ts), at most `--rate`
 * requests a second (default REPLAY_RATE). A progress bar on standard error names the position
 * reached (its messageId and type percent-encoded: a client chose them, and they must not act on
 * the operator's terminal); `--after <position>` resumes there. A request answered 408/429/5xx or not at all is
 * tried again with the delivery's backoff for up to `--max-wait-s` (default 300 s), after which
 * the replay stops and says where to resume; a 4xx (or a redirect) is kept in delivery_failures
 * as the delivery keeps it. Resolves with the exit code: 0 every message delivered or skipped by
 * the destination's rules, 1 some kept as failures or the replay stopped, 2 a usage error.
 */
import { parseArgs } from "node:util";
import type { DeliveryFailureRow } from "../../schemas/clickhouse/deliveries";
import { failureRows } from "../../schemas/clickhouse/deliveries";
import type { ClickHouseClient } from "@clickhouse/client";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { clientSql, countOf, serverVersion, type Sql } from "../../schemas/clickhouse/client";
import { dialectFor, type Dialect } from "../../schemas/clickhouse/sql";
import {
  parsePosition,
  positionText,
  replayCountQuery,
  replayPageQuery,
  replayRow,
  type ReplayPosition,
  type ReplayRange,
  type ReplayRawRow,
} from "../../schemas/clickhouse/replay";
import type { RangeReplayCounts } from "../../schemas/admin/records";
import type { WebhookDestination } from "../../schemas/destinations";
import { followSuppressions } from "../../schemas/privacy/follower";
import { PrivacyList } from "../../schemas/privacy/list";
import { sleep } from "../../schemas/runtime/retry";
import { retryDelayMs } from "../../sink/deliver/answer";
import type { DeliveryMessage } from "../../sink/deliver/message";
import { closeConnections, type PostSettings } from "../../sink/deliver/post";
import { planRequests, suppressed, type FetchedRecord } from "../../sink/deliver/request";
import { destinationFor, insertFailures, REPLAY_RATE, send, type DeliveriesSettings, type OpenedDestination } from "./deliveries";
import type { Output } from "./destinations";

/** Rows read from ClickHouse at a time. */
export const REPLAY_PAGE_ROWS = 1_000;

/** A replay's options, read from its arguments. */
export interface ReplayOptions {
  /** Received in [fromMs, toMs), ms since the epoch. */
  fromMs: number;
  toMs: number;
  after?: ReplayPosition;
  /** Requests a second, at most. */
  rate: number;
  /** How long one request may be retried before the replay stops, ms. */
  maxWaitMs: number;
}

/** The options of `replay <id> ...`'s arguments after the id, or the usage error. */
export function replayOptionsOf(args: string[]): { ok: true; options: ReplayOptions } | { ok: false; error: string } {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: {
        from: { type: "string" },
        to: { type: "string" },
        after: { type: "string" },
        rate: { type: "string" },
        "max-wait-s": { type: "string" },
      },
    }));
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
  const fromMs = Date.parse(values.from ?? "");
  const toMs = Date.parse(values.to ?? "");
  if (Number.isNaN(fromMs) || Number.isNaN(toMs)) return { ok: false, error: "--from and --to: ISO 8601 times, e.g. 2026-11-01T00:00:00Z" };
  if (fromMs >= toMs) return { ok: false, error: "--from must be before --to" };
  const after = values.after === undefined ? undefined : parsePosition(values.after);
  if (values.after !== undefined && after === undefined)
    return { ok: false, error: "--after: a position as the progress line prints it (<ms>/<messageId>/<type>)" };
  const rate = Number(values.rate ?? REPLAY_RATE);
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1000)
    return { ok: false, error: "--rate: requests a second, above 0 and at most 1000" };
  const maxWaitS = Number(values["max-wait-s"] ?? 300);
  if (!Number.isFinite(maxWaitS) || maxWaitS < 0 || maxWaitS > 86_400) return { ok: false, error: "--max-wait-s: 0 to 86400" };
  return { ok: true, options: { fromMs, toMs, ...(after ? { after } : {}), rate, maxWaitMs: maxWaitS * 1000 } };
}

/** The progress line: a bar of `total` (20 cells), the counts, and the position to resume from. */
export function progressLine(counts: RangeReplayCounts, total: number, position: ReplayPosition | undefined): string {
  const share = total === 0 ? 1 : Math.min(1, counts.read / total);
  const cells = Math.round(share * 20);
  const bar = `[${"#".repeat(cells)}${"-".repeat(20 - cells)}] ${Math.floor(share * 100)}%`;
  const at = position === undefined ? "start" : positionText(position);
  return `${bar} ${counts.read}/${total} read, ${counts.delivered} delivered, ${counts.failed} failed, ${counts.skipped} skipped; position ${at}`;
}

/** One page of `range` after `after` from the events table, as rows with their positions. Throws what ClickHouse throws. */
export async function readReplayPage(
  sql: Sql,
  dialect: Dialect,
  where: { database: string; table: string },
  range: ReplayRange,
  after: ReplayPosition | undefined,
  limit = REPLAY_PAGE_ROWS,
): Promise<ReturnType<typeof replayRow>[]> {
  const raw = await sql.rows<ReplayRawRow>(replayPageQuery(dialect, where.database, where.table, range, after, limit));
  return raw.map(replayRow);
}

/** What a replay needs beside its options. */
export interface ReplayDeps {
  sql: Sql;
  dialect: Dialect;
  where: { database: string; table: string };
  privacy: PrivacyList;
  post: PostSettings;
  /** Writes failure rows to delivery_failures. */
  keep: (rows: DeliveryFailureRow[]) => Promise<void>;
  /** Told after each request and each page: the counts so far and the position reached. */
  progress: (counts: RangeReplayCounts, position: ReplayPosition | undefined) => void;
  /** The destination and its secret as they are now, read before each page (undefined: removed); absent, those given are kept throughout. */
  refresh?: () => Promise<OpenedDestination | undefined>;
  /** Ends the run between two attempts (its process stops): it answers `stopped`. */
  signal?: AbortSignal;
}

/** How a replay ended: every message of the range settled (delivered, kept as a failure, skipped), or stopped and why. */
export type ReplayEnd =
  | { outcome: "finished"; counts: RangeReplayCounts; position?: ReplayPosition }
  | { outcome: "stopped"; reason: string; counts: RangeReplayCounts; position?: ReplayPosition };

type Settled =
  | { outcome: "delivered" | "suppressed" }
  | { outcome: "failed"; status: number; reason: string; answer: string; attempts: number; firstMs: number }
  | { outcome: "stopped"; reason: string };

/** Sends one request until it is delivered, refused, or has been retried for `maxWaitMs`; privacy is read again before each attempt. */
async function settle(
  d: WebhookDestination,
  messages: DeliveryMessage[],
  secret: string | undefined,
  deps: ReplayDeps,
  maxWaitMs: number,
): Promise<Settled> {
  const firstMs = Date.now();
  for (let attempt = 1; ; attempt++) {
    if (deps.signal?.aborted) return { outcome: "stopped", reason: "its process stopped" };
    const left = messages.filter((m) => !suppressed(deps.privacy, d.workspaceId, m));
    if (left.length === 0) return { outcome: "suppressed" };
    const { verdict, status, answer } = await send(d, left, secret, deps.post);
    if (verdict.outcome === "delivered") return verdict;
    if (verdict.outcome === "failed") return { outcome: "failed", status, reason: verdict.reason, answer, attempts: attempt, firstMs };
    const wait = retryDelayMs(attempt, verdict.retryAfterMs);
    if (Date.now() + wait - firstMs > maxWaitMs)
      return { outcome: "stopped", reason: `${verdict.reason} for ${Math.round((Date.now() - firstMs) / 1000)} s` };
    await sleep(wait, deps.signal);
  }
}

/**
 * Replays `options`' range of `d`'s workspace to `d` (see the module comment), telling
 * `deps.progress` as it goes; how it ended. Stops (answers `stopped`, with the position to resume
 * from) when a request was retried for `maxWaitMs`, the destination was removed or moved to
 * another workspace (`refresh`), or `signal` aborted. Throws what ClickHouse throws.
 */
export async function replayRange(
  d: WebhookDestination,
  opened: string | undefined,
  options: ReplayOptions,
  deps: ReplayDeps,
): Promise<ReplayEnd> {
  const range: ReplayRange = { workspaceId: d.workspaceId, fromMs: options.fromMs, toMs: options.toMs };
  const counts: RangeReplayCounts = { read: 0, delivered: 0, failed: 0, skipped: 0 };
  let position = options.after;
  let current = d;
  let secret = opened;
  const stopped = (reason: string): ReplayEnd => ({ outcome: "stopped", reason, counts, ...(position ? { position } : {}) });
  for (;;) {
    const now = deps.refresh === undefined ? { destination: current, secret } : await deps.refresh();
    if (now === undefined || now.destination.workspaceId !== range.workspaceId) return stopped("the destination was removed");
    ({ destination: current, secret } = now);
    const page = await readReplayPage(deps.sql, deps.dialect, deps.where, range, position);
    if (page.length === 0) break;
    const records: FetchedRecord[] = page.map((p, i) => ({ offset: String(i), value: Buffer.from(JSON.stringify(p.row)) }));
    const plan = planRequests(current, records, deps.privacy);
    counts.skipped += [...plan.skipped.values()].reduce((a, b) => a + b, 0);
    let done = 0;
    for (const request of plan.requests) {
      const started = Date.now();
      const settled = await settle(current, request.messages, secret, deps, options.maxWaitMs);
      if (settled.outcome === "stopped") return stopped(settled.reason);
      if (settled.outcome === "failed") {
        await deps.keep(failureRows(current, request.messages, settled, Date.now()));
        counts.failed += request.messages.length;
      } else if (settled.outcome === "suppressed") counts.skipped += request.messages.length;
      else counts.delivered += request.messages.length;
      const last = Number(request.lastOffset);
      counts.read += last + 1 - done;
      done = last + 1;
      position = page[last].position;
      deps.progress(counts, position);
      await sleep(Math.max(0, 1000 / options.rate - (Date.now() - started)), deps.signal);
    }
    counts.read += page.length - done;
    position = page.at(-1)!.position;
    deps.progress(counts, position);
    if (deps.signal?.aborted) return stopped("its process stopped");
  }
  return { outcome: "finished", counts, ...(position ? { position } : {}) };
}

/**
 * `replay <id> ...`: the destination and its secret, the privacy list (followed while the replay
 * runs, so a deletion made meanwhile counts), the server's dialect, the range's size, then
 * replayRange. Resolves with the exit code; throws what Kafka or ClickHouse throw.
 */
export async function replayCommand(
  destinationId: string,
  args: string[],
  settings: DeliveriesSettings,
  c: { kafka: Kafka; client: ClickHouseClient; log: Logger; io: Output },
): Promise<number> {
  const parsed = replayOptionsOf(args);
  if (!parsed.ok) {
    c.io.err(`destinations replay: ${parsed.error}\n`);
    return 2;
  }
  const found = await destinationFor(destinationId, settings, c.kafka, c.log, c.io);
  if (typeof found === "number") return found;
  const d = found.destination;
  const privacy = new PrivacyList();
  const following = await followSuppressions(
    c.kafka,
    settings.kafka.suppressionsTopic,
    `${settings.kafka.clientId}-replay`,
    privacy,
    c.log,
  );
  try {
    const sql = clientSql(c.client);
    const dialect = dialectFor(await serverVersion(sql));
    const where = { database: settings.database, table: settings.table };
    const range = { workspaceId: d.workspaceId, fromMs: parsed.options.fromMs, toMs: parsed.options.toMs };
    const total = await countOf(sql, replayCountQuery(dialect, where.database, where.table, range));
    const keep = (rows: DeliveryFailureRow[]) => insertFailures(c.client, settings.database, rows);
    const progress = (counts: RangeReplayCounts, position: ReplayPosition | undefined) =>
      c.io.err(`\r${progressLine(counts, total, position)}`);
    const end = await replayRange(d, found.secret, parsed.options, { sql, dialect, where, privacy, post: settings.post, keep, progress });
    const at = end.position === undefined ? "start" : positionText(end.position);
    if (end.outcome === "stopped") {
      const resume = end.position === undefined ? "(none: start again)" : at;
      c.io.err(`\nreplay ${d.destinationId}: stopped, ${end.reason}; resume with --after ${resume}\n`);
      return 1;
    }
    progress(end.counts, end.position);
    c.io.err("\n");
    c.io.out(`${end.counts.delivered} delivered\t${end.counts.failed} failed\t${end.counts.skipped} skipped\tposition ${at}\n`);
    return end.counts.failed === 0 ? 0 : 1;
  } finally {
    closeConnections();
    await following.stop();
  }
}
