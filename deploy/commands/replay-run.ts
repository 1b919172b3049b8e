/**
 * A destination's replay of a time range started through the admin API (POST
 * .../destinations/{id}/replays): the run of `cli destinations replay` (replay-range.ts
 * replayRange) carried out in the background of the ingest that took it, its state and progress
 * kept on the admin topic under `replay:<replayId>` (schemas/admin/records.ts ReplayRecord), so
 * that every ingest answers its status and one resumes it, from its last published position, when
 * the process that ran it stopped. Here: the checks of a request, creating one, reading them back,
 * running one, and the runner.
 */
import { randomBytes } from "node:crypto";
import type { ClickHouseClient } from "@clickhouse/client";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import typia, { tags } from "typia";
import type { AdminBook } from "../../schemas/admin/book";
import type { RangeReplayCounts, ReplayRecord } from "../../schemas/admin/records";
import { done, invalid, refuse, type OpResult } from "../../schemas/admin/result";
import { clientSql, countOf, serverVersion } from "../../schemas/clickhouse/client";
import { parsePosition, positionText, replayCountQuery, type ReplayPosition } from "../../schemas/clickhouse/replay";
import { dialectFor } from "../../schemas/clickhouse/sql";
import { followSuppressions } from "../../schemas/privacy/follower";
import { PrivacyList } from "../../schemas/privacy/list";
import { BackgroundRunner, RecordProgress, staleRecords } from "./background";
import { insertFailures, openDestination, REPLAY_RATE, type DeliveriesSettings } from "./deliveries";
import { replayRange } from "./replay-range";

/** What creating and running replays needs. */
export interface ReplaysContext {
  kafka: Kafka;
  /** The destinations' settings (their view, how to post, where the events are). */
  settings: DeliveriesSettings;
  client: ClickHouseClient;
  log: Logger;
  now: () => Date;
  /** Writes records to the admin topic (publishAdmin to KAFKA_ADMIN_TOPIC). */
  publish: (records: ReplayRecord[]) => Promise<void>;
  /** How often a running replay publishes its progress at most, and its heartbeat, ms (defaults: 2,000 and 60,000). */
  progressEveryMs?: number;
  heartbeatMs?: number;
}

/** POST .../replays: the range, and how to pace it (replay-range.ts: the same bounds as `cli destinations replay`). */
export interface ReplayBody {
  /** ISO 8601 times: events received in [from, to). */
  from: string & tags.Format<"date-time">;
  to: string & tags.Format<"date-time">;
  /** Go on after this position (a replay's `position`), rather than from the start of the range. */
  after?: string & tags.MaxLength<2200>;
  /** Requests a second, at most (default REPLAY_RATE). */
  rate?: number & tags.ExclusiveMinimum<0> & tags.Maximum<1000>;
  /** How long one request may be retried before the replay fails, seconds (default 300). */
  maxWaitSeconds?: number & tags.Minimum<0> & tags.Maximum<86400>;
}

const validateBody = typia.createValidate<ReplayBody>();

/** Replays run at once by one ingest, at most: each is paced by its rate and waits on a receiver. */
export const REPLAYS_AT_ONCE = 2;
/** How long a RUNNING or INITIALIZED replay goes unchanged before another ingest resumes it, ms (a heartbeat a minute). */
export const REPLAY_STALE_MS = 5 * 60_000;

/** A new replayId: `rpl_` + 16 hex (64 random bits). */
export function newReplayId(): string {
  return `rpl_${randomBytes(8).toString("hex")}`;
}

const active = (r: ReplayRecord) => r.status === "INITIALIZED" || r.status === "RUNNING";

/**
 * The request `body` for `destinationId` of `workspaceId` -> a new replay (INITIALIZED, counts 0)
 * made by `actor` at `now`. 400 naming the field: a bad time, `from` not before `to`, an `after`
 * that is not a position, a rate or wait out of bounds. Pure but for the random id.
 */
