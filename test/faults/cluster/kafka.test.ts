/**
 * Fault scenarios on the local replicated Kafka (deploy/local/cluster.sh: three KRaft nodes;
 * topics with 3 replicas and min.insync.replicas 2) with the real ingest, sink and ClickHouse.
 * Same traffic and verdict as test/faults: every messageId answered 2xx is in ClickHouse exactly
 * once under FINAL. Run by `npm run test:cluster` (test/faults/cluster/run.sh).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigResourceTypes } from "kafkajs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, waitFor } from "../../support/harness";
import { rowsOf, sleep, verdict } from "../node/scenarios";
import { Traffic } from "../node/traffic";
import { CLUSTER_DIR, clusterSh, clusterStack } from "./cluster";

const stack = clusterStack();
const cluster = suite("replicated Kafka (3 nodes)");

cluster.before(() => stack.start());
cluster.after(() => stack.stop());

/** The node (1-3) leading `partition` of `topic`. */
async function leaderOf(topic: string, partition: number): Promise<number> {
  const admin = stack.kafka.admin();
  await admin.connect();
  try {
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    return metadata.topics[0]!.partitions.find((p) => p.partitionId === partition)!.leader;
  } finally {
    await admin.disconnect();
  }
}

cluster("setup gave the events topic 3 replicas and min.insync.replicas 2", async () => {
  const admin = stack.kafka.admin();
  await admin.connect();
  try {
    const metadata = await admin.fetchTopicMetadata({ topics: [stack.env.KAFKA_TOPIC!] });
    assert.ok(metadata.topics[0]!.partitions.every((p) => p.replicas.length === 3));
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: stack.env.KAFKA_TOPIC!, configNames: ["min.insync.replicas"] }],
    });
    assert.is(described.resources[0]!.configEntries[0]!.configValue, "2");
  } finally {
    await admin.disconnect();
  }
});

cluster("one broker SIGKILLed under load (the leader of partition 0), then restarted", async () => {
  const t = new Traffic(`${stack.base}/v1/batch`, basic("test-key"), {
    userId: "cl-broker-kill",
    batchSize: 10,
    workers: 4,
    pauseMs: 50,
    maxRequests: 20_000,
  });
  t.start();
  await sleep(5_000);
  const node = await leaderOf(stack.env.KAFKA_TOPIC!, 0);
  const pid = Number(readFileSync(join(CLUSTER_DIR, `kafka-${node}`, "kafka", "kafka.pid"), "utf8").trim());
  process.kill(pid, "SIGKILL");
  const killedAt = Date.now();
  await sleep(15_000);
  const during = t.figures();
  await clusterSh("node", String(node), "start");
  const upAt = Date.now();
  await waitFor("acks after the broker is back", async () => (t.ackTimes.some((at) => at > upAt) ? true : undefined), 60_000);
  await sleep(5_000);
  await t.stop();
  await t.drain(90_000);
  assert.ok(
    t.ackTimes.some((at) => at > killedAt + 2_000 && at < upAt),
    "requests were acknowledged while the broker was down (2 of 3 replicas in sync)",
  );
  await verdict(
    stack,
    `Kafka node ${node} SIGKILLed (leader of partition 0) 15 s, restarted`,
    "cl-broker-kill",
    t,
    `acked during the outage: ${during.acked}; rejected during it: ${JSON.stringify(during.rejected)}`,
  ).catch(async (error: unknown) => {
    console.error("sink group lag:", JSON.stringify(await stack.groupLag().catch((e: unknown) => String(e))));
    console.error("rows:", JSON.stringify(await rowsOf(stack, "cl-broker-kill").catch((e: unknown) => String(e))));
    throw error;
  });
});

cluster.run();
