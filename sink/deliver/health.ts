/**
 * A delivery process's reports of the destinations it runs, for the admin API's health route
 * (deploy/admin/routes-health.ts): every HEALTH_EVERY_MS, one `destination-health` record per
 * destination (schemas/admin/records.ts DestinationHealthRecord: its last 15 minutes of outcomes
 * and its oldest waiting message, from sink/deliver/window.ts) to the admin topic, which every
 * ingest follows, keyed `destination-health:<destinationId>:<instanceId>` with an instance id
 * made at each start, so processes never overwrite each other's reports. Written acknowledged by
 * every in-sync replica (acks=all), one write at a time, never on the delivery path: a failed
 * write is logged (once until one succeeds) and the next interval writes again. A destination no
 * longer run here (paused, removed) gets a tombstone at the next write; a clean stop writes a
 * tombstone for every key written; a killed process's reports stay, and readers ignore a report
 * older than 2 minutes. Nothing throws.
 */
import { randomBytes } from "node:crypto";
import type { Producer } from "kafkajs";
import type { Logger } from "pino";
import { PeriodicWrite, sendAdmin, type AdminMessage, type SendAdmin } from "../../schemas/admin/periodic";
import { adminKey, type DestinationHealthRecord } from "../../schemas/admin/records";
import type { DestinationNow, RecentDeliveries } from "./window";

/** How often each process reports its destinations, ms. */
export const HEALTH_EVERY_MS = 30_000;
/** How long one write of reports may retry before it is given up (the next interval writes again), ms. */
export const HEALTH_SEND_TIMEOUT_MS = 10_000;
/** Records per write at most: a process running thousands of destinations writes them in several. */
export const HEALTH_RECORDS_PER_SEND = 500;

/** One write of records to the admin topic (acks=all, bounded); `value` null: a tombstone. Rejects when Kafka does not take it. */
export type { SendAdmin };

/** A process's instance id: 16 random lower-case hex digits (schemas/admin/records.ts InstanceId). */
export function newInstanceId(): string {
  return randomBytes(8).toString("hex");
}

/** The records telling `destinations` as instance `instanceId` saw them at `at`. Pure. */
export function healthRecords(destinations: readonly DestinationNow[], instanceId: string, at: Date): DestinationHealthRecord[] {
  return destinations.map((d) => ({
    kind: "destination-health",
    destinationId: d.destinationId,
    workspaceId: d.workspaceId,
    instanceId,
    at: at.toISOString(),
    delivered: d.delivered,
    retried: d.retried,
    failed: d.failed,
    oldestWaitingSeconds: Math.round(d.oldestWaitingSeconds * 1000) / 1000,
  }));
}

/** What a HealthPublisher is given. */
export interface HealthDeps {
  send: SendAdmin;
  recent: RecentDeliveries;
  instanceId: string;
  log: Logger;
  /** Default HEALTH_EVERY_MS. */
  everyMs?: number;
  /** The clock, ms since the epoch; default Date.now. */
  now?: () => number;
}

/** Writes the reports on a timer (see the module comment). */
export class HealthPublisher {
  /** Keys that may hold a report of ours: written, and not since removed by a tombstone Kafka took. */
  private written = new Set<string>();
  private warned = false;
  private readonly writes: PeriodicWrite<AdminMessage>;

  constructor(private readonly deps: HealthDeps) {
    this.writes = new PeriodicWrite<AdminMessage>({
      send: deps.send,
      everyMs: deps.everyMs ?? HEALTH_EVERY_MS,
      take: () => this.messages(),
      messages: (messages) => messages,
      perSend: HEALTH_RECORDS_PER_SEND,
      onWritten: (messages) => {
        this.written = reported(messages);
        this.warned = false;
      },
      onFailed: (messages, error) => {
        this.written = new Set([...this.written, ...reported(messages)]);
        if (!this.warned) this.deps.log.warn({ err: error }, "destination health not reported; written again at the next interval");
        this.warned = true;
      },
    });
  }

  /** Writes every `everyMs` from now on. */
  start(): void {
    this.writes.start();
  }

  /** Keys that may hold a report of this process now. */
  get keys(): string[] {
    return [...this.written];
  }

  /** Writes the reports of now and the tombstones of destinations no longer run; while a write is under way, waits for it instead. */
  async publish(): Promise<void> {
    await this.writes.write();
  }

  /** Stops the timer and removes every report of this process (one try: if Kafka refuses, they go stale in 2 minutes). */
  async stop(): Promise<void> {
    await this.writes.stop();
    if (this.written.size === 0) return;
    try {
      await this.writes.send([...this.written].map((key) => ({ key, value: null })));
      this.written.clear();
    } catch (error) {
      this.deps.log.warn({ err: error }, "destination health not removed at the stop; readers ignore it once 2 minutes old");
    }
  }

  /** The reports of now, then a tombstone for each key written before that they do not cover. */
  private messages(): AdminMessage[] {
    const nowMs = (this.deps.now ?? Date.now)();
    const records = healthRecords(this.deps.recent.now(nowMs), this.deps.instanceId, new Date(nowMs));
    const keys = new Set(records.map(adminKey));
    return [
      ...records.map((r) => ({ key: adminKey(r), value: JSON.stringify(r) })),
      ...[...this.written].filter((key) => !keys.has(key)).map((key) => ({ key, value: null })),
    ];
  }
}

/** The keys of the reports (not the tombstones) among `messages`. */
function reported(messages: readonly AdminMessage[]): Set<string> {
  return new Set(messages.filter((m) => m.value !== null).map((m) => m.key));
}

/**
 * Starts the reports of `recent` to the admin topic `topic` through `producer` (connected; each
 * write acks=all, bounded by HEALTH_SEND_TIMEOUT_MS) every `everyMs`, under a new instance id.
 * Stop it with stop().
 */
export function startHealth(
  producer: Producer,
  topic: string,
  recent: RecentDeliveries,
  log: Logger,
  everyMs = HEALTH_EVERY_MS,
): HealthPublisher {
  const publisher = new HealthPublisher({
    send: sendAdmin(producer, topic, HEALTH_SEND_TIMEOUT_MS),
    recent,
    instanceId: newInstanceId(),
    log,
    everyMs,
  });
  publisher.start();
  return publisher;
}
