/**
 * The ingest service: connects the producer, then listens. If Kafka is unreachable at start,
 * start() throws (the supervisor restarts it); once running, Kafka failures become 503s.
 */
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import type { Logger } from "pino";
import type { IngestConfig } from "../schemas/config";
import { createApp } from "./app";
import { WriteKeys } from "./auth";
import { openapiDocument } from "./openapi";
import { Accumulator } from "./producer";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const VERSION: string = (require("../../package.json") as { version: string }).version;

/** A running ingest service. */
export interface RunningIngest {
  /** The bound address (port 0 in config picks a free one). */
  address: AddressInfo;
  /**
   * Stops in order: readiness turns 503, the server stops accepting and waits for in-flight
   * requests, pending records are sent and acknowledged, the producer disconnects.
   */
  stop: () => Promise<void>;
}

/** Starts the ingest service. Throws if the producer cannot connect. */
export async function start(config: IngestConfig, log: Logger): Promise<RunningIngest> {
  const kafka = new Kafka({
    clientId: config.kafka.clientId,
    brokers: config.kafka.brokers,
    logLevel: logLevel.WARN,
  });
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  let connected = false;
  let accepting = true;
  producer.on(producer.events.CONNECT, () => (connected = true));
  producer.on(producer.events.DISCONNECT, () => (connected = false));
  await producer.connect();

  const accumulator = new Accumulator(
    async (records) => {
      // acks -1: every in-sync replica has the records before the promise resolves.
      await producer.sendBatch({
        topicMessages: [{ topic: config.kafka.topic, messages: records }],
        acks: -1,
        timeout: config.produceTimeoutMs,
      });
    },
    { lingerMs: config.produceLingerMs, maxBatch: config.produceMaxBatch, timeoutMs: config.produceTimeoutMs },
  );

  const app = createApp({
    writeKeys: new WriteKeys(config.writeKeys),
    produce: (records) => accumulator.produce(records),
    isReady: () => accepting && connected,
    limits: {
      maxRequestBytes: config.maxRequestBytes,
      maxMessageBytes: config.maxMessageBytes,
      maxBatchMessages: config.maxBatchMessages,
    },
    trustProxy: config.trustProxy,
    corsOrigins: config.corsOrigins,
    retryAfterSeconds: config.retryAfterSeconds,
    openapi: openapiDocument(VERSION),
    log,
  });
  const server = app.listen(config.port, config.host);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  log.info({ host: address.address, port: address.port, topic: config.kafka.topic }, "ingest listening");

  const stop = async () => {
    accepting = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
    await accumulator.drain();
    await producer.disconnect();
    log.info("ingest stopped");
  };
  return { address, stop };
}
