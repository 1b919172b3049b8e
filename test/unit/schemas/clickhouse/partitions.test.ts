/**
 * closedPartitionMergeDdl: which setting makes current ClickHouse merge closed months, by what
 * the server has and what the table already says; nothing on 18.16.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { CLOSED_PARTITION_AGE_SECONDS, closedPartitionMergeDdl } from "../../../../schemas/clickhouse/partitions";

const CREATE =
  "CREATE TABLE db.events (...) ENGINE = ReplacingMergeTree(received_at) PARTITION BY toYYYYMM(event_date) ORDER BY (...) SETTINGS ttl_only_drop_parts = 1, index_granularity = 8192";
const BOTH = new Set(["min_partition_age_to_force_merge_seconds", "min_age_to_force_merge_on_partition_only"]);

test("the partition-age setting where the server has it, on the table that holds rows", () => {
  assert.equal(closedPartitionMergeDdl("current", "db", "events", CREATE, BOTH), [
    `ALTER TABLE \`db\`.\`events\` MODIFY SETTING min_partition_age_to_force_merge_seconds = ${CLOSED_PARTITION_AGE_SECONDS}`,
  ]);
  assert.equal(closedPartitionMergeDdl("current", "db", "events", CREATE, BOTH, "c1"), [
    `ALTER TABLE \`db\`.\`events_local\` ON CLUSTER \`c1\` MODIFY SETTING min_partition_age_to_force_merge_seconds = 86400`,
  ]);
});

test("an older current server: the whole-partition pair; a server with neither, and 18.16: nothing", () => {
  assert.equal(closedPartitionMergeDdl("current", "db", "events", CREATE, new Set(["min_age_to_force_merge_on_partition_only"])), [
    "ALTER TABLE `db`.`events` MODIFY SETTING min_age_to_force_merge_seconds = 86400, min_age_to_force_merge_on_partition_only = 1",
  ]);
  assert.equal(closedPartitionMergeDdl("current", "db", "events", CREATE, new Set()), []);
  assert.equal(closedPartitionMergeDdl("legacy", "db", "events", CREATE, BOTH), []);
});

test("a table that names either setting keeps its value (an operator's, 0 for off)", () => {
  for (const setting of ["min_partition_age_to_force_merge_seconds = 0", "min_age_to_force_merge_seconds = 3600"])
    assert.equal(closedPartitionMergeDdl("current", "db", "events", `${CREATE}, ${setting}`, BOTH), [], setting);
});

test.run();
