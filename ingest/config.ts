/** Settings of the ingest service, read from the environment once at start (schemas/config.ts). */
import typia, { tags } from "typia";
import { Env, KafkaConfig, LogLevel, Name, Port, Positive, bool, int, kafkaConfig, list } from "../schemas/config";
import { WriteKeyEntry, parseWriteKeys } from "./admission/keys";

/** Settings of the ingest service. */
export interface IngestConfig {
  /** Listen address (env INGEST_HOST, INGEST_PORT). */
  host: Name;
  port: Port;
  /**
   * The admin port: /metrics and the live view, apart from the public API (env
   * INGEST_METRICS_HOST, default 127.0.0.1 whatever INGEST_HOST says, issue 46 row 5: the live
   * view shows every workspace's events; INGEST_METRICS_PORT, 0 picks a free port).
   */
  metricsHost: Name;
  metricsPort: number & tags.Type<"uint32"> & tags.Maximum<65535>;
  /** Connections the admin port holds at once; past it Node closes new ones at once (env INGEST_METRICS_MAX_CONNECTIONS). */
  metricsMaxConnections: Positive & tags.Maximum<10000>;
  /** env WRITE_KEYS: `key=workspaceId` (or `sha256:<hex>=workspaceId`) pairs, comma-separated. */
  writeKeys: WriteKeyEntry[];
  /**
   * The ingest's public address as SDKs reach it, e.g. `https://ingest.example.com` (env
   * PUBLIC_URL): the settings document points analytics.js and the mobile SDKs there. Unset, the
   * address the settings request came to.
   */
  publicUrl?: Name;
  /** env WRITE_KEYS_FILE: a keys file, one entry per line, re-read when it changes. */
  writeKeysFile?: Name;
  /** pino level: fatal, error, warn, info, debug, trace (env LOG_LEVEL). */
  logLevel: LogLevel;
  /** Largest request body in bytes, after decompression (env MAX_REQUEST_BYTES; Segment: 500 KB). */
  maxRequestBytes: Positive;
  /** Largest stored message in bytes of JSON (env MAX_MESSAGE_BYTES; Segment: 32 KB). */
  maxMessageBytes: Positive;
  /** Most messages in one batch request (env MAX_BATCH_MESSAGES; Segment: 2,500). */
  maxBatchMessages: Positive;
  /** Deepest nesting of arrays/objects in a body (env MAX_JSON_DEPTH). */
  maxJsonDepth: Positive;
  /** Messages per second per workspace and process; 0 is no limit (env RATE_LIMIT_PER_SECOND). */
  rateLimitPerSecond: number & tags.Type<"uint32">;
  /** Token bucket size: messages accepted at once after a quiet spell (env RATE_LIMIT_BURST). */
  rateLimitBurst: Positive;
  /**
   * Decoded body bytes per second per workspace and process, paid by every body read whatever
   * its answer; 0 is no limit (env RATE_LIMIT_BYTES_PER_SECOND). RATE_LIMIT_BYTES_BURST: the bucket.
   */
  rateLimitBytesPerSecond: number & tags.Type<"uint32">;
  rateLimitBytesBurst: Positive;
  /** Slow clients: whole headers within, whole request within, idle keep-alive, ms (env INGEST_HEADERS_TIMEOUT_MS, INGEST_REQUEST_TIMEOUT_MS, INGEST_KEEPALIVE_TIMEOUT_MS). */
  headersTimeoutMs: Positive;
  requestTimeoutMs: Positive;
  keepAliveTimeoutMs: Positive;
  /**
   * A request's whole body must arrive within this many ms of its headers, else 408 and the
   * connection is closed (env INGEST_BODY_TIMEOUT_MS): a client that sends nothing or trickles
   * is dropped long before INGEST_REQUEST_TIMEOUT_MS.
   */
  bodyTimeoutMs: Positive;
  /** On SIGTERM, how long /readyz answers 503 while requests are still served, ms (env INGEST_DRAIN_DELAY_MS). */
  drainDelayMs: number & tags.Type<"uint32">;
  /**
   * Proxies you run in front of the ingest, each appending to X-Forwarded-For (env TRUST_PROXY:
   * a count; `true` is 1; 0 or unset ignores the header). The client address is the entry that
   * many hops from the right; entries left of it are whatever the client claimed.
   */
  trustedProxies: number & tags.Type<"uint32"> & tags.Maximum<16>;
  /**
   * Bytes held at once - request bodies being read plus records Kafka has not settled - before
   * answering 503 + Retry-After (env INGEST_MAX_INFLIGHT_BYTES). Memory is a few times this:
   * each body is held as bytes, text, parsed objects and records.
   */
  maxInflightBytes: Positive;
  /**
   * What requests without a checked writeKey may cost, per client network and per process
   * (ingest/admission/networks.ts; env UNKEYED_FAILURES_PER_SECOND, UNKEYED_FAILURE_BURST,
   * UNKEYED_BYTES_PER_SECOND, UNKEYED_BYTES_BURST, UNKEYED_PROCESS_BYTES_PER_SECOND,
   * UNKEYED_PROCESS_BYTES_BURST; a rate of 0 turns that bucket off).
   */
  unkeyed: {
    failuresPerSecond: number & tags.Minimum<0>;
    failureBurst: Positive;
    bytesPerSecond: number & tags.Type<"uint32">;
    bytesBurst: Positive;
    processBytesPerSecond: number & tags.Type<"uint32">;
    processBytesBurst: Positive;
    maxNetworks: Positive;
  };
  /**
   * Hosts the settings document may name when PUBLIC_URL is unset (env INGEST_ALLOWED_HOSTS,
   * comma-separated `name` or `name:port`; ingest/http/settings.ts hostAllowed). Unset: loopback names
   * and IP literals only.
   */
  allowedHosts?: Name;
  /**
   * Processes serving the port (env INGEST_WORKERS; node:cluster). 1 runs no cluster; more puts
   * a primary in front that forks them and forwards SIGTERM. On Kubernetes keep 1 and scale pods.
   */
  workers: Positive & tags.Maximum<64>;
  /** Allowed browser origins for CORS, or `*` (env CORS_ORIGINS, comma-separated). */
  corsOrigins: Name[] & tags.MinItems<1>;
  /** How long records wait to be sent together, ms (env PRODUCE_LINGER_MS). */
  produceLingerMs: number & tags.Type<"uint32">;
  /** Most records in one sendBatch (env PRODUCE_MAX_BATCH). */
  produceMaxBatch: Positive;
  /** Deadline for the broker's ack of a request's records, ms; past it the answer is 503 (env PRODUCE_TIMEOUT_MS). */
  produceTimeoutMs: Positive;
  /** Retry-After seconds sent with a 503 (env RETRY_AFTER_SECONDS). */
  retryAfterSeconds: Positive;
  /**
   * The bearer token of the live view on the admin port (env ADMIN_TOKEN; unset turns it off:
   * every /live request is refused). At least 16 characters; beyond loopback see adminTokenProblem.
   */
  adminToken?: string & tags.MinLength<16>;
  /** Live view streams open at once per process (env LIVE_MAX_VIEWERS). */
  liveMaxViewers: Positive & tags.Maximum<1000>;
  /** /live/recent requests served at once per process; more are answered 503 (env LIVE_MAX_RECENT). */
  liveMaxRecent: Positive & tags.Maximum<1000>;
  /**
   * Store context.ip with its host part zeroed (IPv4's last octet, IPv6's last 80 bits), in events
   * and refused items; the country is looked up first (env IP_ANONYMIZE: true/false, default false).
   */
  ipAnonymize: boolean;
  /**
   * An MMDB country database to read instead of the bundled DB-IP Lite one, or `off` for no
   * country column (env GEOIP_DATABASE). Records of `{country_code}` or MaxMind's `{country: {iso_code}}`.
   */
  geoipDatabase?: Name;
  /**
   * New catalog names and shapes one workspace may add per UTC day in this process, past which
   * its messages are stored but counted in the catalog's over-cap row (env
   * CATALOG_EVENT_NAMES_PER_DAY, CATALOG_PAGE_NAMES_PER_DAY, CATALOG_SHAPES_PER_DAY; ingest/records/catalog.ts).
   */
  catalogCaps: { eventNamesPerDay: Positive; pageNamesPerDay: Positive; shapesPerDay: Positive };
  kafka: KafkaConfig;
}

