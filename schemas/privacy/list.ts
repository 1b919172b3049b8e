/**
 * Deleting and suppressing a user (GDPR art. 17, CCPA; Segment's SUPPRESS_WITH_DELETE), pure:
 * the entries of the suppressions topic and the list every ingest and sink keeps of them, the ids
 * of an events row read without parsing it, and the SQL of a deletion. The I/O is in
 * deploy/commands/privacy.ts (the CLI's requests) and schemas/privacy/follower.ts (following the topic).
 *
 * An entry names a user of a workspace and every id linked to them when the request ran (the
 * userId, the anonymousIds of their identify messages and identities rows, the previousIds of
 * their aliases). `deletedBefore` drops what was received up to the request, acknowledged but
 * still in Kafka, when the sink reaches it; `suppressed` drops every later message of those ids:
 * the ingest answers 2xx (an SDK would otherwise retry it for ever) and produces nothing.
 */
import { IDENTITIES_TABLE, USERS_TABLE } from "../clickhouse/analyst";
import { REJECTED_TABLE } from "../clickhouse/tables";
import { onCluster, quoteIdent, quoteString, storageName } from "../clickhouse/sql";
export { itemIds, rowIds, rowReceivedAt } from "./ids";
import { anonymousMatches, anonymousRefused, ownRefused } from "./refused";

/** One value of the suppressions topic (compacted; key = partKey): a user's entry, or one part of it (schemas/privacy/parts.ts). */
export interface PrivacyEntry {
  workspaceId: string;
  userId: string;
  /**
   * The userId and the ids linked to it when the request ran (anonymousIds, previousIds): a
   * linked id matches only messages and rows without a userId (PrivacyList).
   */
  ids: string[];
  /** Later messages of these ids are accepted and not stored. */
  suppressed: boolean;
  /** ms since the epoch: suppressed from then on (messages received before it stay; absent = always). */
  suppressedFrom?: number;
  /** ms since the epoch: messages of these ids received up to then are dropped by the sink (still in Kafka, or replayed from the DLQ). */
  deletedBefore?: number;
}

/** The topic key of a user's entry (its first part): a later request for the same user replaces the earlier one. */
export function entryKey(workspaceId: string, userId: string): string {
  return JSON.stringify([workspaceId, userId]);
}

/** A topic value -> entry; undefined for a value that is not one (a tombstone, another shape). */
export function parseEntry(value: Buffer | string | null): PrivacyEntry | undefined {
  if (value === null || value.length === 0) return undefined;
  try {
    const e = JSON.parse(value.toString()) as Partial<PrivacyEntry>;
    const text = (v: unknown): v is string => typeof v === "string";
    if (!text(e.workspaceId) || !text(e.userId) || !Array.isArray(e.ids) || !e.ids.every(text) || typeof e.suppressed !== "boolean")
      return undefined;
    if (e.deletedBefore !== undefined && typeof e.deletedBefore !== "number") return undefined;
    if (e.suppressedFrom !== undefined && typeof e.suppressedFrom !== "number") return undefined;
    return e as PrivacyEntry;
  } catch {
    return undefined;
  }
}

/**
 * The entries read so far, by user and by id (an id may be in several users' entries: a shared
 * device's anonymousId). `drops` is the one question the ingest and the sink ask per message;
 * it costs a map lookup while no user is listed for the id.
 *
 * The identity rules (docs/API.md, Identity and deletion): a message with a userId belongs to
 * that userId only, so it is matched against entries of that user, never against the ids linked
 * to another user (any writeKey holder can send `identify {userId: mallory, anonymousId: alice}`
 * and so link alice's userId to mallory). A message without a userId is matched by its
 * anonymousId against every entry's ids (the user's own userId and the ids linked to them).
 */
export class PrivacyList {
  private readonly byKey = new Map<string, PrivacyEntry>();
  /** The records (entryParts) of each user's entry, by workspace and userId: a message with a userId is matched here only. */
  private readonly byUser = new Map<string, Map<string, PrivacyEntry>>();
  /** Entries by workspace and each of their ids (a message without a userId is matched here). */
  private readonly byId = new Map<string, Set<PrivacyEntry>>();

