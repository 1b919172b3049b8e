/**
 * The merging of closed months: which month the sink merges next (closedMonthToMerge), the
 * statement on each engine and on a cluster (mergeMonthDdl), and which forced-merge settings of
 * earlier releases setup turns off (forcedMergeResetDdl).
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import {
  closedMonthToMerge,
  clusterMergeSupported,
  forcedMergeResetDdl,
  mergeMonthDdl,
  monthPartsQuery,
} from "../../../../schemas/clickhouse/partitions";
import { monthRow } from "../../../support/month-parts";

const month = monthRow;

test("a quiet closed month in several parts is merged; the newest such first", () => {
  const rows = [month("202607", 4, 1_000, 400), month("202608", 3, 2_000, 900), month("202609", 1, 500, 500)];
  assert.is(closedMonthToMerge(rows, "202611"), "202608");
  assert.is(closedMonthToMerge(rows.slice(0, 1), "202611"), "202607");
});

test("not merged: the open month, a later one, one still arriving, one in one part, one tried lately", () => {
  assert.is(closedMonthToMerge([month("202611", 5, 1_000, 100)], "202611"), undefined);
  assert.is(closedMonthToMerge([month("202701", 5, 1_000, 100)], "202611"), undefined);
  assert.is(closedMonthToMerge([month("202610", 5, 1_000, 100, 10)], "202611"), undefined);
  assert.is(closedMonthToMerge([month("202610", 1, 1_000, 1_000)], "202611"), undefined);
  assert.is(closedMonthToMerge([month("tuple()", 5, 1_000, 100)], "202611"), undefined);
  const rows = [month("202609", 5, 1_000, 100), month("202610", 5, 1_000, 100)];
  assert.is(closedMonthToMerge(rows, "202611", new Set(["202610"])), "202609");
});

test("a trickle of late events does not keep a month from being merged: quiet under 1% of its bytes in a day", () => {
  assert.is(closedMonthToMerge([month("202609", 6, 100_000, 30_000, 999)], "202611"), "202609");
  assert.is(closedMonthToMerge([month("202609", 6, 100_000, 30_000, 1_000)], "202611"), undefined);
});

test("late events: a merged month is merged again only once they hold a tenth of its bytes", () => {
  // One merged part of 3 GB and 60 small late parts: left as it is.
  assert.is(closedMonthToMerge([month("202609", 61, 3_000_180_000, 3e9)], "202611"), undefined);
  // Late parts of a tenth: still not. Past a ninth: merged.
  assert.is(closedMonthToMerge([month("202609", 5, 3_333_333_333, 3e9)], "202611"), undefined);
  assert.is(closedMonthToMerge([month("202609", 5, 3_400_000_000, 3e9)], "202611"), "202609");
});

test("on a cluster: a shard in between (merged, with late parts under a tenth) holds a month back; one in one part does not", () => {
  const due = month("202609", 3, 1_000, 500, 0, "shard2");
  assert.is(closedMonthToMerge([month("202609", 2, 1_000, 950, 0, "shard1"), due], "202611"), undefined);
  assert.is(closedMonthToMerge([month("202609", 1, 1_000, 1_000, 0, "shard1"), due], "202611"), "202609");
  assert.is(closedMonthToMerge([month("202609", 4, 1_000, 300, 0, "shard1"), due], "202611"), "202609");
  assert.is(
    closedMonthToMerge([month("202609", 1, 1_000, 1_000, 0, "shard1"), month("202609", 1, 900, 900, 0, "shard2")], "202611"),
    undefined,
  );
});

test("the statement: ON CLUSTER of the local table, skipping shards in one part; the parts query; which servers run it on a cluster", () => {
  assert.is(mergeMonthDdl("db", "events", "202609"), "OPTIMIZE TABLE `db`.`events` PARTITION 202609 FINAL");
  assert.is(
    mergeMonthDdl("db", "events", "202609", "c1"),
    "OPTIMIZE TABLE `db`.`events_local` ON CLUSTER `c1` PARTITION 202609 FINAL SETTINGS optimize_skip_merged_partitions = 1",
  );
  assert.throws(() => mergeMonthDdl("db", "events", "2026; DROP TABLE x"), /not a month partition id/);
  assert.match(monthPartsQuery("db", "events", "c1", 0), /cluster\('c1', system, parts\)[\s\S]*table = 'events_local'/);
  assert.match(monthPartsQuery("db", "events"), /modification_time > now\(\) - 86400\) AS recent/);
  for (const version of ["18.16.1", "21.8.15.7", "22.3.20.29"]) assert.not.ok(clusterMergeSupported(version), version);
  for (const version of ["22.4.1.1", "25.8.2.1", "26.9.2.1"]) assert.ok(clusterMergeSupported(version), version);
});

const CREATE =
  "CREATE TABLE db.events (...) ENGINE = ReplacingMergeTree(received_at) PARTITION BY toYYYYMM(event_date) ORDER BY (...) SETTINGS ttl_only_drop_parts = 1, index_granularity = 8192";

test("setup turns off the forced merge earlier releases set (86400), on current ClickHouse only", () => {
  assert.equal(forcedMergeResetDdl("current", "db", "events", `${CREATE}, min_partition_age_to_force_merge_seconds = 86400`), [
    "ALTER TABLE `db`.`events` MODIFY SETTING min_partition_age_to_force_merge_seconds = 0",
  ]);
  assert.equal(
    forcedMergeResetDdl(
      "current",
      "db",
      "events",
      `${CREATE}, min_age_to_force_merge_seconds = 86400, min_age_to_force_merge_on_partition_only = 1`,
      "c1",
    ),
    ["ALTER TABLE `db`.`events_local` ON CLUSTER `c1` MODIFY SETTING min_age_to_force_merge_seconds = 0"],
  );
  assert.equal(forcedMergeResetDdl("legacy", "db", "events", `${CREATE}, min_partition_age_to_force_merge_seconds = 86400`), []);
});

test("another value is an operator's and stays; a table without either: nothing", () => {
  for (const setting of [
    "min_partition_age_to_force_merge_seconds = 3600",
    "min_age_to_force_merge_seconds = 864000",
    "min_partition_age_to_force_merge_seconds = 0",
  ])
    assert.equal(forcedMergeResetDdl("current", "db", "events", `${CREATE}, ${setting}`), [], setting);
  assert.equal(forcedMergeResetDdl("current", "db", "events", CREATE), []);
});

test.run();
