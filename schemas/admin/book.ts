/**
 * What the admin topic holds now (schemas/admin/records.ts), as every ingest and the CLI see it
 * after reading it: keys, tokens, when each key was last used, regulations, the delivery processes'
 * reports of their destinations' health, destinations' replays. `apply` takes the
 * topic's records in order; a tombstone or a record that is not one removes what its key held.
 * `followAdmin` reads the topic whole, then follows it (schemas/kafka/follow.ts). Pure but for
 * the follower.
 */
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { followCompacted, type Following } from "../kafka/follow";
import { publishRecords } from "../kafka/producer";
import {
  adminKey,
  parseAdminRecord,
  type AdminRecord,
  type DestinationHealthRecord,
  type KeyRecord,
  type RegulationRecord,
  type ReplayRecord,
  type TokenRecord,
} from "./records";

/** The admin topic's state. */
export class AdminBook {
  readonly keys = new Map<string, KeyRecord>();
  readonly tokens = new Map<string, TokenRecord>();
  /** sha256 -> last use, ms since the epoch. */
  readonly keysUsed = new Map<string, number>();
  readonly regulations = new Map<string, RegulationRecord>();
  readonly replays = new Map<string, ReplayRecord>();
  /** destinationId -> instanceId -> that delivery process's latest report, fresh or not. */
  readonly destinationHealth = new Map<string, Map<string, DestinationHealthRecord>>();
  private readonly listeners: (() => void)[] = [];

  /** Applies one topic record (its key and value; null: a tombstone). */
  apply(key: string, value: Buffer | string | null): void {
    const record = parseAdminRecord(key, value);
    const [kind, id = ""] = splitKey(key);
    if (record === undefined) {
      if (kind === "key") this.keys.delete(id);
      else if (kind === "token") this.tokens.delete(id);
      else if (kind === "key-used") this.keysUsed.delete(id);
      else if (kind === "regulation") this.regulations.delete(id);
      else if (kind === "replay") this.replays.delete(id);
      else if (kind === "destination-health") this.forgetHealth(id);
    } else if (record.kind === "key") this.keys.set(id, record);
    else if (record.kind === "token") this.tokens.set(id, record);
    else if (record.kind === "regulation") this.regulations.set(id, record);
    else if (record.kind === "replay") this.replays.set(id, record);
    else if (record.kind === "destination-health") this.keepHealth(record);
    else {
      // Several ingests write these: keep the latest time, whatever order they arrive in.
      const at = Date.parse(record.lastUsedAt);
      if (at > (this.keysUsed.get(id) ?? 0)) this.keysUsed.set(id, at);
    }
    if (kind === "key") for (const listener of this.listeners) listener();
  }

  /** Calls `listener` after each change of the keys (the ingest rebuilds its accepted keys). */
  onKeysChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** The token held under `sha256`, whether revoked or not. */
  token(sha256: string): TokenRecord | undefined {
    return this.tokens.get(sha256);
  }

  /** Every delivery process's latest report of `destinationId`, stale ones included (the reader judges their age). */
  healthReports(destinationId: string): DestinationHealthRecord[] {
    return [...(this.destinationHealth.get(destinationId)?.values() ?? [])];
  }

  /**
   * The topic keys of the health reports made more than `olderThanMs` before `nowMs`: those of a
   * delivery process killed before it could remove its own (a clean stop writes tombstones).
   */
  staleHealthKeys(nowMs: number, olderThanMs: number): string[] {
    return [...this.destinationHealth.values()]
      .flatMap((reports) => [...reports.values()])
      .filter((r) => nowMs - Date.parse(r.at) > olderThanMs)
      .map((r) => adminKey(r));
  }

  private keepHealth(record: DestinationHealthRecord): void {
    const reports = this.destinationHealth.get(record.destinationId) ?? new Map<string, DestinationHealthRecord>();
    reports.set(record.instanceId, record);
    this.destinationHealth.set(record.destinationId, reports);
  }

  /** Removes the report under `<destinationId>:<instanceId>` (the instance id has no colon). */
  private forgetHealth(id: string): void {
    const at = id.lastIndexOf(":");
    const destinationId = id.slice(0, Math.max(0, at));
    const reports = this.destinationHealth.get(destinationId);
    if (reports === undefined) return;
    reports.delete(id.slice(at + 1));
    if (reports.size === 0) this.destinationHealth.delete(destinationId);
  }
}

function splitKey(key: string): [string, string?] {
  const at = key.indexOf(":");
  return at < 0 ? [key] : [key.slice(0, at), key.slice(at + 1)];
}

/**
 * Reads the admin topic into `book`, then follows it. Resolves once read to its end as it was at
 * start; throws when it cannot be read within a minute (the process does not start).
 */
export function followAdmin(kafka: Kafka, topic: string, clientId: string, book: AdminBook, log: Logger): Promise<Following> {
  return followCompacted(kafka, { topic, groupPrefix: `${clientId}-admin`, label: "admin", log }, (key, value) => book.apply(key, value));
}

/** Reads the admin topic once, whole, and stops: the CLI's view. Throws what Kafka throws. */
export async function readAdmin(kafka: Kafka, topic: string, clientId: string, log: Logger): Promise<AdminBook> {
  const book = new AdminBook();
  const following = await followAdmin(kafka, topic, clientId, book, log);
  await following.stop();
  return book;
}

/**
 * Writes `records` to the admin topic, each under its own key, acknowledged by every in-sync
 * replica (acks=all) before it resolves. Throws when Kafka does not acknowledge them within
 * PUBLISH_DEADLINE_MS (schemas/kafka/producer.ts publishRecords; retriable: nothing was changed,
 * or the same change is written again).
 */
export function publishAdmin(kafka: Kafka, topic: string, records: AdminRecord[]): Promise<void> {
  return publishRecords(
    kafka,
    topic,
    records.map((r) => ({ key: adminKey(r), value: JSON.stringify(r) })),
  );
}