/**
 * Parses and checks the ingest settings. Throws TypeGuardError on a bad value, and an Error
 * naming both settings and their values when two contradict each other (ingestContradiction):
 * among them INGEST_HEADERS_TIMEOUT_MS above INGEST_REQUEST_TIMEOUT_MS (node:http refuses to
 * create the server), and INGEST_KEEPALIVE_TIMEOUT_MS not below INGEST_HEADERS_TIMEOUT_MS (older
 * Node releases timed a kept-alive socket's wait for the next request's headers with the headers
 * timeout, so a longer keep-alive cut connections clients were reusing; Node 20.20 does not).
 */
export function ingestConfig(env: Env): IngestConfig {
  const config = typia.assert<IngestConfig>({
    host: env.INGEST_HOST ?? "127.0.0.1",
    port: int(env.INGEST_PORT, 3000),
    metricsHost: env.INGEST_METRICS_HOST ?? "127.0.0.1",
    metricsPort: int(env.INGEST_METRICS_PORT, 3002),
    metricsMaxConnections: int(env.INGEST_METRICS_MAX_CONNECTIONS, 32),
    writeKeys: parseWriteKeys(list(env.WRITE_KEYS ?? "")),
    ...(env.WRITE_KEYS_FILE ? { writeKeysFile: env.WRITE_KEYS_FILE } : {}),
    ...(env.PUBLIC_URL ? { publicUrl: env.PUBLIC_URL } : {}),
    logLevel: (env.LOG_LEVEL ?? "info") as LogLevel,
    maxRequestBytes: int(env.MAX_REQUEST_BYTES, 500 * 1024),
    maxMessageBytes: int(env.MAX_MESSAGE_BYTES, 32 * 1024),
    maxBatchMessages: int(env.MAX_BATCH_MESSAGES, 2_500),
    maxJsonDepth: int(env.MAX_JSON_DEPTH, 64),
    rateLimitPerSecond: int(env.RATE_LIMIT_PER_SECOND, 100_000),
    rateLimitBurst: int(env.RATE_LIMIT_BURST, 200_000),
    rateLimitBytesPerSecond: int(env.RATE_LIMIT_BYTES_PER_SECOND, 100_000_000),
    rateLimitBytesBurst: int(env.RATE_LIMIT_BYTES_BURST, 200_000_000),
    headersTimeoutMs: int(env.INGEST_HEADERS_TIMEOUT_MS, 10_000),
    requestTimeoutMs: int(env.INGEST_REQUEST_TIMEOUT_MS, 30_000),
    keepAliveTimeoutMs: int(env.INGEST_KEEPALIVE_TIMEOUT_MS, 5_000),
    bodyTimeoutMs: int(env.INGEST_BODY_TIMEOUT_MS, 10_000),
    drainDelayMs: int(env.INGEST_DRAIN_DELAY_MS, 1_000),
    trustedProxies: env.TRUST_PROXY === "true" ? 1 : env.TRUST_PROXY === "false" ? 0 : int(env.TRUST_PROXY, 0),
    maxInflightBytes: int(env.INGEST_MAX_INFLIGHT_BYTES, 32 * 1024 * 1024),
    unkeyed: {
      failuresPerSecond: Number(env.UNKEYED_FAILURES_PER_SECOND ?? 1),
      failureBurst: int(env.UNKEYED_FAILURE_BURST, 60),
      bytesPerSecond: int(env.UNKEYED_BYTES_PER_SECOND, 512 * 1024),
      bytesBurst: int(env.UNKEYED_BYTES_BURST, 8 * 1024 * 1024),
      processBytesPerSecond: int(env.UNKEYED_PROCESS_BYTES_PER_SECOND, 4 * 1024 * 1024),
      processBytesBurst: int(env.UNKEYED_PROCESS_BYTES_BURST, 32 * 1024 * 1024),
      maxNetworks: int(env.UNKEYED_MAX_NETWORKS, 100_000),
    },
    ...(env.INGEST_ALLOWED_HOSTS ? { allowedHosts: env.INGEST_ALLOWED_HOSTS } : {}),
    workers: int(env.INGEST_WORKERS, 1),
    corsOrigins: list(env.CORS_ORIGINS ?? "*"),
    produceLingerMs: int(env.PRODUCE_LINGER_MS, 1),
    produceMaxBatch: int(env.PRODUCE_MAX_BATCH, 10_000),
    produceTimeoutMs: int(env.PRODUCE_TIMEOUT_MS, 10_000),
    retryAfterSeconds: int(env.RETRY_AFTER_SECONDS, 5),
    ...(env.ADMIN_TOKEN ? { adminToken: env.ADMIN_TOKEN } : {}),
    liveMaxViewers: int(env.LIVE_MAX_VIEWERS, 8),
    liveMaxRecent: int(env.LIVE_MAX_RECENT, 4),
    ipAnonymize: bool(env.IP_ANONYMIZE, "IP_ANONYMIZE"),
    ...(env.GEOIP_DATABASE ? { geoipDatabase: env.GEOIP_DATABASE } : {}),
    catalogCaps: {
      eventNamesPerDay: int(env.CATALOG_EVENT_NAMES_PER_DAY, 2_000),
      pageNamesPerDay: int(env.CATALOG_PAGE_NAMES_PER_DAY, 2_000),
      shapesPerDay: int(env.CATALOG_SHAPES_PER_DAY, 10_000),
    },
    kafka: kafkaConfig(env),
  });
  const contradiction = ingestContradiction(config);
  if (contradiction !== undefined) throw new Error(contradiction);
  return config;
}

