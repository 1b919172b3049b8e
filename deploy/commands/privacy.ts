/**
 * `users delete | suppress | unsuppress` (deploy/cli.ts): a request publishes the user's entry on
 * the suppressions topic first, so every sink drops the user's records still in Kafka and every
 * ingest drops their new messages when suppressed; a deletion then removes the stored rows with
 * mutations (schemas/privacy/list.ts deletionTargets), waits until ClickHouse applied them, waits for
 * the sink to pass the offsets the topics had at the request, deletes again what a sink stored
 * before it read the entry, and writes one audit row in `privacy_requests`. Throws on Kafka or
 * ClickHouse failures (the request can be run again: every step is idempotent).
 */
import { randomUUID } from "node:crypto";
import type { Admin, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { PRIVACY_TABLE } from "../../schemas/clickhouse/tables";
import { quoteIdent } from "../../schemas/clickhouse/sql";
import { mutationWaiter } from "../../schemas/clickhouse/mutations";
import type { SetupConfig } from "../setup/config";
import { topicMaxMessageBytes } from "../../schemas/kafka/limits";
import { deletionTargets, linkedIdsQuery, PrivacyList, type DeletionTarget, type PrivacyEntry } from "../../schemas/privacy/list";
import { ENTRY_PART_BYTES, entryParts } from "../../schemas/privacy/parts";
import { followSuppressions } from "../../schemas/privacy/follower";
import { countOf, type Sql } from "../../schemas/clickhouse/client";
import { createProducer, sendWhole } from "../../schemas/kafka/producer";
import { pollUntil } from "../../schemas/runtime/poll";
import { withAdmin } from "../../schemas/kafka/client";

/** What the operator asked. `suppress` with `delete`: also suppress (Segment's SUPPRESS_WITH_DELETE). */
export interface PrivacyRequest {
  action: "delete" | "suppress" | "unsuppress";
  workspaceId: string;
  userId: string;
  suppress: boolean;
  /** Who ran it, as given on the command line (kept in the audit row). */
  requestedBy: string;
}

/** What a request did: the ids it covered and the rows removed per table. */
export interface PrivacyReport {
  requestId: string;
  ids: string[];
  removed: { table: string; rows: number }[];
  /** Whether the sink passed the offsets of the request before the second pass (else its entry drops them later). */
  sinkCaughtUp: boolean;
  seconds: number;
}

/** Timing of a request, ms. */
export interface PrivacyTiming {
  /** Longest wait for the sink to pass the request's offsets (a stopped sink drops the records when it resumes). */
  sinkWaitMs: number;
  /** Longest wait for ClickHouse to apply the mutations of one pass of a deletion. */
  mutationWaitMs: number;
}

/** Runs one request; see the module comment. */
export async function runPrivacyRequest(
  sql: Sql,
  kafka: Kafka,
  config: SetupConfig,
  request: PrivacyRequest,
  log: Logger,
  timing: PrivacyTiming = { sinkWaitMs: 60_000, mutationWaitMs: 600_000 },
): Promise<PrivacyReport> {
  const requestId = randomUUID();
  const { database, table, cluster } = config.clickhouse;
  const { workspaceId, userId } = request;
  const list = new PrivacyList();
  await (await followSuppressions(kafka, config.kafka.suppressionsTopic, `${config.kafka.clientId}-cli`, list, log)).stop();
  const existing = list.get(workspaceId, userId);
  if (request.action === "unsuppress" && existing === undefined) throw new Error(`${workspaceId}/${userId} has no suppression to lift`);
  const linked = await sql.rows<{ id: string }>(linkedIdsQuery(database, table, workspaceId, userId));
  const ids = [...new Set([userId, ...(existing?.ids ?? []), ...linked.map((r) => r.id)])];
  // The time of the request: a deletion covers what was received up to it, a suppression what comes after.
  const started = Date.now();
  const suppressed = request.action === "suppress" || (request.action === "delete" && (request.suppress || existing?.suppressed === true));
  const suppressedFrom = existing?.suppressed === true ? existing.suppressedFrom : started;
  const deletedBefore = request.action === "delete" ? started : existing?.deletedBefore;
  const entry: PrivacyEntry = {
    workspaceId,
    userId,
    ids,
    suppressed,
    ...(suppressed && suppressedFrom !== undefined ? { suppressedFrom } : {}),
    ...(deletedBefore === undefined ? {} : { deletedBefore }),
  };
  const ends = await publish(kafka, config, entry, list.keysOf(workspaceId, userId));

  const removed: PrivacyReport["removed"] = [];
  let sinkCaughtUp = true;
  let remain: RowsRemainError | undefined;
  if (request.action === "delete") {
    const targets = deletionTargets(database, table, workspaceId, userId, ids, started / 1000, cluster);
    // Rows left after a pass's rounds do not stop the request: the second pass and the audit row
    // still run, and the request fails after them (run again, it deletes what is left).
    const pass = async () => {
      try {
        return await deleteRows(sql, database, targets, timing.mutationWaitMs, cluster, suppressed);
      } catch (error) {
        if (!(error instanceof RowsRemainError)) throw error;
        remain = error;
        return error.before;
      }
    };
    const first = await pass();
    removed.push(...targets.map((target, i) => ({ table: target.table, rows: first[i]! })));
    // A sink that fetched the user's records before it read the entry may store them after the
    // mutation began: once it passed the offsets of the request, delete again what it stored.
    sinkCaughtUp = await sinkPassed(kafka, config, ends, timing.sinkWaitMs);
    remain = undefined; // what the second pass leaves is what counts
    for (const [i, rows] of (await pass()).entries()) removed[i]!.rows += rows;
  }
  await sql.command(auditInsert(database, requestId, request, started, ids, removed));
  if (remain !== undefined) throw remain;
  // A sink holding the user's records in an open batch may store them after the second pass.
  if (!sinkCaughtUp) throw new DeletionIncompleteError(timing.sinkWaitMs);
  return { requestId, ids, removed, sinkCaughtUp, seconds: (Date.now() - started) / 1000 };
}

/**
 * A deletion whose second pass ran before the sink passed the request's offsets: rows the sink
 * stores later are not deleted. Retriable: running the request again deletes them.
 */
export class DeletionIncompleteError extends Error {
  readonly retriable = true;
  constructor(waitMs: number) {
    super(
      `deletion incomplete: the sink did not pass the request's offsets within ${waitMs} ms, so it may still store the user's records it holds; the rows found so far are deleted and audited: run the request again once the sink has caught up`,
    );
    this.name = "DeletionIncompleteError";
  }
}

/**
 * Rows a deletion's statements still matched after DELETION_ROUNDS rounds (18.16 reporting its
 * mutations applied too early, or rows stored meanwhile). Retriable: the request run again deletes
 * them. `before` is what each target matched before the first round.
 */
export class RowsRemainError extends Error {
  readonly retriable = true;
  constructor(
    readonly tables: string[],
    readonly before: number[],
  ) {
    super(`rows remain in ${tables.join(", ")} after ${DELETION_ROUNDS} rounds of their deletion: run it again`);
    this.name = "RowsRemainError";
  }
}

/** How long publishing the entry may retry before the request fails (Kafka unreachable), ms. */
const PUBLISH_DEADLINE_MS = 30_000;

/** How often a wait below asks again, ms: the sink's commits, ClickHouse's mutations. */
const SINK_POLL_MS = 500;
const MUTATION_POLL_MS = 200;

/** End offsets per topic and partition. */
type Ends = Map<string, Map<number, number>>;

/**
 * Publishes the entry (acks=all) as its parts (entryParts: ids of at most half the topic's
 * max.message.bytes, ENTRY_PART_BYTES at most), each in a send of its own (a send is one record
 * batch, which that limit bounds), in order on the topic's one partition, then the records of
 * the earlier entry (`earlierKeys`) it has no part for, emptied of ids. Two requests for one user
 * must not run at once: their records would interleave. Returns the end offsets of the events and
 * rejected topics after it.
 */
async function publish(kafka: Kafka, config: SetupConfig, entry: PrivacyEntry, earlierKeys: string[]): Promise<Ends> {
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    // Half the topic's limit for the ids leaves room for the rest of the record.
    const limit = await topicMaxMessageBytes(kafka, config.kafka.suppressionsTopic, 2 * ENTRY_PART_BYTES);
    for (const part of entryParts(entry, Math.min(ENTRY_PART_BYTES, Math.floor(limit / 2)), earlierKeys)) {
      const messages = [{ key: part.key, value: JSON.stringify(part.entry) }];
      await sendWhole(producer, { acks: -1, topicMessages: [{ topic: config.kafka.suppressionsTopic, messages }] }, PUBLISH_DEADLINE_MS);
    }
  } finally {
    await producer.disconnect();
  }
  return withAdmin(kafka, async (admin) => {
    const ends: Ends = new Map();
    for (const topic of [config.kafka.topic, config.kafka.rejectedTopic])
      ends.set(topic, new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)])));
    return ends;
  });
}

