/**
 * The admin topic (KAFKA_ADMIN_TOPIC, compacted, one partition): what the admin API and the CLI
 * write and every ingest follows, one record per thing, the latest kept. Record keys are
 * `<kind>:<id>`:
 *   key:<sha256>         a write key created or revoked through the API or the CLI (KeyRecord)
 *   key-used:<sha256>    when an ingest last authenticated a request with that key (KeyUsedRecord)
 *   token:<sha256>       an admin token (TokenRecord)
 *   regulation:<id>      a deletion or suppression request and its progress (RegulationRecord)
 *   destination-health:<destinationId>:<instanceId>
 *                        what one delivery process reported of a destination (DestinationHealthRecord)
 *   replay:<id>          a destination's replay of a time range and its progress (ReplayRecord)
 * Secrets are never on the topic: keys and tokens are held as the SHA-256 of their text, which
 * is 256 random bits, so the digest cannot be turned back. A revoked key or token keeps its record
 * (with `revokedAt`), so a key of the keys file revoked here stays refused (docs/ADMIN.md) and the
 * lists show what was revoked, by whom and when. One topic rather than one per kind: the volume is
 * a few records per change, and each ingest follows one topic instead of four. Pure.
 */
import typia, { tags } from "typia";

/** Lower-case hex SHA-256 of a secret's UTF-8 bytes. */
export type Digest = string & tags.Pattern<"^[0-9a-f]{64}$">;
/** A workspaceId: non-empty (the keys file's rule; what the API creates is narrower: deploy/commands/keys.ts). */
export type WorkspaceId = string & tags.MinLength<1>;
/** ISO 8601 UTC time. */
export type IsoTime = string & tags.Format<"date-time">;
/** Who made a change: a token's id (`operator` for ADMIN_TOKEN, `cli:<user>` from the CLI). */
export type Actor = string & tags.MinLength<1> & tags.MaxLength<200>;

/** A write key as the admin topic holds it. */
export interface KeyRecord {
  kind: "key";
  sha256: Digest;
  workspaceId: WorkspaceId;
  /** The key's first characters after its prefix (`wk_` + 6), shown in lists: enough to tell keys apart, useless to guess. */
  fingerprint: string & tags.MaxLength<16>;
  createdAt: IsoTime;
  createdBy: Actor;
  /** Set once revoked: from then on every ingest refuses the key, whatever the keys file says. */
  revokedAt?: IsoTime;
  revokedBy?: Actor;
}

/** When a key was last seen by an ingest (each writes at most one per key per KEY_USED_EVERY_MS). */
export interface KeyUsedRecord {
  kind: "key-used";
  sha256: Digest;
  lastUsedAt: IsoTime;
}

/** What a token may do: everything, or only what belongs to its workspace. */
export type TokenScope = { scope: "operator" } | { scope: "workspace"; workspaceId: WorkspaceId };

/** An admin token as the admin topic holds it: its scope and TokenFields. */
export type TokenRecord = TokenScope & TokenFields;

/** What every token record holds beside its scope. */
export interface TokenFields {
  kind: "token";
  sha256: Digest;
  /** Its public id (`tok_` + 12 hex): what lists, the audit trail and revoke name it by. */
  tokenId: string & tags.Pattern<"^tok_[0-9a-f]{12}$">;
  /** A label for people (who holds it). */
  name: string & tags.MinLength<1> & tags.MaxLength<100>;
  createdAt: IsoTime;
  createdBy: Actor;
  revokedAt?: IsoTime;
  revokedBy?: Actor;
}

/** Segment's regulation types that this pipeline carries out (Segment Public API, Deletion and Suppression). */
export type RegulationType = "SUPPRESS_WITH_DELETE" | "DELETE_ONLY" | "SUPPRESS_ONLY" | "UNSUPPRESS";

/** Segment's `overallStatus` values used here: INITIALIZED, then RUNNING, then FINISHED or FAILED. */
export type RegulationStatus = "INITIALIZED" | "RUNNING" | "FINISHED" | "FAILED";

/** A deletion or suppression request and its progress, as the admin topic holds it. */
export interface RegulationRecord {
  kind: "regulation";
  /** Its id (`reg_` + 16 hex), Segment's `regulateId`. */
  regulateId: string & tags.Pattern<"^reg_[0-9a-f]{16}$">;
  workspaceId: WorkspaceId;
  regulationType: RegulationType;
  /** Segment: USER_ID (OBJECT_ID, for Segment's objects, has no counterpart here). */
  subjectType: "USER_ID";
  /** Segment: 1 to 5,000 subjects per request. */
  subjectIds: (string & tags.MinLength<1> & tags.MaxLength<1024>)[] & tags.MinItems<1> & tags.MaxItems<5000>;
  overallStatus: RegulationStatus;
  /** Subjects done so far. */
  finished: number & tags.Type<"uint32">;
  /** Why it failed (FAILED only), for the operator. */
  error?: string & tags.MaxLength<2000>;
  createdAt: IsoTime;
  createdBy: Actor;
  updatedAt: IsoTime;
}

