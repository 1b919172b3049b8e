/**
 * The ingest service: connects the producer, then listens. If Kafka is unreachable at start,
 * start() throws (the supervisor restarts it); once running, Kafka failures become 503s and a
 * probe keeps /readyz honest about whether Kafka answers.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type Koa from "koa";
import type Router from "@koa/router";
import type { Admin, Kafka, Producer } from "kafkajs";
import type { Logger } from "pino";
import type { IngestConfig } from "./config";
import { createApp, type AppDeps } from "./http/app";
import type { AppCollaborators, AppProbes } from "./http/app-deps";
import { Enricher, defaultCountryDbPath, openCountryDb } from "./records/enrich";
import { CatalogCaps, SentShapes } from "./records/catalog";
import { WriteKeys } from "./admission/auth";
import { acceptedKeys, readKeys, watchKeysFile, type WriteKeyEntry } from "./admission/keys";
import { writeKeyUse } from "./admission/key-usage";
import { AdminTokens, FailedAttempts } from "./admission/tokens";
import { adminGuard, adminServer, metricsApp, type AdminExtension, type AdminGuard } from "./http/admin";
import { AdminBook, followAdmin } from "../schemas/admin/book";
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

/**
 * Starts the ingest service; `admin` adds routes to the admin port (the admin API: deploy/admin/).
 * Throws if the producer cannot connect or the admin topic cannot be read.
 */
export async function start(config: IngestConfig, log: Logger, admin?: AdminExtension): Promise<RunningIngest> {
  const kafka = createKafka(config.kafka);
  const producer = createProducer(kafka); // a failed send is sent again whole by kafkaSend
  await producer.connect();
  const kafkaAdmin = await openAdmin(kafka);
  const probe = kafkaProbe(kafkaAdmin, config.kafka.topic);
  const metrics = ingestMetrics();
  const { accumulator, maxBytes } = await accumulatorFor(kafka, producer, config, metrics);
  // Keys and tokens of the admin topic: read whole before the port opens, then followed.
  const book = new AdminBook();
  const adminFollowing = await followAdmin(kafka, config.kafka.adminTopic, config.kafka.clientId, book, log);
  const keys = followKeys(config, book, log);
  const timeoutMs = config.produceTimeoutMs;
  const stopKeyUse = writeKeyUse(producer, config.kafka.adminTopic, () => keys.writeKeys.takeUsed(), log, { timeoutMs });
  const guard = adminGuard(new AdminTokens(config.adminToken, book), new FailedAttempts());
  const extension = await admin?.({ kafka, book, guard, configuredKeys: keys.configured, log });
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
  const metricsServer = await listenAdmin(config, metrics, tail, { keysOf: keys.keysOf, guard, routers: extension?.routers ?? [] }, log);
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
      disconnect: async () => {
        await Promise.all([stopKeyUse(), extension?.stop()]);
        await Promise.all([producer.disconnect(), kafkaAdmin.disconnect(), suppressions.stop(), planning.stop(), adminFollowing.stop()]);
      },
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

/**
 * The write keys accepted (ingest/admission/keys.ts acceptedKeys): those of WRITE_KEYS and the keys
 * file, read again when it changes, and the admin topic's, applied as `book` reads them.
 */
function followKeys(
  config: IngestConfig,
  book: AdminBook,
  log: Logger,
): { writeKeys: WriteKeys; keysOf: () => WriteKeyEntry[]; configured: () => WriteKeyEntry[]; unwatch: () => void } {
  const configured = () => [...config.writeKeys, ...(config.writeKeysFile ? readKeys(config.writeKeysFile) : [])];
  let fromConfig = configured();
  const keysOf = () => acceptedKeys(fromConfig, book.keys.values());
  const writeKeys = new WriteKeys(keysOf());
  if (writeKeys.size === 0)
    log.warn("no write keys (WRITE_KEYS, WRITE_KEYS_FILE, the admin topic): every request will get 401 until one is created");
  book.onKeysChange(() => writeKeys.replace(keysOf()));
  const reload = () => {
    fromConfig = configured();
    writeKeys.replace(keysOf());
  };
  const unwatch = config.writeKeysFile ? watchKeysFile(config.writeKeysFile, reload, log) : () => {};
  return { writeKeys, keysOf, configured: () => fromConfig, unwatch };
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

/** The admin server (metrics, the live view of `tail`, the admin API's `routers`), listening on INGEST_METRICS_PORT. */
async function listenAdmin(
  config: IngestConfig,
  metrics: IngestMetrics,
  tail: LiveThread,
  parts: { keysOf: () => WriteKeyEntry[]; guard: AdminGuard; routers: Router[] },
  log: Logger,
): Promise<Server> {
  const { keysOf, guard } = parts;
  const live = liveRouter({
    tail,
    guard,
    maxViewers: config.liveMaxViewers,
    maxRecent: config.liveMaxRecent,
    workspaces: () => keysOf().map((k) => k.workspaceId),
    metrics,
    log,
  });
  const metricsServer = adminServer(metricsApp(metrics, live, ...parts.routers), config.metricsMaxConnections);
  metricsServer.listen(config.metricsPort, config.metricsHost);
  await once(metricsServer, "listening");
  return metricsServer;
}
