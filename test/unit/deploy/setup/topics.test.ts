/**
 * Topic replication (deploy/setup/topics.ts), pure: the defaults for a cluster's size and the
 * settings that contradict it.
 */
import { test } from "uvu";
import { replicationFor } from "../../../../deploy/setup/topics";
import * as assert from "uvu/assert";
import { setupConfig } from "../../../../deploy/setup/config";

test("defaults: 3 and 2 on three brokers or more, every broker and one less on fewer, 1 and 1 on one", () => {
  const chosen = (brokers: number) => {
    const r = replicationFor(brokers, {});
    return r.ok ? [r.replication.replicationFactor, r.replication.minInsyncReplicas] : r.message;
  };
  assert.equal(chosen(5), [3, 2]);
  assert.equal(chosen(3), [3, 2]);
  assert.equal(chosen(2), [2, 1]);
  assert.equal(chosen(1), [1, 1]);
});

test("settings win over the defaults; a factor above the brokers or a min.insync above the factor is refused by name", () => {
  const r = replicationFor(5, { replicationFactor: 5, minInsyncReplicas: 3 });
  assert.ok(r.ok && r.replication.replicationFactor === 5 && r.replication.minInsyncReplicas === 3);
  const tooMany = replicationFor(1, { replicationFactor: 3 });
  assert.ok(!tooMany.ok && tooMany.message.startsWith("KAFKA_REPLICATION_FACTOR (3)"));
  const noProduce = replicationFor(3, { minInsyncReplicas: 4 });
  assert.ok(!noProduce.ok && noProduce.message.startsWith("KAFKA_MIN_INSYNC_REPLICAS (4)"));
});

test("setup reads KAFKA_REPLICATION_FACTOR and KAFKA_MIN_INSYNC_REPLICAS; blank is absent, a non-number is refused", () => {
  const set = setupConfig({ KAFKA_REPLICATION_FACTOR: "3", KAFKA_MIN_INSYNC_REPLICAS: "2" });
  assert.is(set.replicationFactor, 3);
  assert.is(set.minInsyncReplicas, 2);
  const blank = setupConfig({ KAFKA_REPLICATION_FACTOR: " " });
  assert.is("replicationFactor" in blank, false);
  assert.throws(() => setupConfig({ KAFKA_MIN_INSYNC_REPLICAS: "two" }));
});

test.run();