  /** Applies one topic record (`entry` undefined: the record at `key` is removed). */
  apply(key: string, entry: PrivacyEntry | undefined): void {
    const old = this.byKey.get(key);
    if (old) {
      const user = idKey(old.workspaceId, old.userId);
      const parts = this.byUser.get(user);
      parts?.delete(key);
      if (parts?.size === 0) this.byUser.delete(user);
      for (const id of idsOf(old)) {
        const entries = this.byId.get(idKey(old.workspaceId, id));
        entries?.delete(old);
        if (entries?.size === 0) this.byId.delete(idKey(old.workspaceId, id));
      }
    }
    if (entry === undefined) {
      this.byKey.delete(key);
      return;
    }
    this.byKey.set(key, entry);
    const user = idKey(entry.workspaceId, entry.userId);
    this.byUser.set(user, (this.byUser.get(user) ?? new Map<string, PrivacyEntry>()).set(key, entry));
    for (const id of idsOf(entry)) {
      const k = idKey(entry.workspaceId, id);
      this.byId.set(k, (this.byId.get(k) ?? new Set()).add(entry));
    }
  }

  /** The user's entry, its parts joined (the first part's flags, every part's ids), if any. */
  get(workspaceId: string, userId: string): PrivacyEntry | undefined {
    const parts = this.byUser.get(idKey(workspaceId, userId));
    if (parts === undefined) return undefined;
    const all = [...parts.values()];
    const first = parts.get(entryKey(workspaceId, userId)) ?? all[0]!;
    return { ...first, ids: [...new Set(all.flatMap((e) => e.ids))] };
  }

  /** The topic keys of the user's records (partKey): what a new request replaces or removes. */
  keysOf(workspaceId: string, userId: string): string[] {
    return [...(this.byUser.get(idKey(workspaceId, userId))?.keys() ?? [])];
  }

  /** Users with an entry. */
  get size(): number {
    return this.byUser.size;
  }

  /**
   * Whether a message must not be stored. With a userId it is matched only against that user's
   * entry; without one, by its anonymousId against every entry naming it (see the class). It is
   * dropped when a matching entry is suppressed since before it was received, or was deleted at
   * or after it was received. `receivedAt` is ms since the epoch, or a function reading it
   * (called only for a listed id); the ingest gives Infinity, so only suppression applies to new
   * messages.
   */
  drops(workspaceId: string, userId: string | undefined, anonymousId: string | undefined, receivedAt: number | (() => number)): boolean {
    if (this.byKey.size === 0) return false;
    let entries: Iterable<PrivacyEntry> | undefined;
    if (userId !== undefined && userId !== "") entries = this.byUser.get(idKey(workspaceId, userId))?.values();
    else if (anonymousId !== undefined && anonymousId !== "") entries = this.byId.get(idKey(workspaceId, anonymousId));
    if (entries === undefined) return false;
    const at = typeof receivedAt === "number" ? receivedAt : receivedAt();
    for (const e of entries) {
      if (e.suppressed && at >= (e.suppressedFrom ?? 0)) return true;
      if (e.deletedBefore !== undefined && at <= e.deletedBefore) return true;
    }
    return false;
  }
}

function idKey(workspaceId: string, id: string): string {
  return `${workspaceId}\u0000${id}`;
}

/** The ids a record names: the userId and its share of the linked ids. */
function idsOf(entry: PrivacyEntry): Set<string> {
  return new Set([entry.userId, ...entry.ids]);
}

/**
 * The ids linked to a user in a workspace: anonymousIds of their identities rows and of their
 * identify messages, previousIds of their aliases (one column `id`, the userId not included).
 */
export function linkedIdsQuery(database: string, table: string, workspaceId: string, userId: string): string {
  const w = quoteString(workspaceId);
  const u = quoteString(userId);
  const q = (name: string) => `${quoteIdent(database)}.${quoteIdent(name)}`;
  return `SELECT DISTINCT id FROM (
  SELECT anonymous_id AS id FROM ${q(IDENTITIES_TABLE)} WHERE workspace_id = ${w} AND user_id = ${u}
  UNION ALL
  SELECT anonymous_id AS id FROM ${q(table)} WHERE workspace_id = ${w} AND user_id = ${u}
  UNION ALL
  SELECT previous_id AS id FROM ${q(table)} WHERE workspace_id = ${w} AND user_id = ${u} AND type = 'alias'
)
WHERE id != '' AND id != ${u}`;
}

/** One table a deletion covers: its name (reads, counts) and the ALTER that deletes the rows. */
export interface DeletionTarget {
  table: string;
  /** The table the mutation alters: `table`, or on a cluster `<table>_local` on every server. */
  storage: string;
  /** `WHERE` condition of the rows (the user's, received up to the request where the table has the time). */
  where: string;
  /** Reads the rows still there: `SELECT count() AS n FROM <table> WHERE <where>`. */
  count: string;
  /**
   * Where a row can match more than one target of its table (a refused item naming one linked id
   * as anonymousId and another as previousId), the keys of the rows matched (`id` column), so
   * each is counted once: `SELECT rejection_id AS id FROM rejected_messages WHERE <where>`.
   */
  keys?: string;
  /** The mutation: `ALTER TABLE <storage> [ON CLUSTER <cluster>] DELETE WHERE <where>`. */
  mutation: string;
  /**
   * True where rows stored after the request can match too (`users` and `identities` have no
   * receive time: a user's new events rebuild their row): a count after the mutation then tells
   * nothing unless the user is suppressed, so no new event of theirs is stored.
   */
  unbounded: boolean;
}

