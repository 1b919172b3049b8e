/**
 * Where the destination operations (destinations.ts, deliveries.ts) read the destinations topic's
 * state (compacted, key = destinationId; schemas/destinations.ts). The CLI reads the topic whole
 * for each command (readDestinations: a consumer of its own, about a second). A long-lived process
 * (the admin API in the ingest) follows it once (FollowedDestinations) and answers from memory,
 * after checking, with one request for the topic's end offsets, that it has applied every record
 * written before the call: a change the caller made (or any acknowledged before) is always seen.
 */
import type { Admin, Kafka } from "kafkajs";
import type { Logger } from "pino";
import { parseDestination, type WebhookDestination } from "../../schemas/destinations";
import { openAdmin } from "../../schemas/kafka/client";
import { followCompacted, type Following } from "../../schemas/kafka/follow";
import { sleep } from "../../schemas/runtime/retry";

/** The destinations topic's state as an operation reads it. */
export interface DestinationView {
  /**
   * Every destination on the topic, by destinationId, with every record acknowledged before the
   * call applied. Throws what Kafka throws, or when the topic cannot be followed that far in time.
   */
  current(): Promise<ReadonlyMap<string, WebhookDestination>>;
}

/** Applies one record of the topic to `into`: a tombstone, or a value that is not this id's destination, removes it. */
export function applyDestinationRecord(into: Map<string, WebhookDestination>, key: string, value: Buffer | null): void {
  const d = value === null ? undefined : parseDestination(value);
  if (d === undefined || d.destinationId !== key) into.delete(key);
  else into.set(key, d);
}

/** Every destination on the topic now, by destinationId: the topic read whole by a consumer of its own. Throws what Kafka throws. */
export async function readDestinations(
  kafka: Kafka,
  topic: string,
  clientId: string,
  log: Logger,
): Promise<Map<string, WebhookDestination>> {
  const destinations = new Map<string, WebhookDestination>();
  const following = await followCompacted(
    kafka,
    { topic, groupPrefix: `${clientId}-destinations-cli`, label: "destinations", log },
    (key, value) => applyDestinationRecord(destinations, key, value),
  );
  await following.stop();
  return destinations;
}

/** How long `current` waits for the follower to reach the topic's end, ms, before it throws. */
export const CATCH_UP_TIMEOUT_MS = 10_000;
/** How often `current` looks whether the follower got there, ms. */
const CATCH_UP_POLL_MS = 5;

/** The destinations topic followed by a long-lived process (see the module comment). */
export class FollowedDestinations implements DestinationView {
  private readonly destinations = new Map<string, WebhookDestination>();
  /** partition -> the offset after the last record applied. */
  private readonly applied = new Map<number, bigint>();
  private following: Following | undefined;
  private admin: Admin | undefined;

  /** Not yet following: `start` makes one that is. */
  constructor(private readonly topic: string) {}

  /** Reads the topic whole, then follows it. Throws what followCompacted throws (the process does not start). */
  static async start(kafka: Kafka, topic: string, clientId: string, log: Logger): Promise<FollowedDestinations> {
    const view = new FollowedDestinations(topic);
    view.admin = await openAdmin(kafka);
    try {
      view.following = await followCompacted(
        kafka,
        { topic, groupPrefix: `${clientId}-destinations-view`, label: "destinations", log },
        (key, value, at) => view.apply(key, value, at),
      );
    } catch (error) {
      await view.admin.disconnect();
      throw error;
    }
    return view;
  }

  /** Applies one record read at `at` (follower's callback; public for tests). */
  apply(key: string, value: Buffer | null, at: { partition: number; offset: string }): void {
    applyDestinationRecord(this.destinations, key, value);
    this.applied.set(at.partition, BigInt(at.offset) + 1n);
  }

  /** Whether every partition's records below `ends` (partition -> end offset) have been applied. */
  reached(ends: readonly { partition: number; high: string }[]): boolean {
    return ends.every((p) => BigInt(p.high) === 0n || (this.applied.get(p.partition) ?? 0n) >= BigInt(p.high));
  }

  async current(): Promise<ReadonlyMap<string, WebhookDestination>> {
    const ends = await this.admin!.fetchTopicOffsets(this.topic);
    const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
    while (!this.reached(ends)) {
      if (Date.now() > deadline) throw new Error(`${this.topic} not followed to its end within ${CATCH_UP_TIMEOUT_MS} ms`);
      await sleep(CATCH_UP_POLL_MS);
    }
    return this.destinations;
  }

  /** Stops following. */
  async stop(): Promise<void> {
    await Promise.all([this.following?.stop(), this.admin?.disconnect()]);
  }
}
