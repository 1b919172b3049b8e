/**
 * Prometheus metrics of the sink (prom-client), on its own registry. Names follow
 * `sink_<noun>_<unit>`; labels are topic, partition, step and status, and host and table for
 * ClickHouse's replicas (sink/monitors/redundancy.ts).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** The steps that send a record to the DLQ: its decoding, or ClickHouse refusing its row. */
export const DLQ_STEPS = ["decode", "insert"] as const;
/** One of DLQ_STEPS. */
export type DlqStep = (typeof DLQ_STEPS)[number];

/** The gauges of the copies (sink_kafka_partition_*, sink_clickhouse_replica*; read by sink/monitors/redundancy.ts). */
export interface RedundancyGauges {
  /** Replicas a partition is assigned. */
  kafkaReplicas: Gauge<"topic" | "partition">;
  /** Replicas in sync with the partition's leader; 0 while it has no leader. */
  kafkaInSync: Gauge<"topic" | "partition">;
  /**
   * Replicas of a replicated table of this database in one shard (ZooKeeper's count), by the
   * table's ZooKeeper path (one per shard and table) and the replica that answered.
   */
  clickhouseReplicas: Gauge<"path" | "replica">;
  /** Of those, the ones with a live ZooKeeper session. */
  clickhouseActive: Gauge<"path" | "replica">;
  /** 1 while the table is read-only on that replica (its ZooKeeper or Keeper session is lost). */
  clickhouseReadonly: Gauge<"path" | "replica">;
}

/** Registers the gauges on the sink's registry. */
export function redundancyGauges(registry: Registry): RedundancyGauges {
  const gauge = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new Gauge<L>({ name, help, labelNames, registers: [registry] });
  return {
    kafkaReplicas: gauge("sink_kafka_partition_replicas", "Replicas assigned to the partition (Kafka metadata)", ["topic", "partition"]),
    kafkaInSync: gauge("sink_kafka_partition_in_sync_replicas", "Replicas in sync with the partition's leader (0 without a leader)", [
      "topic",
      "partition",
    ]),
    clickhouseReplicas: gauge("sink_clickhouse_replicas", "Replicas of the table in its shard (system.replicas total_replicas)", [
      "path",
      "replica",
    ]),
    clickhouseActive: gauge("sink_clickhouse_replicas_active", "Replicas of the table in its shard with a live ZooKeeper session", [
      "path",
      "replica",
    ]),
    clickhouseReadonly: gauge("sink_clickhouse_replica_readonly", "1 while the table is read-only on that server", ["path", "replica"]),
  };
}

/** The sink's metrics. */
export interface SinkMetrics {
  registry: Registry;
  /** Rows per insert: one flush of every partition's batch. */
  batchRows: Histogram<"topic">;
  /** Time of one flush's insert (with retries and splits), s. */
  batchWriteSeconds: Histogram<"topic">;
  /** Rows ClickHouse acknowledged. */
  rowsInserted: Counter<"topic">;
  /** Records of deleted or suppressed users, not stored (schemas/privacy/list.ts). */
  rowsSuppressed: Counter<"topic">;
  /** Records sent to the DLQ, by the step that refused them. */
  dlqRecords: Counter<"step">;
  /**
   * Records between the group's committed offset and the partition's high watermark, read from
   * the broker every few seconds, so it keeps rising while the sink is stalled.
   */
  consumerLag: Gauge<"topic" | "partition">;
  /** ms time of the last acknowledged flush, by topic (the start time before the first). */
  lastInsertAt: Map<string, number>;
  /**
   * ms time of the oldest dead letter not yet replayed, by DLQ topic; absent when there is none
   * (deploy/commands/replay.ts oldestDeadLetterTime).
   */
  dlqOldestAt: Map<string, number>;
  /**
   * Time from the record's Kafka timestamp (the ingest's send: receivedAt, the body's read and
   * the linger later) to the insert's acknowledgement, s.
   */
  eventDelaySeconds: Histogram;
  /**
   * 1 while this process retries a failed insert or DLQ send of the topic, else 0: one stuck
   * replica shows here while the others keep `sink_last_insert_age_seconds` low.
   */
  writeFailing: Gauge<"topic">;
  /** Offset commits, by outcome. */
  commits: Counter<"status">;
  /** The copies of the topics' partitions and of ClickHouse's replicated tables (sink/monitors/redundancy.ts). */
  copies: RedundancyGauges;
}

