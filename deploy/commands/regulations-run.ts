/**
 * Carrying out a regulation (regulations.ts): RUNNING on the admin topic, then each subject's
 * request through deploy/commands/privacy.ts runPrivacyRequest, its progress (`finished`)
 * published after each, then FINISHED, or FAILED with the reason. RegulationRunner runs them one
 * at a time in a long-lived process and picks up those a dead process left.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { AdminBook } from "../../schemas/admin/book";
import type { RegulationRecord } from "../../schemas/admin/records";
import { runPrivacyRequest, type PrivacyReport, type PrivacyRequest } from "./privacy";
import { BackgroundRunner, RecordProgress, staleRecords } from "./background";
import { privacyRequestOf, publisherOf, type RegulationsContext, type RunOptions } from "./regulations";

/** How a run paces itself unless the context says otherwise: 3 tries 5 s apart, a heartbeat a minute, `users delete`'s mutation wait. */
export const RUN_DEFAULTS: RunOptions = { tries: 3, retryPauseMs: 5_000, heartbeatMs: 60_000, mutationWaitMs: 600_000 };

/** Longest `error` text kept on a FAILED regulation, characters (the admin record's bound). */
export const MAX_ERROR_LENGTH = 2_000;

/** `text` cut to MAX_ERROR_LENGTH characters, an ellipsis marking the cut. */
export function boundedError(text: string): string {
  return text.length <= MAX_ERROR_LENGTH ? text : `${text.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

/**
 * Carries out `record` (see the module comment) and resolves with its last state, FINISHED or
 * FAILED. Each subject's request is the mapping of regulations.ts privacyRequestOf; one that
 * throws a retriable error (`retriable: true`: DeletionIncompleteError, RowsRemainError) is tried
 * again, `tries` attempts in all, `retryPauseMs` apart; any other error, or the last retriable
 * one, makes the regulation FAILED with `<userId>: <error>` (at most MAX_ERROR_LENGTH characters)
 * and the later subjects are not run. A RUNNING record (resumed after its process died) starts
 * at its `finished`-th subject: those before it were done. While a subject runs, the record is
 * published again every `heartbeatMs` with a new `updatedAt`. The last subject's progress is the
 * FINISHED record itself (`finished` = every subject). Never throws for a subject's failure;
 * throws only when the admin topic does not take a record (publishAdmin's deadline), leaving the
 * regulation INITIALIZED or RUNNING there for a later resume.
 */
export async function runRegulation(ctx: RegulationsContext, record: RegulationRecord): Promise<RegulationRecord> {
  const options = { ...RUN_DEFAULTS, ...ctx.run };
  const total = record.subjectIds.length;
  const start = record.overallStatus === "RUNNING" ? Math.min(record.finished, total) : 0;
  const progress = new RecordProgress(record, publisherOf(ctx), ctx.now, withoutStaleError);
  await progress.write({ overallStatus: "RUNNING", finished: start });
  const heartbeat = setInterval(() => {
    progress
      .write({})
      .catch((error: unknown) => ctx.log.warn({ err: error, regulateId: record.regulateId }, "regulation heartbeat failed"));
  }, options.heartbeatMs);
  heartbeat.unref();
  let failure: string | undefined;
  let finished = start;
  try {
    for (; finished < total; finished++) {
      const userId = record.subjectIds[finished]!;
      failure = await runSubject(ctx, options, privacyRequestOf(record, userId));
      if (failure !== undefined) break;
      if (finished + 1 < total) await progress.write({ finished: finished + 1 });
    }
  } finally {
    clearInterval(heartbeat);
  }
  const last =
    failure === undefined
      ? await progress.write({ overallStatus: "FINISHED", finished: total })
      : await progress.write({ overallStatus: "FAILED", finished, error: boundedError(`${record.subjectIds[finished]}: ${failure}`) });
  ctx.log.info({ regulateId: record.regulateId, overallStatus: last.overallStatus, finished: last.finished, total }, "regulation done");
  return last;
}

/** Runs one subject's request; undefined when it succeeded, else why it failed (after the retries of a retriable error). */
async function runSubject(ctx: RegulationsContext, options: RunOptions, request: PrivacyRequest): Promise<string | undefined> {
  const run = ctx.runRequest ?? ((r: PrivacyRequest) => defaultRequest(ctx, options, r));
  for (let attempt = 1; ; attempt++) {
    try {
      await run(request);
      return undefined;
    } catch (error) {
      const retriable = (error as { retriable?: unknown } | null)?.retriable === true;
      ctx.log.warn({ err: error, userId: request.userId, attempt, retriable }, "a regulation's subject failed");
      if (!retriable || attempt >= options.tries) return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      await sleep(options.retryPauseMs);
    }
  }
}

/** runPrivacyRequest with the context's settings, as `users delete` runs it (deploy/cli.ts). */
function defaultRequest(ctx: RegulationsContext, options: RunOptions, request: PrivacyRequest): Promise<PrivacyReport> {
  const timing = { sinkWaitMs: ctx.config.sinkWaitMs, mutationWaitMs: options.mutationWaitMs };
  return runPrivacyRequest(ctx.sql, ctx.kafka, ctx.config, request, ctx.log, timing);
}

/** A regulation's state as published: `error` only on FAILED. */
function withoutStaleError(record: RegulationRecord): RegulationRecord {
  if (record.overallStatus === "FAILED") return record;
  const { error: _error, ...rest } = record;
  return rest;
}

/** How long an INITIALIZED or RUNNING regulation goes unchanged before `resume` takes it as its process's death, ms. */
export const REGULATION_STALE_MS = 10 * 60_000;

/**
 * Runs regulations one at a time in the background of a long-lived process (the admin API's):
 * `enqueue` those it created, `resume` those another process left, `stop` on shutdown. One at a
 * time: two requests for one user must not run at once (deploy/commands/privacy.ts publish), and
 * a deletion's mutations are heavy on ClickHouse.
 *
 * `resume(book)` takes every INITIALIZED or RUNNING regulation whose `updatedAt` is older than
 * `staleMs` (default REGULATION_STALE_MS): a running one refreshes it every `heartbeatMs`
 * (runRegulation), so one that stopped changing lost its process. Running a regulation twice, or
 * again from a subject already done, is harmless: each subject's request is idempotent
 * (deploy/commands/privacy.ts: a second deletion finds no rows and removes none, a second
 * suppression or unsuppression publishes the same entry; each run writes one more audit row). A
 * regulation waiting in this runner's queue longer than `staleMs` looks stale to another
 * process's resume too and may then run in both, so a process that resumes should do so at start
 * and on a schedule longer than its queue. Errors of a run (Kafka unreachable) are logged; the
 * regulation stays on the topic as it was, for a later resume.
 */
export class RegulationRunner {
  private readonly runner: BackgroundRunner<RegulationRecord>;

  constructor(
    private readonly ctx: RegulationsContext,
    private readonly staleMs = REGULATION_STALE_MS,
  ) {
    this.runner = new BackgroundRunner({ run: (r) => runRegulation(ctx, r), idOf: (r) => r.regulateId, log: ctx.log, what: "regulation" });
  }

  /** Queues `record` to run after those before it; false (not queued) when stopped or already held here. */
  enqueue(record: RegulationRecord): boolean {
    return this.runner.enqueue(record);
  }

  /** Queues the stale INITIALIZED or RUNNING regulations of `book` (see the class comment), oldest first; returns them. */
  resume(book: AdminBook): RegulationRecord[] {
    const active = (r: RegulationRecord) => r.overallStatus === "INITIALIZED" || r.overallStatus === "RUNNING";
    return staleRecords(book.regulations.values(), active, this.ctx.now().getTime(), this.staleMs).filter((r) => this.enqueue(r));
  }

  /** Resolves once nothing is queued or running here. */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  /** Takes no more; waits for the running regulation to end. Those still queued stay as the topic has them, for a later resume. */
  stop(): Promise<void> {
    return this.runner.stop();
  }
}
