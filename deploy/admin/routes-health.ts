/**
 * The admin API's destination health route (issue 51): GET
 * /admin/v1/workspaces/{workspaceId}/destinations/{destinationId}/health, for the workspace (404
 * as deploy/commands/destinations.ts findDestination: another workspace's destination is one that
 * does not exist). It puts together three sources, none of which waits on a delivery:
 * - Kafka: what the destination's consumer group (`<DELIVER_GROUP_PREFIX>-<destinationId>`, the
 *   prefix from the ingest's environment, as the delivery process reads it) has not yet passed of
 *   the events topic, every workspace's messages included, since the group reads them all. A group
 *   with no commit yet counts from where the delivery process will start it: the offsets of the
 *   destination's creation less START_MARGIN_MS (sink/deliver/loop.ts). Bounded by
 *   OFFSETS_TIMEOUT_MS, one admin client per request.
 * - the delivery processes' reports on the admin topic (schemas/admin/records.ts
 *   DestinationHealthRecord, kept by the ingest's AdminBook): those of the last REPORT_FRESH_MS,
 *   summed (counts) or the largest (oldest waiting message); a killed process's older ones ignored.
 * - ClickHouse: the destination's kept failures not yet delivered by a replay (`delivery_failures`
 *   FINAL, its workspace's).
 * Throws when Kafka or ClickHouse does not answer (the API answers 503).
 */
import type { Kafka } from "kafkajs";
import type { tags } from "typia";
import type { DestinationHealthRecord } from "../../schemas/admin/records";
import { done, type OpResult } from "../../schemas/admin/result";
import { clientSql, countOf } from "../../schemas/clickhouse/client";
import { DELIVERY_FAILURES_TABLE } from "../../schemas/clickhouse/deliveries";
import { quoteIdent, quoteString } from "../../schemas/clickhouse/sql";
import { withAdmin } from "../../schemas/kafka/client";
import { withDeadline } from "../../schemas/runtime/deadline";
import { groupIdOf, START_MARGIN_MS } from "../../sink/deliver/loop";
import { findDestination } from "../commands/destinations";
import type { AdminContext, AdminRoute } from "./routes";

/** GET .../destinations/{destinationId}/health: how a destination's delivery is doing now. */
export interface DestinationHealth {
  destinationId: string;
  /**
   * Messages of the events topic (every workspace's) its consumer group has not yet passed: the sum over partitions of the high
   * watermark less the committed offset; a group without commits from where it will start (the destination's creation less 10 s).
   */
  waiting: number & tags.Type<"uint64">;
  /** Age of the oldest message still being tried, seconds: the largest of the fresh reports; null when no delivery process reports. */
  oldestWaitingSeconds: (number & tags.Minimum<0>) | null;
  /** Messages of the last 15 minutes, summed over the fresh reports: delivered, retried (an attempt to be made again), failed (kept). */
  delivered: number & tags.Type<"uint64">;
  retried: number & tags.Type<"uint64">;
  failed: number & tags.Type<"uint64">;
  /** Its kept failures not yet delivered again (`delivery_failures`). */
  failuresKept: number & tags.Type<"uint64">;
  /** The newest fresh report's time; null when no delivery process reported within 2 minutes. */
  reportedAt: (string & tags.Format<"date-time">) | null;
}

/** How old a report may be and still count, ms: four report intervals (sink/deliver/health.ts HEALTH_EVERY_MS). */
export const REPORT_FRESH_MS = 120_000;
/** How long the Kafka offsets may take, ms. */
export const OFFSETS_TIMEOUT_MS = 10_000;

/** A partition's offset, as kafkajs gives it (text; "-1": none). */
export interface PartitionOffset {
  partition: number;
  offset: string;
}

/**
 * Messages not yet passed: per partition of `ends` (the high watermarks, with their low ones), the
 * high less the committed offset (at least the low: what retention removed is not waiting), or,
 * without a commit, less the offset of `starts` (where a group without commits will start); 0 for
 * a partition with neither. Pure.
 */
export function waitingOf(
  ends: readonly { partition: number; high: string; low: string }[],
  committed: readonly PartitionOffset[],
  starts: readonly PartitionOffset[] = [],
): number {
  let waiting = 0n;
  for (const { partition, high, low } of ends) {
    const commit = committed.find((p) => p.partition === partition)?.offset ?? "-1";
    const from = commit !== "-1" ? commit : starts.find((p) => p.partition === partition)?.offset;
    if (from === undefined || BigInt(from) < 0n) continue;
    const position = BigInt(from) > BigInt(low) ? BigInt(from) : BigInt(low);
    if (BigInt(high) > position) waiting += BigInt(high) - position;
  }
  return Number(waiting);
}

