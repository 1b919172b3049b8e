/**
 * A user's privacy entry as records of the suppressions topic (compacted, one partition): parts
 * of at most a byte bound each, so no number of linked ids makes a record Kafka refuses. Pure; the
 * CLI publishes them (deploy/commands/privacy.ts), every follower joins them (PrivacyList).
 */
import { entryKey, type PrivacyEntry } from "./list";

/** The topic key of part `part` (0, 1, ...) of a user's entry: entryKey for the first. */
export function partKey(workspaceId: string, userId: string, part: number): string {
  return part === 0 ? entryKey(workspaceId, userId) : JSON.stringify([workspaceId, userId, part]);
}

/**
 * Most bytes of ids (JSON text) in one record of the suppressions topic: a quarter of Kafka's
 * default limit on a record batch (max.message.bytes, 1 MB), which a single record of every id
 * linked to a user could pass: any writeKey holder can link ids to a userId (identify messages),
 * and did, 5,300 of them, so that the request failed before it deleted anything.
 */
export const ENTRY_PART_BYTES = 256 * 1024;

/**
 * An entry as the records of the topic, in order: each a whole PrivacyEntry (the same user and
 * flags) with a share of the ids of at most `maxBytes` of JSON text (one id alone may pass it),
 * keyed partKey(.., 0), partKey(.., 1), ...; then, for each key of `earlierKeys` (the user's
 * records before this request) that has no part now, a record of the same flags and no ids. Not
 * a tombstone: a release before parts forgets the user's whole entry on a tombstone of any of
 * its keys, and it may still run during a rolling update or after a rollback.
 */
export function entryParts(
  entry: PrivacyEntry,
  maxBytes = ENTRY_PART_BYTES,
  earlierKeys: readonly string[] = [],
): { key: string; entry: PrivacyEntry }[] {
  const shares: string[][] = [[]];
  let bytes = 0;
  for (const id of entry.ids) {
    const size = Buffer.byteLength(JSON.stringify(id)) + 1;
    if (bytes + size > maxBytes && shares[shares.length - 1]!.length > 0) {
      shares.push([]);
      bytes = 0;
    }
    shares[shares.length - 1]!.push(id);
    bytes += size;
  }
  const parts = shares.map((ids, part) => ({ key: partKey(entry.workspaceId, entry.userId, part), entry: { ...entry, ids } }));
  const kept = new Set(parts.map((p) => p.key));
  const emptied = earlierKeys.filter((key) => !kept.has(key)).map((key) => ({ key, entry: { ...entry, ids: [] } }));
  return [...parts, ...emptied];
}
