/**
 * The keys file (WRITE_KEYS_FILE): create, list, revoke and watch write keys. A new key is printed
 * once by the CLI; the file stores only its SHA-256 (`sha256:<hex>=workspaceId` per line), so a
 * leaked file or Secret does not leak keys. Writes replace the file atomically (write + rename).
 * File system errors throw.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, unwatchFile, watchFile, writeFileSync } from "node:fs";
import type { Logger } from "pino";
import { parseKeysFile, sha256, type WriteKeyEntry } from "../schemas/config";

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