/** The reports of `reports` that count at `nowMs`: those of the last REPORT_FRESH_MS (one from a clock ahead counts too). Pure. */
export function freshReports(reports: readonly DestinationHealthRecord[], nowMs: number): DestinationHealthRecord[] {
  return reports.filter((r) => nowMs - Date.parse(r.at) <= REPORT_FRESH_MS);
}

/** The answer of `destinationId` from its fresh reports and the two counts. Pure. */
export function healthOf(
  destinationId: string,
  fresh: readonly DestinationHealthRecord[],
  counts: { waiting: number; failuresKept: number },
): DestinationHealth {
  const sum = (pick: (r: DestinationHealthRecord) => number) => fresh.reduce((total, r) => total + pick(r), 0);
  const newest = fresh.reduce<DestinationHealthRecord | undefined>(
    (a, r) => (a === undefined || Date.parse(r.at) > Date.parse(a.at) ? r : a),
    undefined,
  );
  return {
    destinationId,
    waiting: counts.waiting,
    oldestWaitingSeconds: fresh.length === 0 ? null : Math.max(...fresh.map((r) => r.oldestWaitingSeconds)),
    delivered: sum((r) => r.delivered),
    retried: sum((r) => r.retried),
    failed: sum((r) => r.failed),
    failuresKept: counts.failuresKept,
    reportedAt: newest === undefined ? null : new Date(Date.parse(newest.at)).toISOString(),
  };
}

/**
 * Messages of `topic` the group `groupId` has not passed (waitingOf); a group without commits from
 * `createdAt` less START_MARGIN_MS. Throws what Kafka throws, or when it takes over `timeoutMs`.
 */
export async function waitingMessages(
  kafka: Kafka,
  topic: string,
  groupId: string,
  createdAt: string,
  timeoutMs = OFFSETS_TIMEOUT_MS,
): Promise<number> {
  const read = withAdmin(kafka, async (admin) => {
    const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
    const partitions = committed?.partitions ?? [];
    const started = partitions.some((p) => p.offset !== "-1");
    const starts = started ? [] : await admin.fetchTopicOffsetsByTimestamp(topic, Date.parse(createdAt) - START_MARGIN_MS);
    return waitingOf(ends, partitions, starts);
  });
  return withDeadline(read, timeoutMs, () => new Error(`the offsets of ${groupId} not read within ${timeoutMs} ms`));
}

/** The query counting a destination's kept failures not delivered again. */
export function failuresKeptQuery(database: string, destinationId: string, workspaceId: string): string {
  return `SELECT count() AS n FROM ${quoteIdent(database)}.${quoteIdent(DELIVERY_FAILURES_TABLE)} FINAL
WHERE destination_id = ${quoteString(destinationId)} AND workspace_id = ${quoteString(workspaceId)} AND resolved = 0`;
}

/** The health of the path's destination (see the module comment). */
async function destinationHealth(
  c: AdminContext,
  workspaceId: string,
  destinationId: string,
  now: Date,
): Promise<OpResult<DestinationHealth>> {
  const settings = c.workspace.destinations;
  const found = await findDestination(settings, c.kafka, c.log, destinationId, workspaceId);
  if (!found.ok) return found;
  const groupId = groupIdOf(settings.env.DELIVER_GROUP_PREFIX ?? "events-deliver", destinationId);
  const [waiting, failuresKept] = await Promise.all([
    waitingMessages(c.kafka, settings.kafka.topic, groupId, found.value.createdAt),
    countOf(clientSql(c.clickhouse), failuresKeptQuery(c.database, destinationId, workspaceId)),
  ]);
  const fresh = freshReports(c.book.healthReports(destinationId), now.getTime());
  return done(
    healthOf(
      destinationId,
      fresh.filter((r) => r.workspaceId === workspaceId),
      { waiting, failuresKept },
    ),
  );
}

/** The health routes. */
export const HEALTH_ROUTES: readonly AdminRoute[] = [
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/destinations/{destinationId}/health",
    operationId: "destinations.health",
    summary: "A destination's health: messages waiting, the oldest being tried, the last 15 minutes' outcomes, failures kept",
    scope: "workspace",
    answer: "DestinationHealth",
    status: 200,
    handle: (c, { params, now }) => destinationHealth(c, params.workspaceId!, params.destinationId!, now),
  },
];