/**
 * The first pair of ingest settings that contradict each other, as a message naming both
 * settings and their values; undefined if none. Pure.
 */
export function ingestContradiction(c: IngestConfig): string | undefined {
  // node:http's createServer throws ERR_OUT_OF_RANGE when headersTimeout > requestTimeout.
  if (c.headersTimeoutMs > c.requestTimeoutMs) {
    return `INGEST_HEADERS_TIMEOUT_MS (${c.headersTimeoutMs}) is above INGEST_REQUEST_TIMEOUT_MS (${c.requestTimeoutMs}): the headers are part of the request, and Node's HTTP server refuses to start`;
  }
  if (c.keepAliveTimeoutMs >= c.headersTimeoutMs) {
    return `INGEST_KEEPALIVE_TIMEOUT_MS (${c.keepAliveTimeoutMs}) must be below INGEST_HEADERS_TIMEOUT_MS (${c.headersTimeoutMs})`;
  }
  if (c.publicUrl !== undefined && !/^https?:\/\/[^/]+\/?$/.test(c.publicUrl))
    return `PUBLIC_URL (${c.publicUrl}) must be http(s)://host[:port]`;
  if (c.metricsPort === c.port) return `INGEST_METRICS_PORT (${c.metricsPort}) must differ from INGEST_PORT: /metrics is not public`;
  if (c.adminToken !== undefined && !isLoopback(c.metricsHost)) {
    const problem = adminTokenProblem(c.adminToken);
    if (problem !== undefined)
      return `ADMIN_TOKEN ${problem}, and the admin port listens beyond loopback (INGEST_METRICS_HOST=${c.metricsHost}): anyone who reaches it would read every workspace's live events. Set a random token (openssl rand -hex 24), or leave INGEST_METRICS_HOST unset (127.0.0.1)`;
  }
  if (c.metricsMaxConnections <= c.liveMaxViewers + c.liveMaxRecent) {
    return `INGEST_METRICS_MAX_CONNECTIONS (${c.metricsMaxConnections}) must exceed LIVE_MAX_VIEWERS + LIVE_MAX_RECENT (${c.liveMaxViewers + c.liveMaxRecent}): a scrape of /metrics needs a connection of its own`;
  }
  if (c.rateLimitPerSecond > 0 && c.rateLimitBurst < c.maxBatchMessages) {
    return `RATE_LIMIT_BURST (${c.rateLimitBurst}) is below MAX_BATCH_MESSAGES (${c.maxBatchMessages}): a full batch could never be accepted`;
  }
  if (c.rateLimitBytesPerSecond > 0 && c.rateLimitBytesBurst < c.maxRequestBytes) {
    return `RATE_LIMIT_BYTES_BURST (${c.rateLimitBytesBurst}) is below MAX_REQUEST_BYTES (${c.maxRequestBytes}): a full body would always leave the bucket in debt`;
  }
  if (c.unkeyed.bytesPerSecond > 0 && c.unkeyed.bytesBurst < c.maxRequestBytes) {
    return `UNKEYED_BYTES_BURST (${c.unkeyed.bytesBurst}) is below MAX_REQUEST_BYTES (${c.maxRequestBytes}): an SDK that puts its key in the body could never send a full batch`;
  }
  if (c.maxMessageBytes > c.maxRequestBytes)
    return `MAX_MESSAGE_BYTES (${c.maxMessageBytes}) is above MAX_REQUEST_BYTES (${c.maxRequestBytes})`;
  if (c.maxInflightBytes < c.maxRequestBytes) {
    return `INGEST_MAX_INFLIGHT_BYTES (${c.maxInflightBytes}) is below MAX_REQUEST_BYTES (${c.maxRequestBytes}): no compressed request could be read`;
  }
  // A refused item's record holds up to MAX_MESSAGE_BYTES of raw JSON plus its reasons (usually a few KB;
  // ingest/records/rejected.ts cuts raw further when the record would pass the producer's limit).
  if (c.maxMessageBytes + 8_192 > c.kafka.maxMessageBytes) {
    return `MAX_MESSAGE_BYTES (${c.maxMessageBytes}) does not fit in KAFKA_MAX_MESSAGE_BYTES (${c.kafka.maxMessageBytes})`;
  }
  if (c.produceTimeoutMs >= c.requestTimeoutMs) {
    return `PRODUCE_TIMEOUT_MS (${c.produceTimeoutMs}) must be below INGEST_REQUEST_TIMEOUT_MS (${c.requestTimeoutMs})`;
  }
  return undefined;
}