/**
 * Creates the metrics on a fresh registry, with Node's process metrics prefixed `sink_`.
 * `sink_last_insert_age_seconds{topic}` is computed at scrape time from `lastInsertAt`: alert
 * when it grows while `sink_consumer_lag_records` is above 0 (a stalled sink).
 * `sink_dlq_oldest_seconds{topic}`, one series per topic of `dlqTopics`, is computed at scrape
 * time from `dlqOldestAt` (0 when a topic has no entry): it keeps growing between two reads of
 * the DLQ.
 */
export function sinkMetrics(topics: string[], startedAt = Date.now(), dlqTopics: string[] = []): SinkMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "sink_" });
  const lastInsertAt = new Map(topics.map((t) => [t, startedAt]));
  const dlqOldestAt = new Map<string, number>();
  new Gauge({
    name: "sink_last_insert_age_seconds",
    help: "Seconds since ClickHouse last acknowledged a flush (since start before the first)",
    labelNames: ["topic"],
    registers: [registry],
    collect() {
      const now = Date.now();
      for (const [topic, at] of lastInsertAt) this.set({ topic }, (now - at) / 1000);
    },
  });
  new Gauge({
    name: "sink_dlq_oldest_seconds",
    help: "Age of the oldest dead letter not yet replayed, s (0 when there is none)",
    labelNames: ["topic"],
    registers: [registry],
    collect() {
      const now = Date.now();
      for (const topic of dlqTopics) {
        const at = dlqOldestAt.get(topic);
        this.set({ topic }, at === undefined ? 0 : Math.max(0, (now - at) / 1000));
      }
    },
  });
  return {
    registry,
    lastInsertAt,
    dlqOldestAt,
    batchRows: new Histogram({
      name: "sink_batch_rows",
      help: "Rows per insert (one flush of every partition's batch)",
      labelNames: ["topic"],
      buckets: [1, 10, 100, 1_000, 5_000, 10_000, 50_000, 100_000],
      registers: [registry],
    }),
    batchWriteSeconds: new Histogram({
      name: "sink_batch_write_seconds",
      help: "Insert time of one flush, retries included",
      labelNames: ["topic"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    rowsInserted: new Counter({
      name: "sink_rows_inserted_total",
      help: "Rows acknowledged by ClickHouse",
      labelNames: ["topic"],
      registers: [registry],
    }),
    rowsSuppressed: new Counter({
      name: "sink_rows_suppressed_total",
      help: "Records of deleted or suppressed users, committed and not stored",
      labelNames: ["topic"],
      registers: [registry],
    }),
    dlqRecords: dlqCounter(registry),
    consumerLag: new Gauge({
      name: "sink_consumer_lag_records",
      help: "Records between the committed offset and the high watermark",
      labelNames: ["topic", "partition"],
      registers: [registry],
    }),
    eventDelaySeconds: new Histogram({
      name: "sink_event_delay_seconds",
      help: "The record's Kafka timestamp (the ingest's send) to insert acknowledged, s",
      // up to a day: a backlog after an outage shows its real age, not the top bucket
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3_600, 21_600, 86_400],
      registers: [registry],
    }),
    writeFailing: writeFailingGauge(registry, topics),
    commits: new Counter({ name: "sink_commits_total", help: "Offset commits, by outcome", labelNames: ["status"], registers: [registry] }),
    copies: redundancyGauges(registry),
  };
}

/** `sink_write_failing{topic}`, each topic's series at 0 from the start (SinkMetrics.writeFailing). */
function writeFailingGauge(registry: Registry, topics: string[]): Gauge<"topic"> {
  const gauge = new Gauge({
    name: "sink_write_failing",
    help: "1 while this process retries a failed insert or DLQ send of the topic, else 0",
    labelNames: ["topic"],
    registers: [registry],
  });
  for (const topic of topics) gauge.set({ topic }, 0);
  return gauge;
}

/**
 * `sink_dlq_records_total{step}`, each step's series at 0 from the start: Prometheus's increase()
 * sees the first dead letter only when the series existed before it (the DLQ alert, deploy/k8s/monitoring).
 */
function dlqCounter(registry: Registry): Counter<"step"> {
  const counter = new Counter({
    name: "sink_dlq_records_total",
    help: "Records sent to the DLQ",
    labelNames: ["step"],
    registers: [registry],
  });
  for (const step of DLQ_STEPS) counter.inc({ step }, 0);
  return counter;
}
