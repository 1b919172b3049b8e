/**
 * Unit tests of sink/loop/partitions.ts and the partition bound of schemas/clickhouse/: a flush is
 * cut into inserts of at most the server's partitions per INSERT, keeping each month whole.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { DEFAULT_PARTITIONS_PER_INSERT, partitionsPerInsert } from "../../../../schemas/clickhouse/partitions";
import type { BatchItem } from "../../../../sink/loop/batch";
import { eventLineMonth, partitionChunks } from "../../../../sink/loop/partitions";

const item = (row: string, offset: number): BatchItem<string> => ({
  row,
  partition: 0,
  offset: String(offset),
  key: null,
  value: null,
  timestamp: 0,
});

test("no more items than the limit: one group, the same array", () => {
  const items = [item("a", 0), item("b", 1)];
  const groups = partitionChunks(items, (r) => r, 2);
  assert.is(groups.length, 1);
  assert.is(groups[0], items);
});

test("groups hold at most the limit of distinct keys, every item once, each key in one group, in order", () => {
  // 120 months, each twice, interleaved: 240 items.
  const items = [...Array(240).keys()].map((i) => item(`m${i % 120}`, i));
  const groups = partitionChunks(items, (r) => r, 100);
  assert.is(groups.length, 2);
  assert.equal(
    groups.map((g) => new Set(g.map((i) => i.row)).size),
    [100, 20],
  );
  assert.is(groups.flat().length, 240);
  assert.equal(new Set(groups.flat().map((i) => i.offset)).size, 240);
  for (const g of groups)
    assert.equal(
      g.map((i) => Number(i.offset)),
      [...g.map((i) => Number(i.offset))].sort((a, b) => a - b),
    );
  const groupsOfKey = new Map<string, Set<number>>();
  groups.forEach((g, n) => g.forEach((i) => groupsOfKey.set(i.row, (groupsOfKey.get(i.row) ?? new Set()).add(n))));
  assert.ok(
    [...groupsOfKey.values()].every((s) => s.size === 1),
    "a month's rows are in one insert",
  );
});

test("a 1,500-month batch under a limit of 100 makes 15 inserts", () => {
  const items = [...Array(1500).keys()].map((i) => item(`m${i}`, i));
  assert.is(partitionChunks(items, (r) => r, 100).length, 15);
});

test("the month of a row line: its client timestamp, else received_at", () => {
  const line = (row: object) => Buffer.from(JSON.stringify({ workspace_id: "w", message_id: "m", ...row }));
  assert.is(eventLineMonth(line({ original_timestamp: "1975-03-02T00:00:00.000Z", received_at: "2026-11-24T00:00:00.000Z" })), "1975-03");
  assert.is(eventLineMonth(line({ original_timestamp: null, received_at: "2026-11-24T00:00:00.000Z" })), "2026-11");
  assert.is(eventLineMonth(Buffer.from("not a row")), "");
});

test("partitions per insert: the server's limit, never over the default; none (18.16) or 0 is the default", () => {
  assert.is(partitionsPerInsert(undefined), DEFAULT_PARTITIONS_PER_INSERT);
  assert.is(partitionsPerInsert("0"), DEFAULT_PARTITIONS_PER_INSERT);
  assert.is(partitionsPerInsert("40"), 40);
  assert.is(partitionsPerInsert("1000"), DEFAULT_PARTITIONS_PER_INSERT);
  assert.is(partitionsPerInsert("x"), DEFAULT_PARTITIONS_PER_INSERT);
});

test.run();
