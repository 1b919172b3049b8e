/**
 * Deletion and suppression requests shaped like Segment's "regulations" (Segment Public API,
 * Deletion and Suppression: `POST /regulations` with `{regulationType, subjectType, subjectIds}`),
 * kept on the admin topic under `regulation:<regulateId>` (schemas/admin/records.ts) and carried
 * out one subject at a time by `users delete|suppress|unsuppress`'s machinery
 * (deploy/commands/privacy.ts runPrivacyRequest; regulations-run.ts). Here: the checks of a
 * request, the mapping of a type to that machinery's request, creating one, and reading them
 * back. Pure but for `createRegulation`, which publishes.
 */
import { randomBytes } from "node:crypto";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import typia from "typia";
import type { AdminBook } from "../../schemas/admin/book";
import { publishAdmin } from "../../schemas/admin/book";
import type { Actor, RegulationRecord, RegulationStatus, RegulationType, WorkspaceId } from "../../schemas/admin/records";
import { done, refuse, type OpResult } from "../../schemas/admin/result";
import type { Sql } from "../../schemas/clickhouse/client";
import type { PrivacyConfig } from "../setup/config";
import type { PrivacyReport, PrivacyRequest } from "./privacy";

/** What creating and running regulations needs: the settings and clients `users delete` gets in deploy/cli.ts. */
export interface RegulationsContext {
  kafka: Kafka;
  /**
   * `users ...` settings (deploy/setup/config.ts privacyConfig): the topics (`kafka.adminTopic`
   * among them), the sink's group, ClickHouse's database and table, `sinkWaitMs`, `operator`.
   */
  config: PrivacyConfig;
  sql: Sql;
  log: Logger;
  now: () => Date;
  /** How a run paces itself; every field has a default (regulations-run.ts RUN_DEFAULTS). */
  run?: Partial<RunOptions>;
  /** Seam for tests: carries out one subject's request (default: runPrivacyRequest with the context's settings). */
  runRequest?: (request: PrivacyRequest) => Promise<PrivacyReport>;
  /** Seam for tests: writes records to the admin topic (default: publishAdmin to `config.kafka.adminTopic`). */
  publish?: (records: RegulationRecord[]) => Promise<void>;
}

/** How a run paces itself. */
export interface RunOptions {
  /** Attempts per subject when its request fails with a retriable error (DeletionIncompleteError, RowsRemainError). */
  tries: number;
  /** Pause between those attempts, ms. */
  retryPauseMs: number;
  /** How often a running regulation refreshes its `updatedAt` while a subject runs, ms (so it never looks stale). */
  heartbeatMs: number;
  /** Longest wait for ClickHouse to apply one pass of a deletion's mutations, ms (`users delete` waits 600,000). */
  mutationWaitMs: number;
}

/** Segment's regulation types, and those Segment has that this pipeline does not carry out. */
export const REGULATION_TYPES: readonly RegulationType[] = ["SUPPRESS_WITH_DELETE", "DELETE_ONLY", "SUPPRESS_ONLY", "UNSUPPRESS"];
const UNSUPPORTED_TYPES = ["DELETE_INTERNAL", "SUPPRESS_WITH_DELETE_INTERNAL"];

/** Every status, in the order a regulation goes through them. */
export const REGULATION_STATUSES: readonly RegulationStatus[] = ["INITIALIZED", "RUNNING", "FINISHED", "FAILED"];

/** Segment: 1 to 5,000 subjectIds per regulation. */
export const MAX_SUBJECTS = 5_000;
/** Longest subjectId, characters (the admin record's bound; the ingest takes userIds of at most 200). */
export const MAX_SUBJECT_LENGTH = 1_024;

/**
 * A workspaceId as records.ts's WorkspaceId says: 1 to 200 characters, no whitespace or '/'.
 * Written out because typia's check of that type keeps only its MinLength (the compiled check of
 * records.ts has `1 <= length` alone).
 */
