/**
 * What the ingest's Koa app (ingest/http/app.ts) is given by the service that runs it
 * (ingest/service.ts edgeDeps) or by a test: settings, the collaborators it calls (write keys,
 * the producer, limits and rate buckets, the privacy list, metrics, the log) and the probes it
 * reads (ready, draining, the producer's bytes held).
 */
import type { Logger } from "pino";
import type { EventRecord } from "../../schemas/envelope";
import type { PrivacyList } from "../../schemas/privacy/list";
import type { PlanBook } from "../records/plan";
import type { WriteKeys } from "../admission/auth";
import type { ContextPolicy } from "../records/build";
import type { Limits } from "../admission/limits";
import type { IngestMetrics } from "../metrics";
import type { UnkeyedGate } from "../admission/networks";
import type { TokenBuckets } from "../admission/ratelimit";
import type { HostPolicy } from "./settings";

/** What the app is told, fixed at start: limits and timeouts, proxies, CORS, the addresses of the settings document, the OpenAPI document and the context policy. */
export interface AppSettings {
  limits: Limits;
  /**
   * Proxies in front of the ingest that append to X-Forwarded-For (0: ignore the header). The
   * client address is the entry that many hops from the right: entries left of it are the
   * client's own claims.
   */
  trustedProxies: number;
  /**
   * Bytes held at once: request bodies (charged as they arrive, then by what parsing them makes;
   * ingest/admission/budget.ts) plus records the producer holds until Kafka settles them
   * (`producerBytesHeld`); past it, 503 + Retry-After.
   */
  maxInflightBytes: number;
  /** A request's whole body must arrive within this many ms of its headers, else 408 (INGEST_BODY_TIMEOUT_MS). */
  bodyTimeoutMs: number;
  /** Allowed CORS origins, or ["*"]. */
  corsOrigins: string[];
  /** Seconds a client should wait after a 503. */
  retryAfterSeconds: number;
  /** PUBLIC_URL: the address SDKs send to, in the settings document; unset, the request's own. */
  publicUrl?: string;
  /**
   * Hosts the settings document may name when PUBLIC_URL is unset (INGEST_ALLOWED_HOSTS; see
   * ingest/http/settings.ts publicAddress): absent, loopback names and IP literals only.
   */
  allowedHosts?: HostPolicy;
  /** The OpenAPI document served at /openapi.json. */
  openapi: object;
  /** Enrichment and IP_ANONYMIZE (ingest/records/enrich.ts); absent: neither. */
  contextPolicy?: ContextPolicy;
}

/** What the app calls: write keys, the producer, the unkeyed gate and the rate buckets, the privacy list, metrics and the log. */
export interface AppCollaborators {
  writeKeys: WriteKeys;
  /** Resolves when the broker acknowledged every record (see Accumulator.produce). */
  produce: (records: EventRecord[]) => Promise<void>;
  /**
   * The work of requests whose writeKey is not checked yet, charged by client network
   * (ingest/admission/networks.ts); absent: not charged (unit tests of other parts).
   */
  unkeyedGate?: UnkeyedGate;
  /** Per-workspace rate limit of batch items (RATE_LIMIT_PER_SECOND; ingest/admission/ratelimit.ts). */
  rateLimit: TokenBuckets;
  /** Per-workspace rate limit of decoded body bytes, paid by every body read (RATE_LIMIT_BYTES_PER_SECOND). */
  bytesLimit: TokenBuckets;
  /** Users deleted or suppressed (schemas/privacy/follower.ts follows the topic); absent: none. */
  privacy?: PrivacyList;
  /** Every workspace's tracking plan (ingest/records/plan.ts follows the topic); absent: none. */
  plans?: PlanBook;
  metrics: IngestMetrics;
  /** Each request logs through a child with its request id; never a writeKey or a body at info. */
  log: Logger;
}

/** What the app reads of the service's state at each request: readiness, draining, and the producer's bytes held. */
export interface AppProbes {
  /** Whether the producer is connected and the service is not shutting down. */
  isReady: () => boolean;
  /**
   * Whether the service is stopping (SIGTERM). Every answer then carries `Connection: close`: a
   * keep-alive client opens its next connection elsewhere (behind kube-proxy, to a pod still
   * ready), and the server's close, which ends only idle connections, is not held open by a
   * client that keeps sending on a busy one.
   */
  isDraining: () => boolean;
  /** Bytes of records pending or in sends Kafka has not settled (Accumulator.bytesHeld). */
  producerBytesHeld: () => number;
}

/**
 * What the app needs from the rest of the service: its settings, its collaborators and its probes,
 * one flat object (a test overrides any field of any group by name).
 */
export type AppDeps = AppSettings & AppCollaborators & AppProbes;
