/** Settings of the delivery process, read from the environment once at start (schemas/config.ts). */
import { HEALTH_EVERY_MS } from "./health";
import typia, { tags } from "typia";
import {
  ClickHouseConfig,
  Env,
  KafkaConfig,
  LogLevel,
  Name,
  Positive,
  bool,
  clickhouseConfig,
  int,
  kafkaConfig,
} from "../../schemas/config";
import { SECRET_KEY_MIN_CHARS } from "../../schemas/destinations";
import { DEFAULT_HORIZON_MS } from "./answer";

/**
 * Each destination consumer's session timeout, ms (kafkajs's default, set explicitly): a member
 * that does not heartbeat for this long is evicted and its partitions go to another member.
 */
export const SESSION_TIMEOUT_MS = 30_000;

/**
 * The longest DELIVER_TIMEOUT_MS, ms: an attempt is one stretch without a heartbeat, so it ends
 * well within SESSION_TIMEOUT_MS (10 s to spare for a heartbeat, a commit and a slow broker), and
 * a member is never evicted, its request read again and sent by another, while it is still sending.
 */
export const MAX_TIMEOUT_MS = 20_000;

/** The delivery process's settings. */
export interface DeliverConfig {
  /** Prefix of each destination's consumer group (DELIVER_GROUP_PREFIX): `<prefix>-<destinationId>`. */
  groupPrefix: Name;
  /** One attempt's whole exchange, ms (DELIVER_TIMEOUT_MS; at most MAX_TIMEOUT_MS, below SESSION_TIMEOUT_MS). */
  timeoutMs: Positive & tags.Maximum<20000>;
  /** Bytes of an answer read (DELIVER_MAX_ANSWER_BYTES). */
  maxAnswerBytes: Positive;
  /** How long after its receipt a message is still tried, ms (DELIVER_HORIZON_MS; Segment: 4 h). */
  horizonMs: Positive;
  /** How often each destination's health is written to the admin topic, ms (DELIVER_HEALTH_EVERY_MS; readers drop reports 2 min old). */
  healthEveryMs: Positive & tags.Minimum<1000> & tags.Maximum<60000>;
  /** DESTINATIONS_SECRET_KEY; absent: destinations with a secret wait (and say so in the log). */
  secretKey?: string & tags.MinLength<32>;
  allowLinkLocal: boolean;
  httpHost: Name;
  httpPort: number & tags.Type<"uint32"> & tags.Maximum<65535>;
  logLevel: LogLevel;
  kafka: KafkaConfig;
  clickhouse: ClickHouseConfig;
}

/** Parses and checks DELIVER_* and the shared settings. Throws (typia) on a bad value. */
export function deliverConfig(env: Env): DeliverConfig {
  const secretKey = env.DESTINATIONS_SECRET_KEY;
  if (secretKey !== undefined && secretKey !== "" && secretKey.length < SECRET_KEY_MIN_CHARS)
    throw new Error(`DESTINATIONS_SECRET_KEY must have at least ${SECRET_KEY_MIN_CHARS} characters`);
  return typia.assert<DeliverConfig>({
    groupPrefix: env.DELIVER_GROUP_PREFIX ?? "events-deliver",
    timeoutMs: int(env.DELIVER_TIMEOUT_MS, 10_000),
    maxAnswerBytes: int(env.DELIVER_MAX_ANSWER_BYTES, 65_536),
    horizonMs: int(env.DELIVER_HORIZON_MS, DEFAULT_HORIZON_MS),
    healthEveryMs: int(env.DELIVER_HEALTH_EVERY_MS, HEALTH_EVERY_MS),
    ...(secretKey ? { secretKey } : {}),
    allowLinkLocal: bool(env.DESTINATIONS_ALLOW_LINK_LOCAL, "DESTINATIONS_ALLOW_LINK_LOCAL"),
    httpHost: env.DELIVER_HTTP_HOST ?? "127.0.0.1",
    httpPort: int(env.DELIVER_HTTP_PORT, 3003),
    logLevel: (env.LOG_LEVEL ?? "info") as LogLevel,
    kafka: kafkaConfig(env),
    clickhouse: clickhouseConfig(env),
  });
}