/** A delivery process's random id, made at each start (16 lower-case hex): no colon, so it ends its key unambiguously. */
export type InstanceId = string & tags.Pattern<"^[0-9a-f]{16}$">;
/** A count of messages. */
export type MessageCount = number & tags.Type<"uint32">;

/**
 * What one delivery process (sink/deliver/health.ts) reported of one destination it runs, written
 * every 30 s and removed (a tombstone) when it stops cleanly; a killed process's stays until an
 * ingest's sweep removes it after 10 minutes (deploy/admin/extension.ts), so readers ignore a
 * report older than 2 minutes (deploy/admin/routes-health.ts).
 */
export interface DestinationHealthRecord {
  kind: "destination-health";
  destinationId: DestinationId;
  workspaceId: WorkspaceId;
  instanceId: InstanceId;
  /** When it was reported. */
  at: IsoTime;
  /** Messages of its last 15 one-minute buckets (this one included): delivered, retried (attempts to be made again), failed (kept). */
  delivered: MessageCount;
  retried: MessageCount;
  failed: MessageCount;
  /** Age of the oldest message it was still trying at `at`, seconds; 0 when none waited. */
  oldestWaitingSeconds: number & tags.Minimum<0>;
}

/** A destination's id: lower-case letters, digits and dashes, 1 to 63 characters (schemas/destinations.ts). */
export type DestinationId = string & tags.Pattern<"^[a-z0-9][a-z0-9-]{0,62}$">;

/** A replay's counts: messages read, delivered, kept as failures, skipped (the destination's rules, a deleted or suppressed user). */
export interface RangeReplayCounts {
  read: MessageCount;
  delivered: MessageCount;
  failed: MessageCount;
  skipped: MessageCount;
}

/**
 * A destination's replay of its workspace's stored events received in [from, to), started through
 * the admin API, and its progress (deploy/commands/replay-run.ts): INITIALIZED, RUNNING, then
 * FINISHED (every message delivered, kept as a failure or skipped) or FAILED (the receiver kept
 * failing past `maxWaitSeconds`, the destination was removed, or `error` says what else).
 * `position` is where it got to (replay-range.ts positionText): a resumed run, or a new replay
 * given it as `after`, goes on from there.
 */
export interface ReplayRecord {
  kind: "replay";
  /** `rpl_` + 16 hex. */
  replayId: string & tags.Pattern<"^rpl_[0-9a-f]{16}$">;
  workspaceId: WorkspaceId;
  destinationId: DestinationId;
  from: IsoTime;
  to: IsoTime;
  /** Where it started: after this position (none: the start of the range). */
  after?: string & tags.MaxLength<2200>;
  /** Requests a second, at most. */
  rate: number & tags.ExclusiveMinimum<0> & tags.Maximum<1000>;
  /** How long one request may be retried before the replay fails, seconds. */
  maxWaitSeconds: number & tags.Minimum<0> & tags.Maximum<86400>;
  status: RegulationStatus;
  /** Messages in the range when it started. */
  total: MessageCount;
  counts: RangeReplayCounts;
  position?: string & tags.MaxLength<2200>;
  error?: string & tags.MaxLength<2000>;
  createdAt: IsoTime;
  createdBy: Actor;
  updatedAt: IsoTime;
}

/** Any record of the admin topic. */
export type AdminRecord = KeyRecord | KeyUsedRecord | TokenRecord | RegulationRecord | DestinationHealthRecord | ReplayRecord;

const isAdminRecord = typia.createIs<AdminRecord>();

/** The topic key of a record: `<kind>:<id>`. */
export function adminKey(record: AdminRecord): string {
  switch (record.kind) {
    case "key":
    case "key-used":
    case "token":
      return `${record.kind}:${record.sha256}`;
    case "regulation":
      return `regulation:${record.regulateId}`;
    case "destination-health":
      return `destination-health:${record.destinationId}:${record.instanceId}`;
    case "replay":
      return `replay:${record.replayId}`;
  }
}

/**
 * A topic record -> the record it holds; undefined for a tombstone, a value that is not one, or
 * one filed under another key (a record is believed only under its own key).
 */
export function parseAdminRecord(key: string, value: Buffer | string | null): AdminRecord | undefined {
  if (value === null || value.length === 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString());
  } catch {
    return undefined;
  }
  return isAdminRecord(parsed) && adminKey(parsed) === key ? parsed : undefined;
}
