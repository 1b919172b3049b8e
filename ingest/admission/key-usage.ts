/**
 * When each write key was last used, for the key lists (deploy/commands/keys.ts ListedKey
 * lastUsedAt): every KEY_USED_EVERY_MS each ingest writes a `key-used` record to the admin topic
 * for each key it accepted since the last time (schemas/admin/records.ts KeyUsedRecord). At most
 * one record per key per interval per process, whatever the traffic; a failed write is logged and
 * the keys noted again for the next (a last-used time is a convenience, never a reason to fail).
 */
import type { Producer } from "kafkajs";
import type { Logger } from "pino";
import { PeriodicWrite, sendAdmin } from "../../schemas/admin/periodic";
import { adminKey, type KeyUsedRecord } from "../../schemas/admin/records";

/** How often an ingest writes its keys' last use, ms (the times listed are to the minute). */
export const KEY_USED_EVERY_MS = 60_000;

/** The records telling that each digest of `used` was used at `now`. Pure. */
export function keyUsedRecords(used: readonly string[], now: Date): KeyUsedRecord[] {
  const lastUsedAt = now.toISOString();
  return used.map((sha256) => ({ kind: "key-used", sha256, lastUsedAt }));
}

/**
 * Writes, every `everyMs`, the keys `takeUsed` returns (acks=all, bounded by `timeoutMs`; one
 * write at a time, schemas/admin/periodic.ts). Returns the function that stops it and, after the
 * write under way, writes what is left.
 */
export function writeKeyUse(
  producer: Producer,
  topic: string,
  takeUsed: () => string[],
  log: Logger,
  options: { everyMs?: number; timeoutMs: number },
): () => Promise<void> {
  const writes = new PeriodicWrite<string>({
    send: sendAdmin(producer, topic, options.timeoutMs),
    everyMs: options.everyMs ?? KEY_USED_EVERY_MS,
    take: (carried) => [...new Set([...carried, ...takeUsed()])],
    messages: (used) => keyUsedRecords(used, new Date()).map((r) => ({ key: adminKey(r), value: JSON.stringify(r) })),
    carry: true,
    flushAtStop: true,
    onFailed: (used, error) => log.warn({ err: error, keys: used.length }, "key use not written; tried again next time"),
  });
  writes.start();
  return () => writes.stop();
}
