/**
 * Prometheus metrics of the delivery process (prom-client), on its own registry. Names follow
 * `deliver_<noun>_<unit>`; the destination id is the only label beside a bounded outcome or
 * reason: never a workspace's user, a URL or a header. Beside them, `recent`: each destination's
 * last 15 minutes for its health reports (sink/deliver/window.ts), which process totals cannot tell.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { RecentDeliveries } from "./window";

/** The delivery process's metrics. */
export interface DeliverMetrics {
  registry: Registry;
  /** Messages by outcome: delivered, retried (an attempt that will be made again), failed (kept), skipped (by reason). */
  messages: Counter<"destination" | "outcome">;
  /** Messages no request carried, by reason (type, event, consent, integrations, suppressed, unreadable). */
  skipped: Counter<"destination" | "reason">;
  /** Requests by their answer's class: 2xx, 3xx, 4xx, 5xx, or none (timeout, connection). */
  requests: Counter<"destination" | "answer">;
  /** Seconds from a message's receipt to its delivery. */
  latency: Histogram<"destination">;
  /** Seconds each attempt took. */
  attemptSeconds: Histogram<"destination">;
  /** Age of the oldest message a destination is still trying to deliver, seconds; 0 when none waits. */
  oldestWaiting: Gauge<"destination">;
  /** 1 while the destination's loop runs (0 paused or stopped). */
  running: Gauge<"destination">;
  /** Reports of attempts the live view will not show: too many writes under way, or Kafka refused them. */
  reportsDropped: Counter;
  /** Each destination's outcomes by minute and its oldest waiting message, for its health reports (not exported to Prometheus). */
  recent: RecentDeliveries;
}

/** Registers the metrics on a new registry, with Node's default process metrics. */
export function deliverMetrics(): DeliverMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    messages: new Counter({
      name: "deliver_messages_total",
      help: "Messages by outcome",
      labelNames: ["destination", "outcome"],
      registers,
    }),
    skipped: new Counter({
      name: "deliver_skipped_total",
      help: "Messages sent to no request, by reason",
      labelNames: ["destination", "reason"],
      registers,
    }),
    requests: new Counter({
      name: "deliver_requests_total",
      help: "Requests by answer class",
      labelNames: ["destination", "answer"],
      registers,
    }),
    latency: new Histogram({
      name: "deliver_latency_seconds",
      help: "From a message's receipt to its delivery",
      labelNames: ["destination"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 14400],
      registers,
    }),
    attemptSeconds: new Histogram({
      name: "deliver_attempt_seconds",
      help: "Duration of each attempt",
      labelNames: ["destination"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    oldestWaiting: new Gauge({
      name: "deliver_oldest_waiting_seconds",
      help: "Age of the oldest message being delivered",
      labelNames: ["destination"],
      registers,
    }),
    running: new Gauge({
      name: "deliver_destination_running",
      help: "1 while the destination's loop runs",
      labelNames: ["destination"],
      registers,
    }),
    reportsDropped: new Counter({
      name: "deliver_reports_dropped_total",
      help: "Reports of attempts not written for the live view",
      registers,
    }),
    recent: new RecentDeliveries(),
  };
}

/** The class of an answer for `deliver_requests_total`. */
export function answerClass(status: number | undefined): string {
  return status === undefined ? "none" : `${Math.floor(status / 100)}xx`;
}
