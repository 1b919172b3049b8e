/**
 * Write keys through the admin topic (schemas/admin/records.ts KeyRecord): create, list, revoke.
 * The admin API and `keys create|list|revoke` call these same functions. Every ingest follows the
 * topic, so a key created here is accepted, and one revoked refused, within seconds, without a
 * redeploy (ingest/service.ts). The keys of WRITE_KEYS and the keys file are listed beside them
 * (`source: "file"`); revoking one writes a revoked record, which every ingest honours over the
 * file (docs/ADMIN.md says how the two combine). A key is named by its `keyId`, the first 16 hex
 * of its SHA-256: it names the key without revealing it. Errors are values (OpResult); Kafka
 * failures throw.
 */
import type { Kafka } from "kafkajs";
import { generateWriteKey, sha256, type WriteKeyEntry } from "../../ingest/admission/keys";
import { publishAdmin, type AdminBook } from "../../schemas/admin/book";
import type { KeyRecord } from "../../schemas/admin/records";
import { done, refuse, type OpResult } from "../../schemas/admin/result";

/** Where keys are written. */
export interface KeysContext {
  kafka: Kafka;
  /** KAFKA_ADMIN_TOPIC. */
  topic: string;
}

/** A key as lists show it: never the key, nor its whole digest. */
export interface ListedKey {
  /** First 16 hex of the key's SHA-256: what revoke names it by. */
  keyId: string;
  workspaceId: string;
  /** `wk_` and the key's next 6 characters (API keys), or `sha256:` and 8 hex (a file's keys, known only by digest). */
  fingerprint: string;
  /** `api`: created through the API or CLI (the admin topic); `file`: WRITE_KEYS or the keys file. */
  source: "api" | "file";
  /** ISO 8601; absent for a file's keys. */
  createdAt?: string;
  createdBy?: string;
  /** When an ingest last accepted a request with it (ISO 8601, to the minute); absent: not since the topic began. */
  lastUsedAt?: string;
  revokedAt?: string;
  revokedBy?: string;
}

/** The keyId of a digest. */
export function keyIdOf(digest: string): string {
  return digest.slice(0, 16);
}

/**
 * Creates a key for `workspaceId`; resolves with the key (its only appearance: it is not kept)
 * and its listing. Throws when Kafka does not acknowledge the record.
 */
export async function createWriteKey(
  c: KeysContext,
  workspaceId: string,
  actor: string,
  now: Date,
): Promise<OpResult<{ writeKey: string; key: ListedKey }>> {
  if (!/^[^\s/]{1,200}$/.test(workspaceId)) return refuse(400, "a workspaceId is 1-200 characters without spaces or '/'", "workspaceId");
  const writeKey = generateWriteKey();
  const record: KeyRecord = {
    kind: "key",
    sha256: sha256(writeKey),
    workspaceId,
    fingerprint: writeKey.slice(0, 9),
    createdAt: now.toISOString(),
    createdBy: actor,
  };
  await publishAdmin(c.kafka, c.topic, [record]);
  return done({ writeKey, key: listedOf(record, undefined) });
}

/**
 * Every key, of every workspace or of `workspaceId`: the admin topic's, then those of WRITE_KEYS
 * and the keys file not on the topic. Ordered by workspace, then creation.
 */
export function listWriteKeys(book: AdminBook, configured: readonly WriteKeyEntry[], workspaceId?: string): ListedKey[] {
  const listed = [...book.keys.values()].map((r) => listedOf(r, book.keysUsed.get(r.sha256)));
  for (const entry of configured) {
    if (book.keys.has(entry.sha256) || listed.some((k) => k.keyId === keyIdOf(entry.sha256) && k.source === "file")) continue;
    const used = book.keysUsed.get(entry.sha256);
    listed.push({
      keyId: keyIdOf(entry.sha256),
      workspaceId: entry.workspaceId,
      fingerprint: `sha256:${entry.sha256.slice(0, 8)}`,
      source: "file",
      ...(used === undefined ? {} : { lastUsedAt: new Date(used).toISOString() }),
    });
  }
  return listed
    .filter((k) => workspaceId === undefined || k.workspaceId === workspaceId)
    .sort((a, b) => a.workspaceId.localeCompare(b.workspaceId) || (a.createdAt ?? "").localeCompare(b.createdAt ?? ""));
}

/**
 * Revokes the key `keyId` (of `workspaceId` when given: another workspace's is 404, as if it did
 * not exist). A file's key gets a revoked record, which every ingest honours over the file.
 * Revoking a revoked key answers it as it is. Throws when Kafka does not acknowledge.
 */
export async function revokeWriteKey(
  c: KeysContext,
  book: AdminBook,
  configured: readonly WriteKeyEntry[],
  keyId: string,
  scope: { workspaceId?: string; actor: string; now: Date },
): Promise<OpResult<ListedKey>> {
  const record = [...book.keys.values()].find((r) => keyIdOf(r.sha256) === keyId);
  const file = configured.find((e) => keyIdOf(e.sha256) === keyId);
  const found: KeyRecord | undefined =
    record ??
    (file === undefined
      ? undefined
      : {
          kind: "key",
          sha256: file.sha256,
          workspaceId: file.workspaceId,
          fingerprint: `sha256:${file.sha256.slice(0, 8)}`,
          createdAt: scope.now.toISOString(),
          createdBy: "keys-file",
        });
  if (found === undefined || (scope.workspaceId !== undefined && found.workspaceId !== scope.workspaceId)) {
    return refuse(404, `no key ${keyId}`, "keyId");
  }
  if (found.revokedAt !== undefined) return done(listedOf(found, book.keysUsed.get(found.sha256)));
  const revoked: KeyRecord = { ...found, revokedAt: scope.now.toISOString(), revokedBy: scope.actor };
  await publishAdmin(c.kafka, c.topic, [revoked]);
  book.apply(`key:${revoked.sha256}`, JSON.stringify(revoked)); // this process answers with it at once
  return done(listedOf(revoked, book.keysUsed.get(revoked.sha256)));
}

function listedOf(r: KeyRecord, usedMs: number | undefined): ListedKey {
  return {
    keyId: keyIdOf(r.sha256),
    workspaceId: r.workspaceId,
    fingerprint: r.fingerprint,
    source: r.createdBy === "keys-file" ? "file" : "api",
    createdAt: r.createdAt,
    createdBy: r.createdBy,
    ...(usedMs === undefined ? {} : { lastUsedAt: new Date(usedMs).toISOString() }),
    ...(r.revokedAt === undefined ? {} : { revokedAt: r.revokedAt, revokedBy: r.revokedBy ?? "" }),
  };
}
