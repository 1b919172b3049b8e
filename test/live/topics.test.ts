/**
 * The topics setup creates on the real local broker (one broker: 1 and 1), with their
 * retention.ms read back from the broker (describeConfigs).
 */
import { suite } from "uvu";
import { Kafka, logLevel, ConfigResourceTypes, ConfigSource } from "kafkajs";
import { kafkaConfig } from "../../schemas/config";
import { randomUUID } from "node:crypto";
import { ensureTopics } from "../../deploy/setup/topics";
import * as assert from "uvu/assert";
import { DEFAULT_RETENTION_MS, DELIVERIES_RETENTION_MS } from "../../deploy/setup/config";

const live = suite("topic replication (live broker)");
const kafka = new Kafka({ clientId: "test-topics", brokers: kafkaConfig(process.env).brokers, logLevel: logLevel.NOTHING });
const names = () => {
  const id = randomUUID().slice(0, 8);
  return {
    ...kafkaConfig(process.env),
    topic: `t-${id}`,
    rejectedTopic: `t-${id}-rejected`,
    dlqTopic: `t-${id}-dlq`,
    suppressionsTopic: `t-${id}-suppressions`,
    destinationsTopic: `t-${id}-destinations`,
    deliveriesTopic: `t-${id}-deliveries`,
    plansTopic: `t-${id}-plans`,
  };
};

live(
  "on the one local broker setup creates every topic with 1 replica and min.insync.replicas 1; suppressions, destinations and plans compacted",
  async () => {
    const config = names();
    const { created, replication } = await ensureTopics(kafka, config, { partitions: 2 });
    assert.equal(created, [
      config.topic,
      config.rejectedTopic,
      config.dlqTopic,
      config.deliveriesTopic,
      config.suppressionsTopic,
      config.destinationsTopic,
      config.plansTopic,
    ]);
    assert.equal(replication, { replicationFactor: 1, minInsyncReplicas: 1 });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: created.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ["min.insync.replicas"] })),
      });
      assert.equal(
        described.resources.map((r) => r.configEntries[0]?.configValue),
        ["1", "1", "1", "1", "1", "1", "1"],
      );
      // Set on the topic by setup (source TOPIC_CONFIG), not the broker's value that happens to match.
      assert.equal(
        described.resources.map((r) => r.configEntries[0]?.configSource),
        created.map(() => ConfigSource.TOPIC_CONFIG),
      );
      const cleanup = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [config.suppressionsTopic, config.destinationsTopic, config.plansTopic].map((name) => ({
          type: ConfigResourceTypes.TOPIC,
          name,
          configNames: ["cleanup.policy"],
        })),
      });
      assert.equal(
        cleanup.resources.map((r) => r.configEntries[0]!.configValue),
        ["compact", "compact", "compact"],
        "one record per user, and per destination, kept for ever",
      );
      const metadata = await admin.fetchTopicMetadata({ topics: [config.topic] });
      assert.equal(
        metadata.topics[0]!.partitions.map((p) => p.replicas.length),
        [1, 1],
      );
      await admin.deleteTopics({ topics: created });
    } finally {
      await admin.disconnect();
    }
  },
);

/** The topic-level value and source of each config name, per topic, as the broker reports them. */
async function topicConfigs(topics: string[], configNames: string[]): Promise<Record<string, Record<string, [string, ConfigSource]>>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames })),
    });
    const out: Record<string, Record<string, [string, ConfigSource]>> = {};
    for (const r of described.resources)
      out[r.resourceName] = Object.fromEntries(r.configEntries.map((e) => [e.configName, [e.configValue, e.configSource]]));
    return out;
  } finally {
    await admin.disconnect();
  }
}