/**
 * The most bytes of id text one deletion statement carries (its id list, or its refused-item
 * matches), so with the rest of it the statement stays under max_query_size (262,144 bytes by
 * default, both engines). Counted in bytes, not ids: an id of 200 control characters is 1,400
 * bytes in a match (`\u0001` each), and 200 such ids made a 564 KB statement ClickHouse refused.
 */
export const DELETION_IDS_BYTES = 200_000;

/** The most ids one deletion statement carries, for max_ast_elements (50,000 by default): a refused-item statement costs about 14 elements an id. */
export const IDS_PER_DELETION = 2_000;

/** `ids` in order, in groups of at most IDS_PER_DELETION whose `cost`s (bytes) add up to at most DELETION_IDS_BYTES. Pure. */
function packed(ids: readonly string[], cost: (id: string) => number): string[][] {
  const groups: string[][] = [];
  let bytes = Number.POSITIVE_INFINITY;
  for (const id of ids) {
    const c = cost(id);
    if (bytes + c > DELETION_IDS_BYTES || groups.at(-1)!.length >= IDS_PER_DELETION) {
      groups.push([]);
      bytes = 0;
    }
    groups.at(-1)!.push(id);
    bytes += c;
  }
  return groups;
}

/**
 * What `users delete` removes, by the identity rules (docs/API.md): events received up to
 * `before` (seconds since the epoch, rounded up: 18.16 keeps received_at in seconds) whose userId
 * is the user's, or that have no userId and an anonymousId that is the userId or one of the
 * linked ids (never another user's identified rows, whatever ids were linked); the user's `users`
 * and `identities` rows (by userId only); refused items whose text begins with the userId, or,
 * without a non-empty userId first, naming it as userId or an id as anonymousId or previousId
 * (schemas/privacy/refused.ts: what else that deletes), received up to `before`. The linked ids are spread
 * over statements of at most DELETION_IDS_BYTES of id text and IDS_PER_DELETION ids each, so any
 * number of them, of any characters, can be deleted.
 * Events received after the request stay unless the user is suppressed. On a `cluster` the counts
 * read the Distributed tables and the mutations alter each shard's Replicated `_local` table ON
 * CLUSTER (one replica of a shard runs it, ZooKeeper hands it to the others).
 */
export function deletionTargets(
  database: string,
  table: string,
  workspaceId: string,
  userId: string,
  linkedIds: readonly string[],
  before: number,
  cluster?: string,
): DeletionTarget[] {
  const w = `workspace_id = ${quoteString(workspaceId)}`;
  const u = quoteString(userId);
  const anonymous = [userId, ...linkedIds.filter((id) => id !== userId)];
  const received = `received_at <= toDateTime(${Math.ceil(before)})`;
  const bytes = (text: string) => Buffer.byteLength(text) + 4; // with the separator
  const chunks = packed(anonymous, (id) => bytes(quoteString(id)));
  const rejectedChunks = packed(anonymous, (id) => anonymousMatches(id).reduce((n, m) => n + bytes(m), 0));
  const targets: [string, string][] = [
    ...chunks.map((ids, i): [string, string] => {
      const list = `(${ids.map(quoteString).join(", ")})`;
      return [table, `${w} AND (${i === 0 ? `user_id = ${u} OR ` : ""}(user_id = '' AND anonymous_id IN ${list})) AND ${received}`];
    }),
    [USERS_TABLE, `${w} AND user_id = ${u}`],
    [IDENTITIES_TABLE, `${w} AND user_id = ${u}`],
    ...rejectedChunks.map((ids, i): [string, string] => [
      REJECTED_TABLE,
      `${w} AND (${i === 0 ? `${ownRefused(userId)} OR ` : ""}${anonymousRefused(ids)}) AND ${received}`,
    ]),
  ];
  return targets.map(([name, where]) => {
    const storage = storageName(name, cluster);
    const from = `FROM ${quoteIdent(database)}.${quoteIdent(name)} WHERE ${where}`;
    return {
      table: name,
      storage,
      where,
      count: `SELECT count() AS n ${from}`,
      ...(name === REJECTED_TABLE ? { keys: `SELECT rejection_id AS id ${from}` } : {}),
      mutation: `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storage)}${onCluster(cluster)} DELETE WHERE ${where}`,
      unbounded: name === USERS_TABLE || name === IDENTITIES_TABLE,
    };
  });
}
