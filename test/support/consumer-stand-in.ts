/**
 * A stand-in for the kafkajs Consumer object, for the unit tests of what reacts to its crashes
 * (schemas/kafka/reconnect.ts, sink/loop/consumer.ts): it records the lifecycle calls made to it, its
 * first `failConnects` connects fail, and `crash(restart)` emits kafkajs's `consumer.crash`.
 */
import { EventEmitter } from "node:events";
import type { Consumer, ConsumerRunConfig } from "kafkajs";

/** The stand-in, the calls made to it in order, and its event emitter. */
export interface ConsumerStandIn {
  consumer: Consumer;
  calls: string[];
  emitter: EventEmitter;
  /** Emits `consumer.crash` as kafkajs does when it gives up on a group coordinator. */
  crash(restart: boolean): void;
  /** The configs `run` was called with (its eachBatch, to hand batches to). */
  runs: ConsumerRunConfig[];
}

/** A consumer whose first `failConnects` connects throw ECONNREFUSED. */
export function consumerStandIn(failConnects = 0): ConsumerStandIn {
  const calls: string[] = [];
  const runs: ConsumerRunConfig[] = [];
  const emitter = new EventEmitter();
  let connectsLeft = failConnects;
  const consumer = {
    events: { CRASH: "consumer.crash", GROUP_JOIN: "consumer.group_join" },
    on: (event: string, listener: (e: unknown) => void) => emitter.on(event, listener),
    connect: async () => {
      calls.push("connect");
      if (connectsLeft-- > 0) throw new Error("connect ECONNREFUSED");
    },
    subscribe: async () => void calls.push("subscribe"),
    run: async (config: ConsumerRunConfig) => {
      calls.push("run");
      runs.push(config);
    },
    pause: () => void calls.push("pause"),
    disconnect: async () => void calls.push("disconnect"),
    commitOffsets: async () => {},
  } as unknown as Consumer;
  const crash = (restart: boolean) =>
    emitter.emit("consumer.crash", { payload: { error: new Error("Failed to find group coordinator"), groupId: "g", restart } });
  return { consumer, calls, emitter, crash, runs };
}
