/**
 * `cli destinations test <id>` and `cli destinations replay-failures <id>`: one sample message
 * posted to a destination as the delivery process posts (its headers, its signature), its answer
 * printed JSON-escaped (a receiver's bytes never act on the operator's terminal); and the
 * failures kept in `delivery_failures` for the destination and its workspace sent again, each
 * once, in messageId order, at most REPLAY_RATE requests a second. The suppressions topic is
 * followed while failures are replayed: a deleted or suppressed user's failure is not sent and its
 * row is left as it is (sink/deliver/request.ts `suppressed`, as `replay` does). A failure a replay
 * delivers is marked resolved (a newer row: one row under FINAL); one that fails again stays, with
 * its new status and attempts, for the next replay. Both are functions answering a value
 * (testDestination, replayDestinationFailures; schemas/admin/result.ts) that the admin API calls
 * too, scoped to a workspace. The command resolves with the exit code: 0 done (every failure
 * delivered or skipped), 1 some still fail or the destination is unknown, 2 its secret cannot be
 * opened.
 */
import { randomUUID } from "node:crypto";
import type { ClickHouseClient } from "@clickhouse/client";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { done, refuse, type OpResult } from "../../schemas/admin/result";
import { DELIVERY_FAILURES_TABLE, pendingFailuresQuery, type DeliveryFailureRow } from "../../schemas/clickhouse/deliveries";
import { quoteIdent } from "../../schemas/clickhouse/sql";
import { openSecret, type WebhookDestination } from "../../schemas/destinations";
import { followSuppressions } from "../../schemas/privacy/follower";
import { PrivacyList } from "../../schemas/privacy/list";
import { sleep } from "../../schemas/runtime/retry";
import { verdictOf, type Verdict } from "../../sink/deliver/answer";
import type { DeliveryMessage } from "../../sink/deliver/message";
import { closeConnections, postJson, type PostSettings } from "../../sink/deliver/post";
import { requestOf, suppressed } from "../../sink/deliver/request";
import { findDestination, type DestinationsSettings, type Output } from "./destinations";

/** Requests a second a replay sends at most. */
export const REPLAY_RATE = 20;
/** Failures read from ClickHouse at a time. */
const PAGE = 500;

/** The sample `test` sends: a track call marked as a test. */
export function sampleMessage(workspaceId: string, now: Date): DeliveryMessage {
  const at = now.toISOString();
  return {
    messageId: `test-${randomUUID()}`,
    type: "track",
    event: "Destination Test",
    anonymousId: "destination-test",
    timestamp: at,
    sentAt: at,
    receivedAt: at,
    context: { library: { name: "segment-ingest destinations test" } },
    properties: { workspaceId },
  };
}

/** The destination's secret, opened; `ok: false` when it has one that does not open. */
function secretOf(d: WebhookDestination, settings: DestinationsSettings): { ok: true; secret?: string } | { ok: false } {
  if (d.secret === undefined) return { ok: true };
  const secret = settings.secretKey === undefined ? undefined : openSecret(d.secret, d.destinationId, settings.secretKey);
  return secret === undefined ? { ok: false } : { ok: true, secret };
}

/** A destination with its secret opened (in clear). */
export interface OpenedDestination {
  destination: WebhookDestination;
  secret?: string;
}

/**
 * The destination `destinationId` with its secret opened: 404 as findDestination (destinations.ts:
 * none, or another workspace's than `workspaceId`), 409 its secret does not open with
 * DESTINATIONS_SECRET_KEY. Throws what Kafka throws.
 */
export async function openDestination(
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  destinationId: string,
  workspaceId?: string,
): Promise<OpResult<OpenedDestination>> {
  const found = await findDestination(settings, kafka, log, destinationId, workspaceId);
  if (!found.ok) return found;
  const opened = secretOf(found.value, settings);
  if (!opened.ok) return refuse(409, `the secret of ${destinationId} does not open with DESTINATIONS_SECRET_KEY`);
  return done({ destination: found.value, ...(opened.secret === undefined ? {} : { secret: opened.secret }) });
}

/**
 * The destination `destinationId` with its secret opened, or the exit code after saying why not:
 * 1 it is not on the topic, 2 its secret does not open with DESTINATIONS_SECRET_KEY.
 */