/**
 * Tokens that were published, and so guard nothing: the development token `npm start` sets
 * (deploy/local/up.sh, README) and the placeholder the base manifests carried until issue 46.
 */
export const PUBLISHED_ADMIN_TOKENS: readonly string[] = ["dev-admin-token-change-me", "replace-this-development-admin-token"];

/** Least length and distinct characters of ADMIN_TOKEN when the admin port listens beyond loopback. */
export const ADMIN_TOKEN_MIN = { length: 24, distinct: 8 };

/**
 * Why `token` may not guard an admin port reachable from other hosts (a phrase such as `is the
 * development token`), or undefined when it may: a published token (PUBLISHED_ADMIN_TOKENS), one
 * shorter than ADMIN_TOKEN_MIN.length, or one of fewer distinct characters than
 * ADMIN_TOKEN_MIN.distinct (`aaaa...`). `openssl rand -hex 24` passes. Pure.
 */
export function adminTokenProblem(token: string): string | undefined {
  if (PUBLISHED_ADMIN_TOKENS.includes(token)) return "is a published development token";
  if (token.length < ADMIN_TOKEN_MIN.length) return `has ${token.length} characters, fewer than ${ADMIN_TOKEN_MIN.length}`;
  if (new Set(token).size < ADMIN_TOKEN_MIN.distinct) return `has fewer than ${ADMIN_TOKEN_MIN.distinct} distinct characters`;
  return undefined;
}

/**
 * Whether a listen address only accepts connections from this host: `localhost`, 127.0.0.0/8,
 * `::1` (and 127.x written as IPv4-mapped IPv6). `0.0.0.0`, `::`, any other address or name is
 * beyond loopback. Pure.
 */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** Settings of `keys ...`: the keys file it manages (env WRITE_KEYS_FILE). Throws TypeGuardError on a bad value. */
export function keysCommandConfig(env: Env): { writeKeysFile?: Name } {
  return typia.assert<{ writeKeysFile?: Name }>(env.WRITE_KEYS_FILE ? { writeKeysFile: env.WRITE_KEYS_FILE } : {});
}
