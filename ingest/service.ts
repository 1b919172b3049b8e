/**
 * The ingest service: connects the producer, then listens. If Kafka is unreachable at start,
 * start() throws (the supervisor restarts it); once running, Kafka failures become 503s and a
 * probe keeps /readyz honest about whether Kafka answers.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type Koa from "koa";
import type { Admin, Kafka, Producer } from "kafkajs";
import type { Logger } from "pino";
import type { IngestConfig } from "./config";
import { createApp, type AppDeps } from "./http/app";
import type { AppCollaborators, AppProbes } from "./http/app-deps";
import { Enricher, defaultCountryDbPath, openCountryDb } from "./records/enrich";
import { CatalogCaps, SentShapes } from "./records/catalog";
import { WriteKeys } from "./admission/auth";
import { readKeys, watchKeysFile, type WriteKeyEntry } from "./admission/keys";
import { adminServer, metricsApp } from "./http/admin";
import { ingestMetrics, type IngestMetrics } from "./metrics";
import { openapiDocument } from "./http/openapi";
import { Accumulator, kafkaSend } from "./producer";
import { standInState } from "../schemas/kafka/stand-ins";
import { recordLimit, topicMaxMessageBytes } from "../schemas/kafka/limits";
import { createKafka, openAdmin } from "../schemas/kafka/client";
import { createProducer } from "../schemas/kafka/producer";
import { withDeadline } from "../schemas/runtime/deadline";
import { PrivacyList } from "../schemas/privacy/list";
import { followSuppressions } from "../schemas/privacy/follower";
import { followPlans, PlanBook } from "./records/plan";
import { TokenBuckets } from "./admission/ratelimit";
import { UnkeyedGate } from "./admission/networks";
import { hostPolicy } from "./http/settings";
import { liveRouter } from "./live/routes";
import { LiveThread } from "./live/thread";
import { stopIngest } from "./stop";

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

/**
 * What the edge takes from the service around it: every probe (ingest/http/app-deps.ts AppProbes),
 * and the collaborators the service owns (the producer, the keys, the suppressions, metrics).
 */
export type EdgeWiring = AppProbes &
  Pick<AppCollaborators, "writeKeys" | "privacy" | "plans" | "produce" | "metrics"> & {
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
  await producer.connect();
  const admin = await openAdmin(kafka);
  const probe = kafkaProbe(admin, config.kafka.topic);
  const metrics = ingestMetrics();
  const { accumulator, maxBytes } = await accumulatorFor(kafka, producer, config, metrics);
  const keys = followKeys(config, log);
  // Users deleted or suppressed: read whole before the port opens, then followed.
  const privacy = new PrivacyList();
  const suppressions = await followSuppressions(kafka, config.kafka.suppressionsTopic, config.kafka.clientId, privacy, log);
  // Tracking plans: the same.
  const plans = new PlanBook();
  const planning = await followPlans(kafka, config.kafka.plansTopic, config.kafka.clientId, plans, log);
  let accepting = true;
  const app = createApp(
    edgeDeps(config, log, {
      writeKeys: keys.writeKeys,
      privacy,
      plans,
      produce: (records) => accumulator.produce(records),
      producerBytesHeld: () => accumulator.bytesHeld,
      isReady: () => accepting && probe.answers(),
      isDraining: () => !accepting,
      maxRecordBytes: recordLimit(maxBytes),
      metrics,
    }),
  );
  const server = await listenPublic(config, app);
  const tail = new LiveThread({
    kafka: config.kafka,
    topics: { accepted: config.kafka.topic, refused: config.kafka.rejectedTopic, delivery: config.kafka.deliveriesTopic },
    logLevel: config.logLevel,
    ...LIVE_TAIL,
    log,
  });
  const metricsServer = await listenAdmin(config, metrics, tail, keys.keysOf, log);
  const address = server.address() as AddressInfo;
  const { address: metricsHost, port: metricsPort } = metricsServer.address() as AddressInfo;
  log.info(
    { host: address.address, port: address.port, metricsHost, metricsPort, topic: config.kafka.topic, kafkajs: standInState() },
    "ingest listening",
  );
  const parts = { server, metricsServer, accumulator, tail, probe, unwatchKeys: keys.unwatch };
  const stop = () =>
    stopIngest(config, log, parts, {
      startDraining: () => (accepting = false),
      disconnect: () => Promise.all([producer.disconnect(), admin.disconnect(), suppressions.stop(), planning.stop()]),
    });
  return { address, stop };
}

/** A readiness probe: whether Kafka answered the topic's metadata within PROBE_INTERVAL_MS, asked every PROBE_INTERVAL_MS. */
function kafkaProbe(admin: Admin, topic: string): { answers: () => boolean; stop: () => void } {
  let kafkaAnswers = true;
  const probe = setInterval(() => {
    withDeadline(admin.fetchTopicMetadata({ topics: [topic] }), PROBE_INTERVAL_MS, () => new Error("no answer")).then(
      () => (kafkaAnswers = true),
      () => (kafkaAnswers = false),
    );
  }, PROBE_INTERVAL_MS);
  return { answers: () => kafkaAnswers, stop: () => clearInterval(probe) };
}

/**
 * The producer's accumulator (ingest/producer.ts), whose sends never pass the smaller of the
 * events and rejected topics' limits (a bigger send is refused whole), and that limit, bytes.
 * Throws if Kafka does not answer the topics' configs.
 */
async function accumulatorFor(
  kafka: Kafka,
  producer: Producer,
  config: IngestConfig,
  metrics: IngestMetrics,
): Promise<{ accumulator: Accumulator; maxBytes: number }> {
  const { topic, rejectedTopic } = config.kafka;
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
  return { accumulator, maxBytes };
}

/** The write keys of WRITE_KEYS and the keys file, which is read again when it changes (ingest/admission/keys.ts). */
function followKeys(config: IngestConfig, log: Logger): { writeKeys: WriteKeys; keysOf: () => WriteKeyEntry[]; unwatch: () => void } {
  const keysOf = () => [...config.writeKeys, ...(config.writeKeysFile ? readKeys(config.writeKeysFile) : [])];
  const writeKeys = new WriteKeys(keysOf());
  if (writeKeys.size === 0) log.warn("no write keys (WRITE_KEYS, WRITE_KEYS_FILE): every request will get 401");
  const unwatch = config.writeKeysFile ? watchKeysFile(config.writeKeysFile, () => writeKeys.replace(keysOf()), log) : () => {};
  return { writeKeys, keysOf, unwatch };
}

/** The public server of `app`, listening; slow clients (headers or body trickled) are cut off by its timeouts, checked every second. */
async function listenPublic(config: IngestConfig, app: Koa): Promise<Server> {
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
  return server;
}

/** The admin server (metrics and the live view of `tail`), listening on INGEST_METRICS_PORT. */
async function listenAdmin(
  config: IngestConfig,
  metrics: IngestMetrics,
  tail: LiveThread,
  keysOf: () => WriteKeyEntry[],
  log: Logger,
): Promise<Server> {
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
  return metricsServer;
}