export async function destinationFor(
  destinationId: string,
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  io: Output,
): Promise<OpenedDestination | number> {
  const opened = await openDestination(settings, kafka, log, destinationId);
  if (opened.ok) return opened.value;
  io.err(`destinations: ${opened.error}\n`);
  return opened.status === 404 ? 1 : 2;
}

/** One request of `messages` to `d`, as the delivery process posts it: its verdict, HTTP status (0 without an answer) and answer text. */
export async function send(d: WebhookDestination, messages: DeliveryMessage[], secret: string | undefined, post: PostSettings) {
  const { body, headers } = requestOf(d, messages, secret);
  const posted = await postJson(d.url, headers, body, post);
  const status = "status" in posted.result ? posted.result.status : 0;
  return { verdict: verdictOf(posted.result, Date.now()), status, answer: posted.answer };
}

/** What `test`, `replay-failures` and `replay` read of the environment: the destinations' settings, how to post, where the events are. */
export type DeliveriesSettings = DestinationsSettings & { post: PostSettings; database: string; table: string };

/** What a test request got: the outcome (delivered, retry, failed), why, the HTTP status (0 without an answer) and the start of the answer. */
export interface TestAnswer {
  outcome: Verdict["outcome"];
  reason?: string;
  status: number;
  /** The answer's first 200 characters, as the receiver sent them. */
  answer: string;
}

/**
 * Posts one sample message (sampleMessage, made `now`) to the destination as the delivery process
 * would; what it got. 404 and 409 as openDestination. Throws what Kafka throws (a receiver's
 * failure is an outcome). Leaves its connections kept alive (closeConnections closes them).
 */
export async function testDestination(
  settings: DestinationsSettings & { post: PostSettings },
  kafka: Kafka,
  log: Logger,
  destinationId: string,
  workspaceId?: string,
  now: Date = new Date(),
): Promise<OpResult<TestAnswer>> {
  const opened = await openDestination(settings, kafka, log, destinationId, workspaceId);
  if (!opened.ok) return opened;
  const { destination: d, secret } = opened.value;
  const { verdict, status, answer } = await send(d, [sampleMessage(d.workspaceId, now)], secret, settings.post);
  const reason = "reason" in verdict ? verdict.reason : undefined;
  return done({ outcome: verdict.outcome, ...(reason === undefined ? {} : { reason }), status, answer: answer.slice(0, 200) });
}

/** How a replay of kept failures went: requests sent, of which delivered (marked resolved) and kept (still failing), and failures skipped (a deleted or suppressed user's). */
export interface ReplayCounts {
  sent: number;
  delivered: number;
  kept: number;
  skipped: number;
}

/**
 * Sends the destination's pending kept failures again (see the module comment), following the
 * suppressions meanwhile; `onProgress` is told the counts after each request. 404 and 409 as
 * openDestination. Throws what Kafka or ClickHouse throw. Leaves its connections kept alive.
 */
export async function replayDestinationFailures(
  settings: DeliveriesSettings,
  kafka: Kafka,
  client: ClickHouseClient,
  log: Logger,
  destinationId: string,
  workspaceId?: string,
  onProgress?: (counts: ReplayCounts) => void,
): Promise<OpResult<ReplayCounts>> {
  const opened = await openDestination(settings, kafka, log, destinationId, workspaceId);
  if (!opened.ok) return opened;
  const privacy = new PrivacyList();
  const following = await followSuppressions(kafka, settings.kafka.suppressionsTopic, `${settings.kafka.clientId}-replay`, privacy, log);
  try {
    const { destination, secret } = opened.value;
    return done(await replayFailures(destination, secret, settings, client, privacy, onProgress));
  } finally {
    await following.stop();
  }
}

