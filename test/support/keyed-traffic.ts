/**
 * Keyed traffic beside a hostile load in the live tests: batches of one workspace (the stack's
 * test key in a Basic header, from 127.0.0.1), a few at a time, until told to stop; their
 * statuses and the 99th percentile of their latencies, ms.
 */
import { randomUUID } from "node:crypto";
import type { LiveStack } from "./harness";

/** How keyed traffic is sent: messages per batch, loops at once, and a pause after each batch, ms. */
export interface KeyedTrafficShape {
  messages: number;
  loops: number;
  pauseMs?: number;
}

/** What keyed traffic got: statuses by code, p99 latency (ms), batches sent. */
export interface KeyedFigures {
  statuses: Record<string, number>;
  p99: number;
  n: number;
}

/** Sends keyed batches of `shape` through `stack` until `stop` resolves. */
export async function keyedTraffic(stack: LiveStack, shape: KeyedTrafficShape, stop: Promise<void>): Promise<KeyedFigures> {
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  let done = false;
  void stop.then(() => (done = true));
  const loop = async () => {
    while (!done) {
      const batch = Array.from({ length: shape.messages }, (_, i) => ({
        type: "track",
        event: "Keyed",
        userId: `u-${i}`,
        messageId: randomUUID(),
        properties: { plan: "pro", price: 12.5 },
      }));
      const started = performance.now();
      const status = (await stack.post("/v1/batch", { batch })).status;
      latencies.push(performance.now() - started);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (shape.pauseMs) await new Promise((resolve) => setTimeout(resolve, shape.pauseMs));
    }
  };
  await Promise.all(Array.from({ length: shape.loops }, loop));
  latencies.sort((a, b) => a - b);
  return { statuses, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0, n: latencies.length };
}