export function replayOf(body: unknown, workspaceId: string, destinationId: string, actor: string, now: Date): OpResult<ReplayRecord> {
  const checked = validateBody(body);
  if (!checked.success) return invalid("replay", checked.errors);
  const { from, to, after, rate = REPLAY_RATE, maxWaitSeconds = 300 } = checked.data;
  if (Date.parse(from) >= Date.parse(to)) return refuse(400, "from must be before to", "from");
  if (after !== undefined && parsePosition(after) === undefined)
    return refuse(400, "after must be a replay's position (<ms>/<messageId>/<type>)", "after");
  const at = now.toISOString();
  return done({
    kind: "replay",
    replayId: newReplayId(),
    workspaceId,
    destinationId,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    ...(after === undefined ? {} : { after, position: after }),
    rate,
    maxWaitSeconds,
    status: "INITIALIZED",
    total: 0,
    counts: { read: 0, delivered: 0, failed: 0, skipped: 0 },
    createdAt: at,
    createdBy: actor,
    updatedAt: at,
  } as ReplayRecord);
}

/**
 * Checks the request (replayOf) and that the destination is the workspace's (404 otherwise, as
 * findDestination) with no replay of it under way (409 naming that one: two replays of one
 * destination would send each message twice), then publishes the replay, INITIALIZED (acks=all),
 * and returns it; it does not run it (ReplayRunner). Throws what Kafka throws.
 */
export async function createReplay(
  ctx: ReplaysContext,
  book: AdminBook,
  body: unknown,
  ids: { workspaceId: string; destinationId: string },
  actor: string,
): Promise<OpResult<ReplayRecord>> {
  const made = replayOf(body, ids.workspaceId, ids.destinationId, actor, ctx.now());
  if (!made.ok) return made;
  const found = await openDestination(ctx.settings, ctx.kafka, ctx.log, ids.destinationId, ids.workspaceId);
  if (!found.ok) return found;
  const under = [...book.replays.values()].find((r) => r.destinationId === ids.destinationId && active(r));
  if (under !== undefined) return refuse(409, `replay ${under.replayId} of this destination is ${under.status}; wait for it to end`);
  await ctx.publish([made.value]);
  ctx.log.info({ replayId: made.value.replayId, destinationId: ids.destinationId }, "replay created");
  return made;
}

/** The replays of `book` of `workspaceId` (of one destination when given), newest first. Pure. */
export function listReplays(book: AdminBook, workspaceId: string, destinationId?: string): ReplayRecord[] {
  return [...book.replays.values()]
    .filter((r) => r.workspaceId === workspaceId && (destinationId === undefined || r.destinationId === destinationId))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.replayId.localeCompare(b.replayId));
}

/** One replay of `book`: 404 when there is none, or it is another workspace's or destination's. Pure. */
export function replayStatus(book: AdminBook, replayId: string, workspaceId: string, destinationId: string): OpResult<ReplayRecord> {
  const r = book.replays.get(replayId);
  if (r === undefined || r.workspaceId !== workspaceId || r.destinationId !== destinationId)
    return refuse(404, `no replay ${replayId}`, "replayId");
  return done(r);
}

const plus = (a: RangeReplayCounts, b: RangeReplayCounts): RangeReplayCounts => ({
  read: a.read + b.read,
  delivered: a.delivered + b.delivered,
  failed: a.failed + b.failed,
  skipped: a.skipped + b.skipped,
});

/**
 * Carries out `record`: RUNNING (with the range's size when it starts), progress at most every
 * `progressEveryMs` and on a heartbeat, then FINISHED, or FAILED with why (the receiver kept
 * failing, the destination removed or its secret unopenable) and the position to go on from. A
 * RUNNING record (resumed) goes on from its `position` with its counts. When `signal` aborts (the
 * ingest stops) it is left RUNNING at its last position, for another ingest to resume. Resolves
 * with its last state; throws what Kafka or ClickHouse throw (the record stays as last published).
 */
