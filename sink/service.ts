/**
 * The sink service: a kafkajs consumer group writing the events topic into ClickHouse.
 * If Kafka or ClickHouse is unreachable at start, start() throws; once running, ClickHouse
 * outages are retried (see consumer.ts) and Kafka outages are kafkajs's to reconnect.
 */
import { createClient } from "@clickhouse/client";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import type { Logger } from "pino";
import { quoteIdent } from "../schemas/clickhouse";
import type { SinkConfig } from "../schemas/config";
import { runLoop } from "./consumer";
import { sendDeadLetters } from "./dlq";
import { clickhouseInsert } from "./writer";

/** Starts the sink; resolves when the consumer has joined its group. Returns the stop function. */
export async function start(config: SinkConfig, log: Logger): Promise<(abortAfterMs: number) => Promise<void>> {
  const ch = config.clickhouse;
  const client = createClient({ url: ch.url, username: ch.username, password: ch.password, database: ch.database });
  const kafka = new Kafka({ clientId: `${config.kafka.clientId}-sink`, brokers: config.kafka.brokers, logLevel: logLevel.WARN });
  const consumer = kafka.consumer({
    groupId: config.groupId,
    sessionTimeout: config.sessionTimeoutMs,
    heartbeatInterval: Math.min(3_000, Math.floor(config.sessionTimeoutMs / 10)),
  });
  const dlqProducer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });

  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) {
      log.fatal({ err: payload.error }, "consumer crashed and will not restart");
      process.exit(1);
    }
    log.error({ err: payload.error }, "consumer crashed; kafkajs restarts it");
  });

  await client.ping();
  await Promise.all([consumer.connect(), dlqProducer.connect()]);
  const loop = await runLoop({
    consumer,
    topic: config.kafka.topic,
    insert: clickhouseInsert(client, quoteIdent(ch.table)),
    sendDeadLetters: (letters) =>
      sendDeadLetters(dlqProducer, config.kafka.dlqTopic, config.kafka.topic, letters, new Date()),
    batchRows: config.batchRows,
    batchWaitMs: config.batchWaitMs,
    retryMinMs: config.retryMinMs,
    retryMaxMs: config.retryMaxMs,
    crashAfterInsert: config.crashAfterInsert,
    log,
  });
  log.info({ topic: config.kafka.topic, groupId: config.groupId, table: ch.table }, "sink consuming");

  return async (abortAfterMs) => {
    await loop.stop(abortAfterMs);
    await dlqProducer.disconnect();
    await client.close();
    log.info("sink stopped");
  };
}
