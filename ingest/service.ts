/**
 * The ingest service: connects the producer, then listens. If Kafka is unreachable at start,
 * start() throws (the supervisor restarts it); once running, Kafka failures become 503s and a
 * probe keeps /readyz honest about whether Kafka answers.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { IngestConfig } from "./config";
import { createApp, type AppDeps } from "./app";
import { Enricher, defaultCountryDbPath, openCountryDb } from "./enrich";
import { CatalogCaps, SentShapes } from "./catalog";
import { WriteKeys } from "./auth";
import { readKeys, watchKeysFile } from "./keys";
import { adminServer, ingestMetrics, metricsApp } from "./metrics";
import { openapiDocument } from "./openapi";
import { Accumulator, kafkaSend } from "./producer";
import { standInState } from "../schemas/kafka/stand-ins";
import { recordLimit, topicMaxMessageBytes } from "../schemas/kafka/limits";
import { createKafka } from "../schemas/kafka/client";
import { createProducer } from "../schemas/kafka/producer";
import { settledWithin, withDeadline } from "../schemas/runtime/deadline";
import { PrivacyList } from "../schemas/privacy/list";
import { followSuppressions } from "../schemas/privacy/follower";
import { TokenBuckets } from "./ratelimit";
import { UnkeyedGate } from "./networks";
import { hostPolicy } from "./settings";
import { liveRouter } from "./live/routes";
import { LiveThread } from "./live/thread";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- package.json sits outside rootDir, so it cannot be imported
const VERSION: string = (require("../../package.json") as { version: string }).version;

/** How often the readiness probe asks Kafka for the topic's metadata, ms. */
const PROBE_INTERVAL_MS = 2_000;

/**
 * The live tail's bounds (ingest/live/thread.ts): records and bytes kept for /live/recent, records
 * read back per partition at start and how long to wait for them, ms, how long its worker runs
 * after its last viewer, ms, and the worker's V8 old space, MB (the 16 MB of record values, their
 * decoded items about as much again, and kafkajs's fetches).
 */
const LIVE_TAIL = {
  recent: { records: 10_000, bytes: 16 * 1024 * 1024 },
  backfill: 1_000,
  backfillWaitMs: 10_000,
  idleMs: 60_000,
  heapMb: 128,
};

/** A running ingest service. */
export interface RunningIngest {
  /** The bound address (port 0 in config picks a free one). */
  address: AddressInfo;
  /**
   * Stops in order: /readyz turns 503 while requests are still served for `drainDelayMs` (load
   * balancers stop sending) and every answer carries `Connection: close`, the server stops
   * accepting and waits for in-flight requests (at most `requestTimeoutMs + produceTimeoutMs`,
   * then the connections left are cut), pending records are sent and acknowledged and the Kafka
   * clients disconnect (at most `produceTimeoutMs` for both: stopBoundMs).
   */
  stop: () => Promise<void>;
}

/**
 * The longest a stop takes, ms: the drain delay, the longest request (to arrive, then Kafka's
 * ack; its connection is cut past that), then `produceTimeoutMs` for the last sends and the Kafka
 * clients' disconnects. The manifests' terminationGracePeriodSeconds adds the preStop sleep.
 */
export function stopBoundMs(config: Pick<IngestConfig, "drainDelayMs" | "requestTimeoutMs" | "produceTimeoutMs">): number {
  return config.drainDelayMs + config.requestTimeoutMs + 2 * config.produceTimeoutMs;
}

/** What the edge takes from the service around it: the producer, the keys, the suppressions and the state. */
export type EdgeWiring = Pick<AppDeps, "writeKeys" | "privacy" | "produce" | "producerBytesHeld" | "isReady" | "isDraining" | "metrics"> & {
  /** The largest Kafka record the topics take (schemas/kafka/limits.ts recordLimit), bytes. */
  maxRecordBytes: number;
};

/**
 * The ingest app's dependencies as the service runs it, from its config and `wiring`: limits,
 * rate and unkeyed buckets, enrichment, catalog caps. The bench builds the app with it around a
 * producer that does nothing (test/bench/request-cost.ts). Throws when the country database cannot be read.
 */
export function edgeDeps(config: IngestConfig, log: Logger, wiring: EdgeWiring): AppDeps {
  const { maxRecordBytes, ...parts } = wiring;
  const { metrics } = parts;
  return {
    ...parts,
    limits: {
      maxRequestBytes: config.maxRequestBytes,
      maxMessageBytes: config.maxMessageBytes,
      maxBatchMessages: config.maxBatchMessages,
      maxJsonDepth: config.maxJsonDepth,
      maxRecordBytes,
    },
    trustedProxies: config.trustedProxies,
    maxInflightBytes: config.maxInflightBytes,
    bodyTimeoutMs: config.bodyTimeoutMs,
    ...(config.publicUrl === undefined ? {} : { publicUrl: config.publicUrl }),
    allowedHosts: hostPolicy(config.allowedHosts),
    unkeyedGate: new UnkeyedGate(config.unkeyed),
    corsOrigins: config.corsOrigins,
    retryAfterSeconds: config.retryAfterSeconds,
    rateLimit: new TokenBuckets(config.rateLimitPerSecond, config.rateLimitBurst),
    bytesLimit: new TokenBuckets(config.rateLimitBytesPerSecond, config.rateLimitBytesBurst),
    openapi: openapiDocument(VERSION),
    log,
    contextPolicy: {
      enricher: new Enricher(openCountryDb(config.geoipDatabase ?? defaultCountryDbPath()), {
        onUnparsed: () => metrics.agentsUnparsed.inc(),
      }),
      anonymizeIp: config.ipAnonymize,
      shapes: new SentShapes(undefined, undefined, new CatalogCaps(config.catalogCaps, (cap) => metrics.catalogOverCap.inc({ cap }))),
    },
  };
}

