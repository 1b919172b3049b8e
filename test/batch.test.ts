import { test } from "uvu";
import * as assert from "uvu/assert";
import { PartitionBatches, type BatchItem } from "../sink/batch";
import type { EventRow } from "../schemas/row";

const row = { message_id: "m" } as EventRow;
const item = (partition: number, offset: number): BatchItem => ({ row, partition, offset: String(offset), key: null, value: null });

test("a batch is full at maxRows, counting dead letters", () => {
  const batches = new PartitionBatches({ maxRows: 3, maxWaitMs: 1000 });
  assert.is(batches.addRow(item(0, 10), 0), false);
  assert.is(batches.addDeadLetter({ partition: 0, offset: "11", key: null, value: null, reason: "x", step: "decode" }, 0), false);
  assert.is(batches.addRow(item(0, 12), 0), true);
  const taken = batches.take(0)!;
  assert.is(taken.items.length, 2);
  assert.is(taken.deadLetters.length, 1);
  assert.is(taken.lastOffset, "12");
});

test("partitions are batched separately", () => {
  const batches = new PartitionBatches({ maxRows: 2, maxWaitMs: 1000 });
  batches.addRow(item(0, 1), 0);
  assert.is(batches.addRow(item(1, 7), 0), false);
  assert.is(batches.addRow(item(1, 8), 0), true);
  assert.equal(batches.partitions().sort(), [0, 1]);
  assert.is(batches.take(1)!.lastOffset, "8");
  assert.is(batches.take(0)!.lastOffset, "1");
  assert.is(batches.take(0), undefined);
});

test("a batch is due when its first record has waited maxWaitMs", () => {
  const batches = new PartitionBatches({ maxRows: 100, maxWaitMs: 500 });
  batches.addRow(item(0, 1), 1000);
  batches.addRow(item(0, 2), 1400);
  batches.addRow(item(2, 5), 1300);
  assert.equal(batches.due(1499), []);
  assert.equal(batches.due(1500), [0]);
  assert.equal(batches.due(1800).sort(), [0, 2]);
});

test("a taken batch starts a new one with a fresh age", () => {
  const batches = new PartitionBatches({ maxRows: 100, maxWaitMs: 500 });
  batches.addRow(item(0, 1), 0);
  batches.take(0);
  batches.addRow(item(0, 2), 900);
  assert.equal(batches.due(1000), []);
  assert.is(batches.take(0)!.openedAt, 900);
});

test("clear drops every open batch", () => {
  const batches = new PartitionBatches({ maxRows: 100, maxWaitMs: 500 });
  batches.addRow(item(0, 1), 0);
  batches.addRow(item(1, 1), 0);
  batches.clear();
  assert.equal(batches.partitions(), []);
});

test.run();
