/**
 * Writes to the admin topic on a timer, never on the caller's path: what the ingests' key use
 * (ingest/admission/key-usage.ts) and the delivery processes' health reports
 * (sink/deliver/health.ts) are written through. Every `everyMs` one write takes its items, turns
 * them into messages and sends them (acks=all, bounded: sendAdmin), one write at a time: a tick
 * while one is under way writes nothing. A failed write is told to the owner (who logs it) and,
 * when asked, its items are handed to the next write. The timer never keeps the process alive;
 * stop() ends it, waits for the write under way and, when asked, writes once more. Nothing throws
 * but send(), whose caller asked for the rejection.
 */
import type { Producer } from "kafkajs";
import { sendWhole } from "../kafka/producer";

/** One message to the admin topic: its key, and its value as JSON (null: a tombstone). */
export interface AdminMessage {
  key: string;
  value: string | null;
}

/** One write of messages to the admin topic (acks=all, bounded). Rejects when Kafka does not take it. */
export type SendAdmin = (messages: AdminMessage[]) => Promise<unknown>;

/**
 * The write of messages to `topic` through `producer` (connected): acknowledged by every in-sync
 * replica (acks=all), sent whole again (sendWhole) until `timeoutMs` (ms from each write's start)
 * passes, then rejects with the last error.
 */
export function sendAdmin(producer: Producer, topic: string, timeoutMs: number): SendAdmin {
  return (messages) => sendWhole(producer, { acks: -1, topicMessages: [{ topic, messages }] }, timeoutMs);
}

/** What a PeriodicWrite is given; `T` is what a write is of (a key's digest, a message). */
export interface PeriodicDeps<T> {
  send: SendAdmin;
  /** Time between writes, ms. */
  everyMs: number;
  /** The items of this write, given those of the last one when it failed and `carry` is set ([] else); none: nothing written. */
  take: (carried: T[]) => T[];
  /** The messages of a write's items. */
  messages: (items: T[]) => AdminMessage[];
  /** Messages per send at most: more go in several sends, one after another; default all in one. */
  perSend?: number;
  /** Whether a failed write's items are handed to the next take; default false. */
  carry?: boolean;
  /** Whether stop() writes once more after the write under way; default false. */
  flushAtStop?: boolean;
  /** Told of each write Kafka took whole. */
  onWritten?: (items: T[]) => void;
  /** Told of each write a send of which rejected (some of its messages may have landed). */
  onFailed: (items: T[], error: unknown) => void;
}

/** Writes to the admin topic on a timer (see the module comment). */
export class PeriodicWrite<T> {
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private stopped = false;
  private carried: T[] = [];

  constructor(private readonly deps: PeriodicDeps<T>) {}

  /** Writes every `everyMs` from now on (an unref'd timer). */
  start(): void {
    this.timer = setInterval(() => void this.write(), this.deps.everyMs);
    this.timer.unref();
  }

  /** Writes once now; while a write is under way, waits for it instead; after stop(), nothing. Never rejects. */
  write(): Promise<void> {
    if (this.sending !== undefined || this.stopped) return this.sending ?? Promise.resolve();
    return this.once();
  }

  /** Stops the timer and waits for the write under way; with `flushAtStop`, writes once more. Never rejects. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.sending;
    if (this.deps.flushAtStop === true) await this.once();
  }

  /** Sends `messages` in sends of at most `perSend`, one after another. Rejects with the first send that does. */
  async send(messages: AdminMessage[]): Promise<void> {
    const perSend = this.deps.perSend ?? Math.max(messages.length, 1);
    for (let i = 0; i < messages.length; i += perSend) await this.deps.send(messages.slice(i, i + perSend));
  }

  /** One write: take, send, tell the owner; what failed is carried when asked. */
  private once(): Promise<void> {
    const items = this.deps.take(this.carried);
    this.carried = [];
    if (items.length === 0) return Promise.resolve();
    this.sending = this.send(this.deps.messages(items))
      .then(
        () => this.deps.onWritten?.(items),
        (error: unknown) => {
          if (this.deps.carry === true) this.carried = items;
          this.deps.onFailed(items, error);
        },
      )
      .finally(() => (this.sending = undefined));
    return this.sending;
  }
}
