/**
 * Preloaded (`node -r`) into the ingest and the sink of test/faults/node/privacy.test.ts: kafkajs then
 * never restarts a crashed consumer of the suppressions followers (groups `*-suppressions-*`):
 * `retry.restartOnFailure` answers false, so every crash is reported with `restart: false`.
 * kafkajs 2.2.4 does that by itself only for some crashes (a group coordinator not found after it
 * connected, e.g. when the broker stops while a consumer rejoins), which a plain stop and start of
 * the broker rarely hits; with this the scenario does not depend on that race. Other consumers
 * (the sink's) keep kafkajs's own policy.
 */
import { Kafka, type ConsumerConfig } from "kafkajs";

const makeConsumer = Kafka.prototype.consumer;
Kafka.prototype.consumer = function (this: Kafka, config: ConsumerConfig) {
  if (!config.groupId.includes("-suppressions-")) return makeConsumer.call(this, config);
  // kafkajs's own default for a consumer is { retries: 5 }; only the restart decision changes.
  return makeConsumer.call(this, { ...config, retry: { retries: 5, ...config.retry, restartOnFailure: async () => false } });
};
