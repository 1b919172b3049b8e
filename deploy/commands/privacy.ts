/**
 * `users delete | suppress | unsuppress` (deploy/cli.ts): a request publishes the user's entry on
 * the suppressions topic first, so every sink drops the user's records still in Kafka and every
 * ingest drops their new messages when suppressed; a deletion then removes the stored rows with
 * mutations (schemas/privacy/deletion.ts deletionTargets), waits until ClickHouse applied them, waits for
 * the sink to pass the offsets the topics had at the request, deletes again what a sink stored
 * before it read the entry, and writes one audit row in `privacy_requests`. Throws on Kafka or
 * ClickHouse failures (the request can be run again: every step is idempotent).
 */
import { randomUUID } from "node:crypto";
import type { Admin, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { PRIVACY_TABLE } from "../../schemas/clickhouse/tables";
import { quoteIdent } from "../../schemas/clickhouse/sql";
import type { SetupConfig } from "../setup/config";
import { topicMaxMessageBytes } from "../../schemas/kafka/limits";
import { deletionTargets, linkedIdsQuery } from "../../schemas/privacy/deletion";
import { PrivacyList, type PrivacyEntry } from "../../schemas/privacy/list";
import { ENTRY_PART_BYTES, entryParts } from "../../schemas/privacy/parts";
import { followSuppressions } from "../../schemas/privacy/follower";
import type { Sql } from "../../schemas/clickhouse/client";
import { createProducer, sendWhole } from "../../schemas/kafka/producer";
import { pollUntil } from "../../schemas/runtime/poll";
import { withAdmin } from "../../schemas/kafka/client";
import { deleteRows, RowsRemainError } from "./deletion";

export { deleteRows, RowsRemainError } from "./deletion";

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

/** How long publishing the entry may retry before the request fails (Kafka unreachable), ms. */
const PUBLISH_DEADLINE_MS = 30_000;

/** How often the wait for the sink asks again, ms. */
const SINK_POLL_MS = 500;

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
