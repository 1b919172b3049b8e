/**
 * The ingest's stop, in order (ingest/service.ts RunningIngest.stop says what a client sees): the
 * readiness turns 503 and answers carry `Connection: close` for DRAIN_DELAY_MS, the public server
 * closes and waits for in-flight requests (cutting, after the longest a request may take, those
 * still open: none of them was acknowledged), then the admin server, the producer's last sends,
 * the live tail and every Kafka client, within PRODUCE_TIMEOUT_MS together.
 */
import type { Server } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { settledWithin } from "../schemas/runtime/deadline";
import type { IngestConfig } from "./config";
import type { LiveThread } from "./live/thread";
import type { Accumulator } from "./producer";

/** What a running ingest stops. */
export interface IngestParts {
  server: Server;
  metricsServer: Server;
  accumulator: Accumulator;
  tail: Pick<LiveThread, "stop">;
  probe: { stop: () => void };
  unwatchKeys: () => void;
}

/**
 * Stops `parts` in the order above; `startDraining` turns readiness off and every answer to
 * `Connection: close`, `disconnect` ends the producer, the admin and the suppressions follower.
 * Never throws for Kafka: if it does not answer in time, what it still holds is left (and logged).
 */
export async function stopIngest(
  config: IngestConfig,
  log: Logger,
  parts: IngestParts,
  hooks: { startDraining: () => void; disconnect: () => Promise<unknown> },
): Promise<void> {
  const { server, metricsServer, accumulator, tail } = parts;
  hooks.startDraining();
  await sleep(config.drainDelayMs);
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Each busy connection ends after its answer (Connection: close, set while draining). One
  // still open past the longest a request may take (to arrive, then Kafka's ack) is cut: its
  // request was never acknowledged, so its client sends it again.
  const cut = setTimeout(() => {
    server.getConnections((_, count) => log.warn({ connections: count }, "connections still open at stop: closed"));
    server.closeAllConnections();
  }, config.requestTimeoutMs + config.produceTimeoutMs);
  await closed;
  clearTimeout(cut);
  parts.probe.stop();
  parts.unwatchKeys();
  metricsServer.closeAllConnections(); // live streams never end by themselves
  const metricsClosed = new Promise<void>((resolve) => metricsServer.close(() => resolve()));
  // Every request is answered by now: what is still unsent or unacknowledged was acknowledged to
  // no client (answered 503, or cut). With a Kafka that does not answer, a send under way waits
  // for kafkajs's request timeout (30 s) and a consumer's disconnect for its fetch, so the last
  // sends and the disconnects get PRODUCE_TIMEOUT_MS together, then are left.
  const kafkaDone = (async () => {
    await accumulator.drain();
    await tail.stop();
    await hooks.disconnect();
  })();
  const inTime = await settledWithin(kafkaDone, config.produceTimeoutMs);
  await metricsClosed;
  if (inTime) await kafkaDone;
  else
    log.warn(
      { waitedMs: config.produceTimeoutMs, bytesHeld: accumulator.bytesHeld },
      "Kafka did not answer at the stop: its unacknowledged records and the clients' disconnects are left",
    );
  log.info("ingest stopped");
}