live("retention: 30 days on creation; a given setting also changes an existing topic and keeps its other settings", async () => {
  const config = names();
  const admin = kafka.admin();
  await admin.connect();
  try {
    // The events topic exists already, made by hand with its own retention (1 day) and message size.
    await admin.createTopics({
      topics: [
        {
          topic: config.topic,
          numPartitions: 1,
          configEntries: [
            { name: "retention.ms", value: "86400000" },
            { name: "max.message.bytes", value: "2000000" },
          ],
        },
      ],
    });
    const first = await ensureTopics(kafka, config, { partitions: 1 });
    assert.equal(first.created, [
      config.rejectedTopic,
      config.dlqTopic,
      config.deliveriesTopic,
      config.suppressionsTopic,
      config.destinationsTopic,
      config.plansTopic,
    ]);
    assert.equal(first.retentionChanged, [], "unset: an existing topic keeps its retention");
    const names4 = [config.topic, config.rejectedTopic, config.dlqTopic, config.suppressionsTopic];
    const keys = ["retention.ms", "cleanup.policy", "min.insync.replicas", "max.message.bytes"];
    let read = await topicConfigs(names4, keys);
    const thirtyDays = [String(DEFAULT_RETENTION_MS), ConfigSource.TOPIC_CONFIG];
    assert.equal(read[config.topic]!["retention.ms"], ["86400000", ConfigSource.TOPIC_CONFIG]);
    assert.equal(read[config.rejectedTopic]!["retention.ms"], thirtyDays);
    assert.equal(read[config.dlqTopic]!["retention.ms"], thirtyDays);
    assert.is.not(read[config.suppressionsTopic]!["retention.ms"]![1], ConfigSource.TOPIC_CONFIG, "compacted: no retention set");
    assert.equal(read[config.suppressionsTopic]!["cleanup.policy"], ["compact", ConfigSource.TOPIC_CONFIG]);
    const destinations = await topicConfigs([config.destinationsTopic, config.deliveriesTopic], keys);
    assert.equal(destinations[config.destinationsTopic]!["cleanup.policy"], ["compact", ConfigSource.TOPIC_CONFIG]);
    assert.equal(
      destinations[config.deliveriesTopic]!["retention.ms"],
      [String(DELIVERIES_RETENTION_MS), ConfigSource.TOPIC_CONFIG],
      "a day",
    );

    // Settings given: the existing events topic and the DLQ change, the rest keep theirs.
    const second = await ensureTopics(kafka, config, { partitions: 1, eventsRetentionMs: 7 * 86_400_000, dlqRetentionMs: -1 });
    assert.equal(second.created, []);
    assert.equal(second.retentionChanged, [config.topic, config.dlqTopic]);
    read = await topicConfigs(names4, keys);
    assert.equal(read[config.topic]!["retention.ms"], ["604800000", ConfigSource.TOPIC_CONFIG]);
    assert.equal(read[config.topic]!["max.message.bytes"], ["2000000", ConfigSource.TOPIC_CONFIG], "its own setting is kept");
    assert.equal(read[config.dlqTopic]!["retention.ms"], ["-1", ConfigSource.TOPIC_CONFIG]);
    assert.equal(read[config.dlqTopic]!["min.insync.replicas"], ["1", ConfigSource.TOPIC_CONFIG], "setup's own setting is kept");
    assert.equal(read[config.rejectedTopic]!["retention.ms"], thirtyDays);
    assert.equal(read[config.suppressionsTopic]!["cleanup.policy"], ["compact", ConfigSource.TOPIC_CONFIG], "compaction untouched");
    assert.is.not(read[config.suppressionsTopic]!["retention.ms"]![1], ConfigSource.TOPIC_CONFIG);

    // Again with the same settings: nothing to change.
    const third = await ensureTopics(kafka, config, { partitions: 1, eventsRetentionMs: 7 * 86_400_000, dlqRetentionMs: -1 });
    assert.equal(third.retentionChanged, []);
    await admin.deleteTopics({ topics: [...names4, config.destinationsTopic, config.deliveriesTopic, config.plansTopic] });
  } finally {
    await admin.disconnect();
  }
});

live("asking for 3 replicas of one broker fails naming the setting, and creates nothing", async () => {
  const config = names();
  const error = await ensureTopics(kafka, config, { partitions: 1, replicationFactor: 3 }).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.match(String(error?.message), "KAFKA_REPLICATION_FACTOR (3) is above the 1 broker(s)");
  const admin = kafka.admin();
  await admin.connect();
  try {
    const topics = await admin.listTopics();
    assert.not.ok(topics.includes(config.topic));
  } finally {
    await admin.disconnect();
  }
});

live.run();