const WORKSPACE_ID = /^[^\s/]{1,200}$/;
const isWorkspaceId = (id: string): id is WorkspaceId => WORKSPACE_ID.test(id);
const isActor = typia.createIs<Actor>();
const validateRecord = typia.createValidate<RegulationRecord>();

/** A new regulateId: `reg_` + 16 hex characters (64 random bits). */
export function newRegulateId(): string {
  return `reg_${randomBytes(8).toString("hex")}`;
}

/**
 * Segment's request body -> a new regulation (INITIALIZED, `finished` 0, a new regulateId) of
 * `workspaceId`, made by `actor` at `now`. Refuses with 400 naming the field: a body that is not
 * an object; a `regulationType` not one of REGULATION_TYPES (Segment's DELETE_INTERNAL and
 * SUPPRESS_WITH_DELETE_INTERNAL are named unsupported); a `subjectType` other than USER_ID
 * (OBJECT_ID: Segment's objects have no counterpart here); `subjectIds` not an array of 1 to
 * MAX_SUBJECTS strings of 1 to MAX_SUBJECT_LENGTH characters (`subjectIds[3]` names the one at
 * fault); a bad workspaceId or actor. A subjectId given twice is kept once (its first place).
 * Other fields of the body are ignored. Pure but for the random id.
 */
export function regulationOf(input: unknown, workspaceId: string, actor: string, now: Date): OpResult<RegulationRecord> {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return refuse(400, "the body must be a JSON object");
  const body = input as Record<string, unknown>;
  const type = regulationTypeOf(body.regulationType);
  if (!type.ok) return type;
  if (body.subjectType !== "USER_ID") {
    const why = body.subjectType === "OBJECT_ID" ? "OBJECT_ID is not supported (this pipeline has no objects)" : "must be USER_ID";
    return refuse(400, `subjectType ${why}`, "subjectType");
  }
  const subjects = subjectIdsOf(body.subjectIds);
  if (!subjects.ok) return subjects;
  if (!isWorkspaceId(workspaceId)) return refuse(400, "workspaceId must be 1 to 200 characters, without whitespace or '/'", "workspaceId");
  if (!isActor(actor)) return refuse(400, "the requester must be named in 1 to 200 characters", "createdBy");
  const at = now.toISOString();
  const record = {
    kind: "regulation",
    regulateId: newRegulateId(),
    workspaceId,
    regulationType: type.value,
    subjectType: "USER_ID",
    subjectIds: subjects.value,
    overallStatus: "INITIALIZED",
    finished: 0,
    createdAt: at,
    createdBy: actor,
    updatedAt: at,
  } as RegulationRecord;
  // The record's own type has the last word (a bound added there and not above is still kept).
  const checked = validateRecord(record);
  if (!checked.success) {
    const [first] = checked.errors;
    return refuse(400, `${first?.path ?? "the regulation"} must be ${first?.expected ?? "valid"}`, first?.path.replace(/^\$input\./, ""));
  }
  return done(record);
}

function regulationTypeOf(value: unknown): OpResult<RegulationType> {
  if (typeof value === "string" && (REGULATION_TYPES as readonly string[]).includes(value)) return done(value as RegulationType);
  if (typeof value === "string" && UNSUPPORTED_TYPES.includes(value))
    return refuse(
      400,
      `regulationType ${value} is not supported (Segment's internal-only type); use ${REGULATION_TYPES.join(", ")}`,
      "regulationType",
    );
  return refuse(400, `regulationType must be one of ${REGULATION_TYPES.join(", ")}`, "regulationType");
}

