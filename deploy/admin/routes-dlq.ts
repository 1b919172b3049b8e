/**
 * The admin API's operator routes of the dead letters (what ClickHouse refused: the sink's DLQ
 * topic) and a destination's kept failures: how many and how old, and sending them again. The
 * DLQ's are those of `dlq replay` (deploy/commands/replay.ts) and the sink's
 * `sink_dlq_oldest_seconds` (sink/monitors/dlq-progress.ts): the letters past the replay group's
 * commits. The kept failures are those `destinations replay-failures` sends again.
 */
import type { KafkaConfig } from "../../schemas/config";
import { done, type OpResult } from "../../schemas/admin/result";
import { withAdmin } from "../../schemas/kafka/client";
import { clientSql } from "../../schemas/clickhouse/client";
import { pendingFailuresQuery, type DeliveryFailureRow } from "../../schemas/clickhouse/deliveries";
import { oldestDeadLetterTime, readPendingRanges, replayGroupId } from "../../sink/monitors/dlq-progress";
import { replayDeadLetters } from "../commands/replay";
import { findDestination } from "../commands/destinations";
import type { AdminContext, AdminRoute } from "./routes";

/** What the DLQ routes read: the topics, and the sink's consumer group (its replay group follows from it). */
export interface DlqContext {
  kafka: KafkaConfig;
  sinkGroupId: string;
}

/** GET /admin/v1/dlq: letters not yet replayed, and the age of the oldest, s (null when none). */
export interface DlqState {
  letters: number;
  oldestSeconds: number | null;
}

/** The DLQ's state now. Throws when Kafka does not answer. */
export async function dlqState(c: AdminContext, nowMs: number): Promise<DlqState> {
  const groupId = replayGroupId(c.dlq.sinkGroupId);
  return withAdmin(c.kafka, async (admin) => {
    const ranges = await readPendingRanges(admin, c.dlq.kafka.dlqTopic, groupId);
    let letters = 0n;
    for (const { start, end } of ranges.values()) letters += end - start;
    const oldest = letters === 0n ? undefined : await oldestDeadLetterTime(admin, c.dlq.kafka.dlqTopic, groupId)(nowMs);
    return { letters: Number(letters), oldestSeconds: oldest === undefined ? null : Math.max(0, Math.round((nowMs - oldest) / 1000)) };
  });
}

/** POST /admin/v1/dlq/replay: the letters sent back to their topic. */
export interface DlqReplayed {
  replayed: number;
}

/** A kept failure as the API lists it: its row without the message (sent again by replay-failures, not shown). */
export type KeptFailure = Omit<DeliveryFailureRow, "message">;

/** GET .../destinations/{destinationId}/failures. */
export interface FailureList {
  failures: KeptFailure[];
}

/** Rows of a destination's kept failures a page shows at most. */
const FAILURES_MAX = 200;

async function keptFailures(c: AdminContext, destinationId: string, workspaceId: string, limitText?: string): Promise<OpResult<unknown>> {
  const found = await findDestination(c.workspace.destinations, c.kafka, c.log, destinationId, workspaceId);
  if (!found.ok) return found;
  const limit = Math.min(FAILURES_MAX, Math.max(1, Number.parseInt(limitText ?? "50", 10) || 50));
  const rows = await clientSql(c.clickhouse).rows<DeliveryFailureRow>(pendingFailuresQuery(c.database, destinationId, workspaceId, limit));
  return done({
    failures: rows.map(({ message: _message, ...row }) => ({ ...row, status: Number(row.status), attempts: Number(row.attempts) })),
  });
}

/** The DLQ and kept-failure routes (see the module comment). */
export const DLQ_ROUTES: readonly AdminRoute[] = [
  {
    method: "get",
    path: "/admin/v1/dlq",
    operationId: "dlq.show",
    summary: "Dead letters not yet replayed (what ClickHouse refused), and the age of the oldest",
    scope: "operator",
    answer: "DlqState",
    status: 200,
    handle: async (c, { now }) => done(await dlqState(c, now.getTime())),
  },
  {
    method: "post",
    path: "/admin/v1/dlq/replay",
    operationId: "dlq.replay",
    summary: "Send the dead letters there are now back to their topic (after fixing what refused them)",
    scope: "operator",
    answer: "DlqReplayed",
    status: 200,
    handle: async (c) => done({ replayed: await replayDeadLetters(c.kafka, c.dlq.kafka, replayGroupId(c.dlq.sinkGroupId)) }),
  },
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/destinations/{destinationId}/failures",
    operationId: "destinations.failures",
    summary: "A destination's kept failures not yet delivered (status, reason, answer, attempts, times), oldest id first",
    scope: "workspace",
    answer: "FailureList",
    status: 200,
    query: ["limit"],
    handle: (c, { params, query }) => keptFailures(c, params.destinationId!, params.workspaceId!, query.limit),
  },
];
