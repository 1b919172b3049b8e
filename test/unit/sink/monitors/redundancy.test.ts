/**
 * The copies the sink reports (sink/monitors/redundancy.ts): Kafka's metadata as replicas and in-sync
 * replicas per partition, and the gauges they set. The query of ClickHouse's replicas runs on
 * both engines in test/live/engines.test.ts and on the local cluster in
 * test/faults/cluster/clickhouse.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { Registry } from "prom-client";
import { partitionCopies, readClickHouseCopies, readKafkaCopies, replicasQuery } from "../../../../sink/monitors/redundancy";
import { redundancyGauges } from "../../../../sink/metrics";
import type { Admin } from "kafkajs";
import type { Sql } from "../../../../schemas/clickhouse/client";

const metadata = {
  topics: [
    {
      name: "events",
      partitions: [
        { partitionId: 0, leader: 1, replicas: [1, 2, 3], isr: [1, 2, 3] },
        { partitionId: 1, leader: 2, replicas: [1, 2, 3], isr: [2, 3] },
        { partitionId: 2, leader: -1, replicas: [1, 2, 3], isr: [3] },
      ],
    },
  ],
};

test("partitionCopies: replicas and in-sync replicas per partition; none in sync without a leader", () => {
  assert.equal(partitionCopies(metadata), [
    { topic: "events", partition: 0, replicas: 3, inSync: 3 },
    { topic: "events", partition: 1, replicas: 3, inSync: 2 },
    { topic: "events", partition: 2, replicas: 3, inSync: 0 },
  ]);
});

test("the gauges: Kafka's partitions and ClickHouse's replicas; nothing read from ClickHouse on one server", async () => {
  const registry = new Registry();
  const gauges = redundancyGauges(registry);
  let asked: string[] = [];
  const admin = { fetchTopicMetadata: async ({ topics }: { topics: string[] }) => ((asked = topics), metadata) } as unknown as Admin;
  await readKafkaCopies(admin, ["events"], gauges);
  assert.equal(asked, ["events"]);
  const queries: string[] = [];
  const sql: Sql = {
    command: async () => {},
    rows: async <T>(query: string) => {
      queries.push(query);
      return [{ path: "/clickhouse/tables/02/db/events_local", replica: "node4", readonly: "0", total: "2", active: "1" }] as T[];
    },
  };
  await readClickHouseCopies(sql, "db", undefined, gauges);
  assert.equal(queries, [], "one server: no replicated tables");
  await readClickHouseCopies(sql, "db", "events", gauges);
  assert.equal(queries, [replicasQuery("db", "events")]);
  const text = await registry.metrics();
  for (const line of [
    'sink_kafka_partition_in_sync_replicas{topic="events",partition="1"} 2',
    'sink_kafka_partition_in_sync_replicas{topic="events",partition="2"} 0',
    'sink_kafka_partition_replicas{topic="events",partition="2"} 3',
    'sink_clickhouse_replicas{path="/clickhouse/tables/02/db/events_local",replica="node4"} 2',
    'sink_clickhouse_replicas_active{path="/clickhouse/tables/02/db/events_local",replica="node4"} 1',
    'sink_clickhouse_replica_readonly{path="/clickhouse/tables/02/db/events_local",replica="node4"} 0',
  ])
    assert.ok(text.includes(line), line);
  assert.match(replicasQuery("d'b", "c"), /FROM cluster\('c', system, replicas\) WHERE database = 'd\\'b'$/);
});

test.run();
