/**
 * Fixtures shared by the unit tests of the admin API's era: the admin topic's records (a key, a
 * token, a regulation) and a book holding them, a webhook destination, a Kafka whose producer()
 * throws, stand-in contexts for replays and regulations that reach no server, and the call an
 * admin route is handled with. Each builder takes what its tests vary; the rest is fixed here.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import type { Kafka } from "kafkajs";
import pino from "pino";
import { AdminBook } from "../../schemas/admin/book";
import {
  adminKey,
  type AdminRecord,
  type KeyRecord,
  type RegulationRecord,
  type TokenFields,
  type TokenRecord,
  type TokenScope,
} from "../../schemas/admin/records";
import type { Sql } from "../../schemas/clickhouse/client";
import { kafkaConfig } from "../../schemas/config";
import type { WebhookDestination } from "../../schemas/destinations";
import { sha256 } from "../../ingest/admission/keys";
import type { AdminCall } from "../../deploy/admin/routes";
import type { PrivacyReport, PrivacyRequest } from "../../deploy/commands/privacy";
import type { RegulationsContext } from "../../deploy/commands/regulations";
import type { ReplaysContext } from "../../deploy/commands/replay-run";
import { privacyConfig } from "../../deploy/setup/config";

/** When the admin records below are made, unless told otherwise. */
export const AT = "2026-03-01T12:00:00.000Z";
/** When a webhookDestination is made, unless told otherwise. */
export const DESTINATION_AT = "2026-11-29T12:00:00.000Z";

const silent = () => pino({ level: "silent" });

/** A key record `{kind: "key", sha256, workspaceId, fingerprint: "wk_abcdef", createdAt: AT, createdBy: "operator", ...over}`. */
export function keyRecord(digest: string, workspaceId: string, over: Partial<KeyRecord> = {}): KeyRecord {
  return { kind: "key", sha256: digest, workspaceId, fingerprint: "wk_abcdef", createdAt: AT, createdBy: "operator", ...over };
}

/** The key record of the plain key `key`: keyRecord(sha256(key), workspaceId, {fingerprint: key's first 9 characters, ...over}). */
export function keyRecordOf(key: string, workspaceId: string, over: Partial<KeyRecord> = {}): KeyRecord {
  return keyRecord(sha256(key), workspaceId, { fingerprint: key.slice(0, 9), ...over });
}

/** What a tokenRecord may be told: any of its fields, its scope and workspaceId among them. */
export type TokenOver = Partial<TokenFields & { scope: TokenScope["scope"]; workspaceId: string }>;

/** A token record `{kind: "token", sha256, tokenId, name: "n", scope: "operator", createdAt: AT, createdBy: "operator", ...over}`. */
export function tokenRecord(digest: string, tokenId: string, over: TokenOver = {}): TokenRecord {
  return {
    kind: "token",
    sha256: digest,
    tokenId,
    name: "n",
    scope: "operator",
    createdAt: AT,
    createdBy: "operator",
    ...over,
  } as TokenRecord;
}

/** A regulation record: reg_0123456789abcdef of ws1, DELETE_ONLY of USER_ID u1, INITIALIZED, none finished, made at AT by operator; `over` replaces. */
export function regulationRecord(over: Partial<RegulationRecord> = {}): RegulationRecord {
  return {
    kind: "regulation",
    regulateId: "reg_0123456789abcdef",
    workspaceId: "ws1",
    regulationType: "DELETE_ONLY",
    subjectType: "USER_ID",
    subjectIds: ["u1"],
    overallStatus: "INITIALIZED",
    finished: 0,
    createdAt: AT,
    createdBy: "operator",
    updatedAt: AT,
    ...over,
  };
}

/** An AdminBook holding `records`, as the admin topic would after they were written in this order. */
export function bookOf(...records: AdminRecord[]): AdminBook {
  const book = new AdminBook();
  for (const r of records) book.apply(adminKey(r), JSON.stringify(r));
  return book;
}

/** A webhook destination: "Webhooks" posting one message at a time to http://127.0.0.1:9/hook, no headers, running, made at DESTINATION_AT; `over` replaces. */
export function webhookDestination(destinationId: string, workspaceId: string, over: Partial<WebhookDestination> = {}): WebhookDestination {
  return {
    destinationId,
    workspaceId,
    kind: "webhook",
    name: "Webhooks",
    url: "http://127.0.0.1:9/hook",
    headers: {},
    batchSize: 1,
    batchWaitMs: 0,
    paused: false,
    createdAt: DESTINATION_AT,
    updatedAt: DESTINATION_AT,
    ...over,
  };
}

/** A stand-in Kafka whose producer() throws "nothing may be published" (what needs only a producer proves nothing was). */
export function kafkaWithoutProducer(): Kafka {
  return {
    producer: () => {
      throw new Error("nothing may be published");
    },
  } as unknown as Kafka;
}

/** A ReplaysContext at `now` whose destinations are `destinations` (a view from memory), publishing through `publish`; its Kafka and ClickHouse are never reached. */
export function replaysContext(destinations: WebhookDestination[], now: Date, publish: ReplaysContext["publish"]): ReplaysContext {
  const map = new Map(destinations.map((d) => [d.destinationId, d]));
  return {
    kafka: {} as Kafka,
    settings: {
      kafka: kafkaConfig({}),
      allowLinkLocal: false,
      env: {},
      view: { current: async () => map },
      post: { timeoutMs: 1_000, maxAnswerBytes: 1_024, allowLinkLocal: false },
      database: "analytics",
      table: "events",
    },
    client: {} as ClickHouseClient,
    log: silent(),
    now: () => now,
    publish,
  };
}

/** A RegulationsContext for USER=tester at AT whose admin topic is the array `published`; its Kafka and ClickHouse are never reached; `over` replaces. */
export function regulationsContext(published: RegulationRecord[], over: Partial<RegulationsContext> = {}): RegulationsContext {
  return {
    kafka: {} as Kafka,
    config: privacyConfig({ USER: "tester" }),
    sql: {} as Sql,
    log: silent(),
    now: () => new Date(AT),
    publish: async (records) => void published.push(...records),
    ...over,
  };
}

/** A regulation's runRequest seam: each request pushed to `requests`, then `run` on it, then an empty report of a caught-up sink. */
export function runRequestInto(requests: PrivacyRequest[], run: (request: PrivacyRequest) => Promise<void>) {
  return async (request: PrivacyRequest): Promise<PrivacyReport> => {
    requests.push(request);
    await run(request);
    return { requestId: "r", ids: [], removed: [], sinkCaughtUp: true, seconds: 0 };
  };
}

/** An admin route's call `{params, query: {}, body: undefined, principal: the operator, now: new Date()}`; `over` replaces. */
export function adminCall(params: Record<string, string>, over: Partial<AdminCall> = {}): AdminCall {
  return { params, query: {}, body: undefined, principal: { kind: "operator", actor: "operator" }, now: new Date(), ...over };
}