/** Starts the ingest service. Throws if the producer cannot connect. */
export async function start(config: IngestConfig, log: Logger): Promise<RunningIngest> {
  const kafka = createKafka(config.kafka);
  const producer = createProducer(kafka); // a failed send is sent again whole by kafkaSend
  const admin = kafka.admin({ retry: { retries: 0 } });
  await producer.connect();
  await admin.connect();

  let kafkaAnswers = true;
  let accepting = true;
  const probe = setInterval(() => {
    withDeadline(admin.fetchTopicMetadata({ topics: [config.kafka.topic] }), PROBE_INTERVAL_MS, () => new Error("no answer")).then(
      () => (kafkaAnswers = true),
      () => (kafkaAnswers = false),
    );
  }, PROBE_INTERVAL_MS);

  const metrics = ingestMetrics();
  const { topic, rejectedTopic } = config.kafka;
  // One send never passes the smaller of both topics' limits (a bigger one is refused whole).
  const maxBytes = Math.min(
    await topicMaxMessageBytes(kafka, topic, config.kafka.maxMessageBytes),
    await topicMaxMessageBytes(kafka, rejectedTopic, config.kafka.maxMessageBytes),
  );
  const accumulator = new Accumulator(kafkaSend(producer, { topic, rejectedTopic }, config.produceTimeoutMs, metrics), {
    lingerMs: config.produceLingerMs,
    maxBatch: config.produceMaxBatch,
    maxBytes,
    timeoutMs: config.produceTimeoutMs,
  });

  // Keys from WRITE_KEYS and the keys file, which is re-read when it changes (ingest/keys.ts).
  const keysOf = () => [...config.writeKeys, ...(config.writeKeysFile ? readKeys(config.writeKeysFile) : [])];
  const writeKeys = new WriteKeys(keysOf());
  if (writeKeys.size === 0) log.warn("no write keys (WRITE_KEYS, WRITE_KEYS_FILE): every request will get 401");
  const unwatchKeys = config.writeKeysFile ? watchKeysFile(config.writeKeysFile, () => writeKeys.replace(keysOf()), log) : () => {};

  // Users deleted or suppressed: read whole before the port opens, then followed.
  const privacy = new PrivacyList();
  const suppressions = await followSuppressions(kafka, config.kafka.suppressionsTopic, config.kafka.clientId, privacy, log);

  const app = createApp(
    edgeDeps(config, log, {
      writeKeys,
      privacy,
      produce: (records) => accumulator.produce(records),
      producerBytesHeld: () => accumulator.bytesHeld,
      isReady: () => accepting && kafkaAnswers,
      isDraining: () => !accepting,
      maxRecordBytes: recordLimit(maxBytes),
      metrics,
    }),
  );
  // Slow clients (headers or body trickled) are cut off by these timeouts, checked every second.
  const server = createServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      connectionsCheckingInterval: 1_000,
    },
    app.callback(),
  );
  server.listen(config.port, config.host);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  const tail = new LiveThread({
    kafka: config.kafka,
    topics: { accepted: topic, refused: rejectedTopic },
    logLevel: config.logLevel,
    ...LIVE_TAIL,
    log,
  });
  const live = liveRouter({
    tail,
    ...(config.adminToken === undefined ? {} : { adminToken: config.adminToken }),
    maxViewers: config.liveMaxViewers,
    maxRecent: config.liveMaxRecent,
    workspaces: () => keysOf().map((k) => k.workspaceId),
    metrics,
    log,
  });
  const metricsServer = adminServer(metricsApp(metrics, live), config.metricsMaxConnections);
  metricsServer.listen(config.metricsPort, config.metricsHost);
  await once(metricsServer, "listening");
  const { address: metricsHost, port: metricsPort } = metricsServer.address() as AddressInfo;
  log.info(
    { host: address.address, port: address.port, metricsHost, metricsPort, topic: config.kafka.topic, kafkajs: standInState() },
    "ingest listening",
  );

  const stop = async () => {
    accepting = false;
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
    clearInterval(probe);
    unwatchKeys();
    metricsServer.closeAllConnections(); // live streams never end by themselves
    const metricsClosed = new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    // Every request is answered by now: what is still unsent or unacknowledged was acknowledged to
    // no client (answered 503, or cut). With a Kafka that does not answer, a send under way waits
    // for kafkajs's request timeout (30 s) and a consumer's disconnect for its fetch, so the last
    // sends and the disconnects get PRODUCE_TIMEOUT_MS together, then are left.
    const kafkaDone = (async () => {
      await accumulator.drain();
      await tail.stop();
      await Promise.all([producer.disconnect(), admin.disconnect(), suppressions.stop()]);
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
  };
  return { address, stop };
}