export async function runReplay(ctx: ReplaysContext, record: ReplayRecord, signal?: AbortSignal): Promise<ReplayRecord> {
  const progress = new RecordProgress(record, ctx.publish, ctx.now, (r) => (r.status === "FAILED" ? r : withoutError(r)));
  const failed = (error: string, position?: ReplayPosition) =>
    progress.write({ status: "FAILED", error, ...(position ? { position: positionText(position) } : {}) });
  const opened = await openDestination(ctx.settings, ctx.kafka, ctx.log, record.destinationId, record.workspaceId);
  if (!opened.ok) return failed(opened.error);
  const sql = clientSql(ctx.client);
  const dialect = dialectFor(await serverVersion(sql));
  const where = { database: ctx.settings.database, table: ctx.settings.table };
  const range = { workspaceId: record.workspaceId, fromMs: Date.parse(record.from), toMs: Date.parse(record.to) };
  const total =
    record.status === "RUNNING" ? record.total : await countOf(sql, replayCountQuery(dialect, where.database, where.table, range));
  const base = record.counts;
  await progress.write({ status: "RUNNING", total });
  const privacy = new PrivacyList();
  const following = await followSuppressions(
    ctx.kafka,
    ctx.settings.kafka.suppressionsTopic,
    `${ctx.settings.kafka.clientId}-replay`,
    privacy,
    ctx.log,
  );
  const beat = (change: Partial<ReplayRecord>) =>
    void progress
      .write(change)
      .catch((error: unknown) => ctx.log.warn({ err: error, replayId: record.replayId }, "replay progress not published"));
  const heartbeat = setInterval(() => beat({}), ctx.heartbeatMs ?? 60_000);
  heartbeat.unref();
  let lastMs = Date.now();
  try {
    const after = record.position === undefined ? undefined : parsePosition(record.position);
    const options = {
      fromMs: range.fromMs,
      toMs: range.toMs,
      ...(after ? { after } : {}),
      rate: record.rate,
      maxWaitMs: record.maxWaitSeconds * 1000,
    };
    const end = await replayRange(opened.value.destination, opened.value.secret, options, {
      sql,
      dialect,
      where,
      privacy,
      post: ctx.settings.post,
      keep: (rows) => insertFailures(ctx.client, ctx.settings.database, rows),
      progress: (counts, position) => {
        if (Date.now() - lastMs < (ctx.progressEveryMs ?? 2_000)) return;
        lastMs = Date.now();
        beat({ counts: plus(base, counts), ...(position ? { position: positionText(position) } : {}) });
      },
      refresh: async () => {
        const now = await openDestination(ctx.settings, ctx.kafka, ctx.log, record.destinationId, record.workspaceId);
        return now.ok ? now.value : undefined;
      },
      ...(signal ? { signal } : {}),
    });
    const reached = { counts: plus(base, end.counts), ...(end.position ? { position: positionText(end.position) } : {}) };
    if (end.outcome === "finished") return await progress.write({ status: "FINISHED", ...reached });
    if (signal?.aborted) return await progress.write(reached);
    return await progress.write({ status: "FAILED", error: `stopped: ${end.reason}`, ...reached });
  } finally {
    clearInterval(heartbeat);
    await following.stop();
  }
}

function withoutError(record: ReplayRecord): ReplayRecord {
  const { error: _error, ...rest } = record;
  return rest;
}

/**
 * Runs replays in the background of the ingest (REPLAYS_AT_ONCE at a time): `enqueue` those it
 * created, `resume` those another ingest left (INITIALIZED or RUNNING, unchanged for `staleMs`),
 * `stop` on shutdown, which ends those running at their next request and leaves them RUNNING.
 * A replay resumed from its position sends again the messages after its last published position
 * that had already been sent: a destination gets each message at least once.
 */
export class ReplayRunner {
  private readonly runner: BackgroundRunner<ReplayRecord>;
  private readonly abort = new AbortController();

  constructor(
    private readonly ctx: ReplaysContext,
    private readonly staleMs = REPLAY_STALE_MS,
  ) {
    this.runner = new BackgroundRunner({
      run: (r) => runReplay(ctx, r, this.abort.signal),
      idOf: (r) => r.replayId,
      log: ctx.log,
      what: "replay",
      concurrency: REPLAYS_AT_ONCE,
    });
  }

  /** Queues `record`; false when stopped or already held here. */
  enqueue(record: ReplayRecord): boolean {
    return this.runner.enqueue(record);
  }

  /** Queues the stale INITIALIZED or RUNNING replays of `book`, oldest first; returns them. */
  resume(book: AdminBook): ReplayRecord[] {
    return staleRecords(book.replays.values(), active, this.ctx.now().getTime(), this.staleMs).filter((r) => this.enqueue(r));
  }

  /** Resolves once nothing is queued or running here. */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  /** Ends the running replays at their next request (left RUNNING) and takes no more. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.runner.stop();
  }
}
