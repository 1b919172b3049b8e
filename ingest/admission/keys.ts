/**
 * Write keys: the entry format (`key=workspaceId`, or `sha256:<hex>=workspaceId`), and the keys
 * file (WRITE_KEYS_FILE): create, list, revoke and watch write keys. A new key is printed
 * once by the CLI; the file stores only its SHA-256 (`sha256:<hex>=workspaceId` per line), so a
 * leaked file or Secret does not leak keys. Writes replace the file atomically (write + rename).
 * File system errors throw.
 */
import { hash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, unwatchFile, watchFile, writeFileSync } from "node:fs";
import type { Logger } from "pino";
import typia, { tags } from "typia";
import type { Name } from "../../schemas/config";
import type { KeyRecord } from "../../schemas/admin/records";

/** One accepted writeKey, held only as its SHA-256, and the workspace it belongs to. */
export interface WriteKeyEntry {
  /** Lower-case hex SHA-256 of the key's UTF-8 bytes. */
  sha256: string & tags.Pattern<"^[0-9a-f]{64}$">;
  workspaceId: Name;
}

/**
 * Parses write-key entries: `key=workspaceId` (the key is hashed here and not kept) or
 * `sha256:<hex>=workspaceId`. The last `=` splits, so a key may itself contain `=` (base64
 * padding). A malformed entry is kept with an empty field, which the guard then refuses by name.
 */
export function parseWriteKeys(entries: string[]): WriteKeyEntry[] {
  return entries.map((entry) => {
    const at = entry.lastIndexOf("=");
    const key = at < 0 ? entry : entry.slice(0, at).trim();
    const workspaceId = at < 0 ? "" : entry.slice(at + 1).trim();
    const hashed = /^sha256:([0-9a-fA-F]{64})$/.exec(key);
    return { sha256: hashed ? hashed[1]!.toLowerCase() : sha256(key), workspaceId };
  });
}

/**
 * The entries of a keys file: one per line, blank lines and `#` comments skipped. Throws
 * TypeGuardError naming the bad entry.
 */
export function parseKeysFile(text: string): WriteKeyEntry[] {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  return typia.assert<WriteKeyEntry[]>(parseWriteKeys(lines));
}

/**
 * The keys an ingest accepts: those of WRITE_KEYS and the keys file (`configured`), and those
 * created through the admin API or CLI (the admin topic's `records`), less every key the topic
 * says is revoked, wherever it came from: a revoke must take effect without a redeploy, so it
 * wins over the file (docs/ADMIN.md). A digest in both is one key. Pure.
 */
export function acceptedKeys(configured: readonly WriteKeyEntry[], records: Iterable<KeyRecord>): WriteKeyEntry[] {
  const revoked = new Set<string>();
  const accepted = new Map<string, WriteKeyEntry>();
  for (const r of records) {
    if (r.revokedAt !== undefined) revoked.add(r.sha256);
    else accepted.set(r.sha256, { sha256: r.sha256, workspaceId: r.workspaceId });
  }
  for (const e of configured) if (!accepted.has(e.sha256)) accepted.set(e.sha256, e);
  return [...accepted.values()].filter((e) => !revoked.has(e.sha256));
}

/** Lower-case hex SHA-256 of a key's UTF-8 bytes. */
export function sha256(writeKey: string): string {
  return hash("sha256", writeKey, "hex");
}

/** A new random key: 32 bytes, base64url (43 characters), prefixed so it is recognisable. */
export function generateWriteKey(): string {
  return `wk_${randomBytes(32).toString("base64url")}`;
}

/** The entries of the file; an absent file has none. */
export function readKeys(path: string): WriteKeyEntry[] {
  return existsSync(path) ? parseKeysFile(readFileSync(path, "utf8")) : [];
}

/**
 * Calls `reload` within a second of each change of the file (a Kubernetes Secret update, `keys
 * create|revoke`). A file that is gone or unreadable keeps the keys in force and logs why: a
 * Secret being remounted must not revoke every key. Returns the function that stops watching.
 */
export function watchKeysFile(path: string, reload: () => void, log: Logger): () => void {
  watchFile(path, { interval: 1_000 }, () => {
    if (!existsSync(path)) {
      log.error({ file: path }, "keys file is gone; the previous keys stay in force");
      return;
    }
    try {
      reload();
      log.info({ file: path }, "write keys reloaded");
    } catch (error) {
      log.error({ err: error }, "keys file unreadable; the previous keys stay in force");
    }
  });
  return () => unwatchFile(path);
}

/** Adds a new key for a workspace; returns the key (its only appearance in plain). */
export function createKey(path: string, workspaceId: string): string {
  const key = generateWriteKey();
  writeKeys(path, [...readKeys(path), { sha256: sha256(key), workspaceId }]);
  return key;
}

/** Removes every key of a workspace, or the one key given; returns how many were removed. */
export function revokeKeys(path: string, which: { workspaceId: string } | { writeKey: string }): number {
  const entries = readKeys(path);
  const keep =
    "workspaceId" in which
      ? entries.filter((e) => e.workspaceId !== which.workspaceId)
      : entries.filter((e) => e.sha256 !== sha256(which.writeKey));
  writeKeys(path, keep);
  return entries.length - keep.length;
}

function writeKeys(path: string, entries: WriteKeyEntry[]): void {
  const text = [
    "# segment-ingest write keys: sha256:<hex of the key>=workspaceId, one per line",
    ...entries.map((e) => `sha256:${e.sha256}=${e.workspaceId}`),
    "",
  ].join("\n");
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
}