/** Runs `test <id>` or `replay-failures <id>`: the functions above, their answers printed. Throws what Kafka or ClickHouse throw. */
export async function deliveriesCommand(
  action: "test" | "replay-failures",
  destinationId: string,
  settings: DeliveriesSettings,
  kafka: Kafka,
  client: ClickHouseClient,
  log: Logger,
  io: Output,
): Promise<number> {
  try {
    if (action === "test") {
      const tested = await testDestination(settings, kafka, log, destinationId);
      if (!tested.ok) return (io.err(`destinations: ${tested.error}\n`), tested.status === 404 ? 1 : 2);
      const { outcome, reason, status, answer } = tested.value;
      io.out(testLine(reason === undefined ? { outcome } : { outcome, reason }, status, answer));
      return outcome === "delivered" ? 0 : 1;
    }
    const progress = (n: ReplayCounts) =>
      io.err(`\rreplay-failures ${destinationId}: ${n.delivered} delivered, ${n.kept} still failing, ${n.skipped} skipped`);
    const replayed = await replayDestinationFailures(settings, kafka, client, log, destinationId, undefined, progress);
    if (!replayed.ok) return (io.err(`destinations: ${replayed.error}\n`), replayed.status === 404 ? 1 : 2);
    const n = replayed.value;
    io.err("\n");
    io.out(`${n.delivered} delivered\t${n.kept} still failing\t${n.skipped} skipped (deleted or suppressed user)\n`);
    return n.kept === 0 ? 0 : 1;
  } finally {
    closeConnections();
  }
}

/** `text` as a JSON string with DEL and the C1 controls escaped too (JSON.stringify leaves them): safe on a terminal. */
function terminalSafe(text: string): string {
  return JSON.stringify(text).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * What `test` prints: the outcome, the status or why there was none, and the start of the answer
 * as a JSON string (its control characters escaped: the receiver chose those bytes).
 */
export function testLine(verdict: { outcome: string; reason?: string }, status: number, answer: string): string {
  const why = status === 0 ? (verdict.reason ?? "") : `HTTP ${status}`;
  return `${verdict.outcome}\t${terminalSafe(why)}\t${terminalSafe(answer.slice(0, 200))}\n`;
}

/** Writes failure rows (or a newer state of them) to delivery_failures. */
export async function insertFailures(client: ClickHouseClient, database: string, rows: DeliveryFailureRow[]): Promise<void> {
  await client.insert({
    table: `${quoteIdent(database)}.${quoteIdent(DELIVERY_FAILURES_TABLE)}`,
    values: rows,
    format: "JSONEachRow",
    clickhouse_settings: { date_time_input_format: "best_effort" },
  });
}

/**
 * Sends each pending failure of `d` (its workspace's) again, as the module comment says; a deleted
 * or suppressed user's (by `privacy`, read before each send) is skipped and its row left. Resolves
 * with the counts; `onProgress` is told them after each request.
 */
export async function replayFailures(
  d: WebhookDestination,
  secret: string | undefined,
  settings: { post: PostSettings; database: string },
  client: ClickHouseClient,
  privacy: PrivacyList,
  onProgress: (counts: ReplayCounts) => void = () => {},
): Promise<ReplayCounts> {
  let after = "";
  const n: ReplayCounts = { sent: 0, delivered: 0, kept: 0, skipped: 0 };
  for (;;) {
    const query = pendingFailuresQuery(settings.database, d.destinationId, d.workspaceId, PAGE, after);
    const page = await (await client.query({ query, format: "JSONEachRow" })).json<DeliveryFailureRow>();
    if (page.length === 0) break;
    for (const row of page) {
      const started = Date.now();
      const message = JSON.parse(row.message) as DeliveryMessage;
      if (suppressed(privacy, d.workspaceId, message)) {
        n.skipped++;
        continue;
      }
      const { verdict, status, answer } = await send({ ...d, batchSize: 1 }, [message], secret, settings.post);
      const now = Date.now();
      const ok = verdict.outcome === "delivered";
      const next: DeliveryFailureRow = {
        ...row,
        status: ok ? row.status : status,
        reason: ok ? row.reason : "reason" in verdict ? verdict.reason : row.reason,
        answer: ok ? row.answer : answer.slice(0, 1_024),
        attempts: row.attempts + 1,
        last_attempt_at: new Date(now).toISOString(),
        resolved: ok ? 1 : 0,
        version: Math.max(now, Number(row.version) + 1),
      };
      await insertFailures(client, settings.database, [next]);
      n.sent++;
      if (ok) n.delivered++;
      else n.kept++;
      onProgress({ ...n });
      await sleep(Math.max(0, 1000 / REPLAY_RATE - (Date.now() - started)));
    }
    after = page.at(-1)!.message_id;
  }
  return n;
}
