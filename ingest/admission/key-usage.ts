/**
 * When each write key was last used, for the key lists (deploy/commands/keys.ts ListedKey
 * lastUsedAt): every KEY_USED_EVERY_MS each ingest writes a `key-used` record to the admin topic
 * for each key it accepted since the last time (schemas/admin/records.ts KeyUsedRecord). At most
 * one record per key per interval per process, whatever the traffic; a failed write is logged and
 * the keys noted again for the next (a last-used time is a convenience, never a reason to fail).
 */
import type { Producer } from "kafkajs";
import type { Logger } from "pino";
import { adminKey, type KeyUsedRecord } from "../../schemas/admin/records";
import { sendWhole } from "../../schemas/kafka/producer";

/** How often an ingest writes its keys' last use, ms (the times listed are to the minute). */
export const KEY_USED_EVERY_MS = 60_000;

/** The records telling that each digest of `used` was used at `now`. Pure. */
export function keyUsedRecords(used: readonly string[], now: Date): KeyUsedRecord[] {
  const lastUsedAt = now.toISOString();
  return used.map((sha256) => ({ kind: "key-used", sha256, lastUsedAt }));
}

/**
 * Writes, every `everyMs`, the keys `takeUsed` returns (acks=all, bounded by `timeoutMs`).
 * Returns the function that stops it and writes what is left.
 */
export function writeKeyUse(
  producer: Producer,
  topic: string,
  takeUsed: () => string[],
  log: Logger,
  options: { everyMs?: number; timeoutMs: number },
): () => Promise<void> {
  let carried: string[] = [];
  const flush = async () => {
    const used = [...new Set([...carried, ...takeUsed()])];
    carried = [];
    if (used.length === 0) return;
    const messages = keyUsedRecords(used, new Date()).map((r) => ({ key: adminKey(r), value: JSON.stringify(r) }));
    try {
      await sendWhole(producer, { acks: -1, topicMessages: [{ topic, messages }] }, options.timeoutMs);
    } catch (error) {
      carried = used;
      log.warn({ err: error, keys: used.length }, "key use not written; tried again next time");
    }
  };
  const timer = setInterval(() => void flush(), options.everyMs ?? KEY_USED_EVERY_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await flush();
  };
}