/**
 * Whether the sink's groups committed at least `ends` on every partition within `waitMs`, or
 * have no running member: a sink that starts later reads the suppressions topic whole before its
 * first fetch, so it drops the user's records itself. False only while a running sink is behind
 * (it may hold the user's records in an open batch).
 */
async function sinkPassed(kafka: Kafka, config: SetupConfig, ends: Ends, waitMs: number): Promise<boolean> {
  const groups = new Map([
    [config.kafka.topic, config.groupId],
    [config.kafka.rejectedTopic, `${config.groupId}-rejected`],
  ]);
  const passed = async (admin: Admin): Promise<true | undefined> => {
    for (const [topic, partitions] of ends) {
      const [offsets] = await admin.fetchOffsets({ groupId: groups.get(topic)!, topics: [topic] });
      const committed = new Map((offsets?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
      for (const [partition, end] of partitions)
        if (end > 0 && (committed.get(partition) ?? -1) < end) {
          const { groups: described } = await admin.describeGroups([...groups.values()]);
          return described.every((g) => g.members.length === 0) ? true : undefined;
        }
    }
    return true;
  };
  return withAdmin(
    kafka,
    async (admin) => (await pollUntil(() => passed(admin), { intervalMs: SINK_POLL_MS, timeoutMs: waitMs })) ?? false,
  );
}

/**
 * Deletes the targets' rows: counts each (refused items by key, once), sends the mutations of
 * those with rows one after the other without waiting in between, then waits until ClickHouse has
 * applied them all (they run in the background: 18.16 has no lightweight delete and no
 * mutations_sync), on a cluster on every replica (schemas/clickhouse/mutations.ts). A part takes
 * every mutation queued after its version in its next rewrite, so the statements sent while one
 * rewrite runs share the next; waiting after each made a rewrite per statement on 18.16, and
 * linked ids, which any writeKey holder can plant, spread a deletion over many statements. A
 * mutation covers the parts that exist when it starts; rows stored later are the second pass's.
 * Once applied, the targets are counted again and those still holding rows sent again (at most
 * DELETION_ROUNDS rounds): 18.16 sometimes reports every mutation done while rows one of them
 * matched remain (the engines test saw 3-5 of 31 planted rows left in 2 of 5 runs, with
 * statements queued during a rewrite). Rows an `unbounded` target (users, identities: a user's new
 * events rebuild their row) still holds after the last round are an error only when
 * `recheckUnbounded` (the user is suppressed, so none of their new events is stored); otherwise
 * they are the rows the user's later events made. Returns the rows matched before, per target. Throws on
 * ClickHouse errors, when the mutations are not applied within `waitMs`, and RowsRemainError when
 * rows remain after the last round.
 */
export async function deleteRows(
  sql: Sql,
  database: string,
  targets: readonly DeletionTarget[],
  waitMs: number,
  cluster?: string,
  recheckUnbounded = true,
): Promise<number[]> {
  const before: number[] = [];
  const seen = new Set<string>();
  for (const target of targets) {
    if (target.keys === undefined) before.push(await countOf(sql, target.count));
    else {
      // Only rows no earlier target of the table matched: none is applied yet, so they would count twice.
      const keys = (await sql.rows<{ id: string }>(target.keys)).map((r) => `${target.table}\u0000${r.id}`);
      before.push(keys.filter((key) => !seen.has(key)).length);
      for (const key of keys) seen.add(key);
    }
  }
  let sent = targets.filter((_, i) => before[i]! > 0);
  for (let round = 1; sent.length > 0; round++) {
    await sendAndWait(sql, database, sent, waitMs, cluster);
    const remaining: DeletionTarget[] = [];
    for (const target of sent) if ((await countOf(sql, target.count)) > 0) remaining.push(target);
    if (round === DELETION_ROUNDS) {
      const left = remaining.filter((target) => recheckUnbounded || !target.unbounded);
      if (left.length > 0) throw new RowsRemainError([...new Set(left.map((t) => t.table))], before);
      break;
    }
    sent = remaining;
  }
  return before;
}

/** Rounds of a deletion's statements deleteRows sends before it reports rows that remain. */
const DELETION_ROUNDS = 3;

/**
 * Sends `targets`' mutations one after the other, each returning once queued (current ClickHouse
 * may refuse concurrent ALTERs of a replicated table, code 517; the background work starts
 * meanwhile), then waits until their tables have no mutation left to apply.
 */
async function sendAndWait(
  sql: Sql,
  database: string,
  targets: readonly DeletionTarget[],
  waitMs: number,
  cluster?: string,
): Promise<void> {
  for (const target of targets) await sql.command(target.mutation);
  const storages = [...new Set(targets.map((target) => target.storage))];
  const waiters = await Promise.all(storages.map((storage) => mutationWaiter(sql, database, storage, cluster)));
  let left: string[] = [];
  const applied = async () => ((left = (await Promise.all(waiters.map((pending) => pending()))).flat()).length === 0 ? true : undefined);
  if (!(await pollUntil(applied, { intervalMs: MUTATION_POLL_MS, timeoutMs: waitMs })))
    throw new Error(`the deletion of ${storages.join(", ")} was not applied within ${waitMs} ms (waiting: ${left.join(", ")})`);
}

/**
 * The audit row: who, when, what, the ids covered, rows removed per table. The row goes as data
 * after FORMAT, which max_query_size (256 KiB) does not bound, so any number of ids fits (a
 * literal array of 5,300 linked ids in the query was refused after the deletion ran). Times are
 * unix seconds in a string, read as such by 18.16 and current ClickHouse in any time zone.
 */
export function auditInsert(
  database: string,
  requestId: string,
  request: PrivacyRequest,
  started: number,
  ids: string[],
  removed: PrivacyReport["removed"],
): string {
  const seconds = (ms: number) => String(Math.floor(ms / 1000));
  const row = {
    request_id: requestId,
    workspace_id: request.workspaceId,
    user_id: request.userId,
    action: request.action === "delete" && request.suppress ? "delete+suppress" : request.action,
    requested_by: request.requestedBy,
    requested_at: seconds(started),
    finished_at: seconds(Date.now()),
    ids,
    tables: removed.map((r) => r.table),
    rows_removed: removed.map((r) => r.rows),
  };
  return `INSERT INTO ${quoteIdent(database)}.${quoteIdent(PRIVACY_TABLE)} (${Object.keys(row).join(", ")}) FORMAT JSONEachRow\n${JSON.stringify(row)}`;
}
