/**
 * Splits a flush into inserts that each touch at most as many events-table partitions (months of
 * event_date) as the server allows: current ClickHouse refuses an INSERT block spanning more than
 * `max_partitions_per_insert_block` partitions (code 252), and one batch may carry a client's
 * timestamps of any month. Pure; no I/O.
 */
import { rowStringField } from "../../schemas/row";
import type { BatchItem } from "./batch";

/**
 * The items in groups of at most `maxPartitions` distinct keys, each group in the items' order;
 * a key's items all fall in one group, the groups in the order their first key appeared. One
 * group (the same array) when there are no more items than `maxPartitions`.
 */
export function partitionChunks<Row>(items: BatchItem<Row>[], keyOf: (row: Row) => string, maxPartitions: number): BatchItem<Row>[][] {
  if (items.length <= maxPartitions) return [items];
  const groupOfKey = new Map<string, number>();
  const groups: BatchItem<Row>[][] = [];
  for (const item of items) {
    const key = keyOf(item.row);
    let group = groupOfKey.get(key);
    if (group === undefined) {
      group = Math.floor(groupOfKey.size / maxPartitions);
      groupOfKey.set(key, group);
    }
    (groups[group] ??= []).push(item);
  }
  return groups;
}

/**
 * The events partition of a row line, read without parsing it: the month (`YYYY-MM`) of its
 * client timestamp (`original_timestamp`), else of `received_at` (schemas/clickhouse/
 * EVENT_DATE). Lines of another shape share the key '' (their insert is refused as data).
 */
export function eventLineMonth(line: Buffer): string {
  const time = rowStringField(line, "original_timestamp") ?? rowStringField(line, "received_at");
  return time === undefined ? "" : time.slice(0, 7);
}
