/**
 * Deleting and suppressing a user (GDPR art. 17, CCPA; Segment's SUPPRESS_WITH_DELETE), pure:
 * the entries of the suppressions topic and the list every ingest and sink keeps of them, the ids
 * of an events row read without parsing it (the SQL of a deletion: schemas/privacy/deletion.ts). The I/O is in
 * deploy/commands/privacy.ts (the CLI's requests) and schemas/privacy/follower.ts (following the topic).
 *
 * An entry names a user of a workspace and every id linked to them when the request ran (the
 * userId, the anonymousIds of their identify messages and identities rows, the previousIds of
 * their aliases). `deletedBefore` drops what was received up to the request, acknowledged but
 * still in Kafka, when the sink reaches it; `suppressed` drops every later message of those ids:
 * the ingest answers 2xx (an SDK would otherwise retry it for ever) and produces nothing.
 */
export { itemIds, rowIds, rowReceivedAt } from "./ids";

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
 * The identity rules (docs/PRIVACY.md, Identity and deletion): a message with a userId belongs to
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
