/**
 * The pieces of `npm run bench:deliveries` (test/bench/deliveries.ts) that set a phase up: its own
 * topics (events, destinations, suppressions...), events rows written straight to its events
 * topic as the ingest writes them (the bench corpus through ingest/records/build.ts, produced with
 * acks=all by kafkajs, so a backlog of a million takes seconds), destinations added and removed as
 * `cli destinations` does it, and a delivery process of its own.
 */
import { randomUUID } from "node:crypto";
import type { Kafka, Producer } from "kafkajs";
import pino from "pino";
import { buildRecords } from "../../ingest/records/build";
import { kafkaConfig, type KafkaConfig } from "../../schemas/config";
import type { EventRecord } from "../../schemas/envelope";
import { KeyPartitioner } from "../../schemas/kafka/partitioner";
import type { Message } from "../../schemas/messages";
import { destinationsCommand } from "../../deploy/commands/destinations";
import { ensureTopics } from "../../deploy/setup/topics";
import { startDeliver, type Deliverer } from "../support/deliveries";
import type { LiveStack } from "../support/harness";
import { corpus } from "./corpus";

/** The workspace every bench event and destination belongs to. */
export const WORKSPACE = "ws-bench";

/** The keys of the last line of `npm run bench:deliveries`, in order (the smoke test checks them). */
export const DELIVER_FIGURE_KEYS = [
  "single_deliveries_per_s",
  "single_cpu_us_per_delivery",
  "batched_deliveries_per_s",
  "batched_cpu_us_per_delivery",
  "batched_messages_per_request",
  "fanout_deliveries_per_s",
  "fanout_cpu_us_per_delivery",
  "backlog_produce_msgs_per_s",
  "backlog_rss_before_mb",
  "backlog_rss_after_mb",
  "backlog_peak_rss_mb",
  "backlog_lag_records",
];

/** A phase's topics (KAFKA_* names) and the settings derived from them. */
export interface Phase {
  name: string;
  env: Record<string, string>;
  kafka: KafkaConfig;
}

/** The topics of phase `name` of the run `runId`, created (`partitions` for events). */
export async function phaseTopics(stack: LiveStack, runId: string, name: string, partitions: number): Promise<Phase> {
  const base = `bench-deliver-${runId}-${name}`;
  const env = {
    KAFKA_TOPIC: base,
    KAFKA_DLQ_TOPIC: `${base}-dlq`,
    KAFKA_REJECTED_TOPIC: `${base}-rejected`,
    KAFKA_SUPPRESSIONS_TOPIC: `${base}-suppressions`,
    KAFKA_DESTINATIONS_TOPIC: `${base}-destinations`,
  };
  const kafka = kafkaConfig({ ...stack.env, ...env });
  await ensureTopics(stack.kafka, kafka, { partitions });
  return { name, env, kafka };
}

/** Deletes the topics of `phases` (housekeeping: a failure leaves stray topics). */
export async function dropPhases(kafka: Kafka, phases: Phase[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: phases.flatMap((p) => Object.values(p.env)) });
  } catch (error) {
    console.error(`deleting the bench topics failed: ${String(error)}`);
  } finally {
    await admin.disconnect();
  }
}

/** The delivery process of a phase (its topics, group prefix `bench-deliver-<run>`), listening. */
export function phaseDeliver(stack: LiveStack, runId: string, phase: Phase): Promise<Deliverer> {
  return startDeliver(stack, `bench-deliver-${runId}`, { ...phase.env, LOG_LEVEL: "info" });
}

/** Event records of the bench corpus (1,000 messages, 441-547 bytes each), received now, of WORKSPACE. */
export function benchRecords(): EventRecord[] {
  const messages = corpus(1_000).map((m) => ({ ...m, messageId: randomUUID() })) as Message[];
  const built = buildRecords(messages, {}, { workspaceId: WORKSPACE, receivedAt: new Date().toISOString() }, 32 * 1024);
  if (built.oversized.length > 0) throw new Error("corpus message over the size limit");
  return built.records;
}

/** A producer as the ingest's (messageId keys, acks=all), connected. */
export async function benchProducer(kafka: Kafka): Promise<Producer> {
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: KeyPartitioner });
  await producer.connect();
  return producer;
}

/**
 * Writes `n` records to `topic`, cycling through `records` (each key made unique), in sendBatch
 * calls of 2,000 with 4 in flight; resolves with the seconds it took.
 */
export async function produce(producer: Producer, topic: string, records: EventRecord[], n: number): Promise<number> {
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const batch: { key: string; value: string | Buffer }[] = [];
      for (let i = 0; i < 2_000 && next < n; i++, next++) {
        const r = records[next % records.length]!;
        batch.push({ key: `${r.key}-${next}`, value: r.value });
      }
      await producer.sendBatch({ topicMessages: [{ topic, messages: batch }], acks: -1 });
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return (Date.now() - started) / 1000;
}

/** Runs `cli destinations <args>` in this process against the phase's topics; what it printed. Throws on a non-zero exit. */
export async function destinations(kafka: Kafka, phase: Phase, args: string[]): Promise<string> {
  let out = "";
  let err = "";
  const code = await destinationsCommand(args, { kafka: phase.kafka, allowLinkLocal: false, env: {} }, kafka, pino({ level: "silent" }), {
    out: (t) => (out += t),
    err: (t) => (err += t),
  });
  if (code !== 0) throw new Error(`destinations ${args.join(" ")} exited ${code}: ${err}`);
  return out.trim();
}

/** Adds a webhook destination of WORKSPACE posting to `url`; its id. */
export function addBenchDestination(kafka: Kafka, phase: Phase, url: string, ...options: string[]): Promise<string> {
  return destinations(kafka, phase, ["add", WORKSPACE, "webhook", url, ...options]);
}