function subjectIdsOf(value: unknown): OpResult<string[]> {
  if (!Array.isArray(value)) return refuse(400, "subjectIds must be an array of userIds", "subjectIds");
  if (value.length < 1 || value.length > MAX_SUBJECTS)
    return refuse(400, `subjectIds must hold 1 to ${MAX_SUBJECTS} userIds (Segment's bound), not ${value.length}`, "subjectIds");
  for (const [i, id] of value.entries())
    if (typeof id !== "string" || id.length === 0 || id.length > MAX_SUBJECT_LENGTH)
      return refuse(400, `subjectIds[${i}] must be a userId: a string of 1 to ${MAX_SUBJECT_LENGTH} characters`, `subjectIds[${i}]`);
  return done([...new Set(value as string[])]);
}

/**
 * What the privacy machinery does for one subject of a regulation (Segment's types ->
 * deploy/commands/privacy.ts requests): SUPPRESS_WITH_DELETE -> delete with suppress,
 * DELETE_ONLY -> delete, SUPPRESS_ONLY -> suppress, UNSUPPRESS -> unsuppress; requestedBy is the
 * regulation's createdBy (kept in the audit row).
 */
export function privacyRequestOf(record: RegulationRecord, userId: string): PrivacyRequest {
  const base = { workspaceId: record.workspaceId, userId, requestedBy: record.createdBy };
  switch (record.regulationType) {
    case "SUPPRESS_WITH_DELETE":
      return { ...base, action: "delete", suppress: true };
    case "DELETE_ONLY":
      return { ...base, action: "delete", suppress: false };
    case "SUPPRESS_ONLY":
      return { ...base, action: "suppress", suppress: false };
    case "UNSUPPRESS":
      return { ...base, action: "unsuppress", suppress: false };
  }
}

/** The context's admin-topic writer: its `publish` seam, else publishAdmin to `config.kafka.adminTopic`. */
export function publisherOf(ctx: RegulationsContext): (records: RegulationRecord[]) => Promise<void> {
  return ctx.publish ?? ((records) => publishAdmin(ctx.kafka, ctx.config.kafka.adminTopic, records));
}

/**
 * Checks `input` (regulationOf) and publishes the new regulation, INITIALIZED, to the admin topic
 * (acks=all), then returns it; it does not run it (runRegulation, RegulationRunner). A refusal
 * publishes nothing. Throws when Kafka does not acknowledge the record (publishAdmin).
 */
export async function createRegulation(
  ctx: RegulationsContext,
  input: unknown,
  workspaceId: string,
  actor: string,
): Promise<OpResult<RegulationRecord>> {
  const made = regulationOf(input, workspaceId, actor, ctx.now());
  if (!made.ok) return made;
  await publisherOf(ctx)([made.value]);
  ctx.log.info({ regulateId: made.value.regulateId, workspaceId, regulationType: made.value.regulationType }, "regulation created");
  return made;
}

/** Which regulations a list shows: any of these statuses, any of these types (absent: all). */
export interface RegulationFilter {
  status?: RegulationStatus[];
  types?: RegulationType[];
}

/**
 * The regulations of `book` (of `workspaceId` when given), narrowed by `filter`, newest first
 * (by createdAt, then regulateId so that the order is stable). Pure.
 */
export function listRegulations(book: AdminBook, workspaceId?: string, filter: RegulationFilter = {}): RegulationRecord[] {
  return [...book.regulations.values()]
    .filter((r) => workspaceId === undefined || r.workspaceId === workspaceId)
    .filter((r) => filter.status === undefined || filter.status.includes(r.overallStatus))
    .filter((r) => filter.types === undefined || filter.types.includes(r.regulationType))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.regulateId.localeCompare(a.regulateId));
}

/**
 * The regulation `regulateId`. 404 when `book` has none, or when `workspaceId` is given and it is
 * another workspace's: the same answer as absent, so a workspace cannot learn another's ids. Pure.
 */
export function regulationStatus(book: AdminBook, regulateId: string, workspaceId?: string): OpResult<RegulationRecord> {
  const record = book.regulations.get(regulateId);
  if (record === undefined || (workspaceId !== undefined && record.workspaceId !== workspaceId))
    return refuse(404, `no regulation ${regulateId}`, "regulateId");
  return done(record);
}
