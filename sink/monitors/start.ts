/**
 * What the sink watches beside its loops, for /readyz and /metrics: whether ClickHouse answers a
 * ping, each group's lag, the age of the oldest dead letter not yet replayed, and how many copies
 * the topics and ClickHouse's tables keep (sink/monitors/redundancy.ts). Each is read on its own timer; a
 * failed read is logged at debug and read again at the next tick.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import type { Admin } from "kafkajs";
import type { Logger } from "pino";
import { clientSql } from "../../schemas/clickhouse/client";
import type { SinkConfig } from "../config";
import type { SinkMetrics } from "../metrics";
import { readClickHouseCopies, readKafkaCopies } from "./redundancy";

/** How often /readyz's view of ClickHouse (and the lag) is refreshed, ms. */
const PROBE_INTERVAL_MS = 2_000;
/** How often the copies of the topics and of ClickHouse's tables are read (sink/monitors/redundancy.ts), ms: Prometheus's scrape interval. */
const COPIES_INTERVAL_MS = 15_000;
/** How often the age of the oldest dead letter is read (also at start and after each DLQ send), ms. */
const DLQ_AGE_INTERVAL_MS = 60_000;

/** The running monitors. */
export interface Monitors {
  /** Whether ClickHouse answered the last ping. */
  clickhouseAnswers: () => boolean;
  /** Stops every timer. */
  stop: () => void;
}

/**
 * Starts the monitors: the lag read once before it resolves, then every PROBE_INTERVAL_MS with
 * the ping; the DLQ's age now and every DLQ_AGE_INTERVAL_MS (`refreshDlqAge`); the copies now and
 * every COPIES_INTERVAL_MS. `groups` maps each consumed topic to its group. Never throws.
 */
export async function startMonitors(args: {
  config: SinkConfig;
  client: ClickHouseClient;
  admin: Admin;
  groups: Record<string, string>;
  refreshDlqAge: () => Promise<unknown>;
  metrics: SinkMetrics;
  log: Logger;
}): Promise<Monitors> {
  const { config, client, admin, groups, metrics, log } = args;
  let clickhouseAnswers = true;
  await readLag(admin, groups, metrics).catch((error: unknown) => log.debug({ err: error }, "lag not read"));
  const probe = setInterval(() => {
    client.ping().then(
      (result) => (clickhouseAnswers = result.success),
      () => (clickhouseAnswers = false),
    );
    void readLag(admin, groups, metrics).catch((error: unknown) => log.debug({ err: error }, "lag not read"));
  }, PROBE_INTERVAL_MS);
  void args.refreshDlqAge();
  const dlqAgeTimer = setInterval(() => void args.refreshDlqAge(), DLQ_AGE_INTERVAL_MS);
  const copiesOf = [config.kafka.topic, config.kafka.rejectedTopic, config.kafka.dlqTopic, config.kafka.suppressionsTopic];
  const readCopies = () => {
    readKafkaCopies(admin, copiesOf, metrics.copies).catch((error: unknown) => log.debug({ err: error }, "kafka copies not read"));
    readClickHouseCopies(clientSql(client), config.clickhouse.database, config.clickhouse.cluster, metrics.copies).catch((error: unknown) =>
      log.debug({ err: error }, "clickhouse copies not read"),
    );
  };
  readCopies();
  const copiesTimer = setInterval(readCopies, COPIES_INTERVAL_MS);
  return {
    clickhouseAnswers: () => clickhouseAnswers,
    stop: () => {
      clearInterval(probe);
      clearInterval(dlqAgeTimer);
      clearInterval(copiesTimer);
    },
  };
}

/**
 * Sets `sink_consumer_lag_records` of every partition of each topic: high watermark minus the
 * group's committed offset (the whole partition when nothing is committed). Read from the broker,
 * not from the fetch, so it keeps rising while a flush is stuck. Throws if Kafka does not answer.
 */
async function readLag(admin: Admin, groups: Record<string, string>, metrics: SinkMetrics): Promise<void> {
  for (const [topic, groupId] of Object.entries(groups)) {
    const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
    // -1: nothing committed yet; the lag is then the whole retained partition (from its low mark).
    const done = new Map((committed?.partitions ?? []).filter((p) => p.offset !== "-1").map((p) => [p.partition, BigInt(p.offset)]));
    for (const end of ends) {
      const lag = BigInt(end.high) - (done.get(end.partition) ?? BigInt(end.low));
      metrics.consumerLag.set({ topic, partition: String(end.partition) }, Number(lag > 0n ? lag : 0n));
    }
  }
}
