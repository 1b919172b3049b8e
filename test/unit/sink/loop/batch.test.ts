import { test } from "uvu";
import * as assert from "uvu/assert";
import { PartitionBatches, type BatchItem } from "../../../../sink/loop/batch";
import type { EventRow } from "../../../../schemas/row";

const row = { message_id: "m" } as EventRow;
const item = (partition: number, offset: number): BatchItem<EventRow> => ({
  row,
  partition,
  offset: String(offset),
  key: null,
  value: null,
  timestamp: 0,
});

test("full at maxRecords records held, counting dead letters", () => {
  const batches = new PartitionBatches<EventRow>({ maxRecords: 3, maxBytes: 1e9, maxWaitMs: 1000 });
  assert.is(batches.addRow(item(0, 10), 0), false);
  assert.is(batches.addDeadLetter({ partition: 0, offset: "11", key: null, value: null, reason: "x", step: "decode" }, 0), false);
  assert.is(batches.addRow(item(0, 12), 0), true);
  const [taken] = batches.takeAll();
  assert.is(taken!.items.length, 2);
  assert.is(taken!.deadLetters.length, 1);
  assert.is(taken!.lastOffset, "12");
});

test("records of every partition count toward one flush; each keeps its own last offset", () => {
  const batches = new PartitionBatches<EventRow>({ maxRecords: 3, maxBytes: 1e9, maxWaitMs: 1000 });
  assert.is(batches.addRow(item(0, 1), 0), false);
  assert.is(batches.addRow(item(1, 7), 0), false);
  assert.is(batches.size, 2);
  assert.is(batches.addRow(item(1, 8), 0), true, "two partitions together reach maxRecords");
  const taken = batches.takeAll().sort((a, b) => a.partition - b.partition);
  assert.equal(
    taken.map((b) => [b.partition, b.items.length, b.lastOffset]),
    [
      [0, 1, "1"],
      [1, 2, "8"],
    ],
  );
  assert.equal(batches.takeAll(), []);
  assert.is(batches.size, 0);
});

test("due when the oldest record held has waited maxWaitMs", () => {
  const batches = new PartitionBatches<EventRow>({ maxRecords: 100, maxBytes: 1e9, maxWaitMs: 500 });
  assert.is(batches.due(10_000), false, "nothing held is never due");
  batches.addRow(item(2, 5), 1300);
  batches.addRow(item(0, 1), 1000);
  batches.addRow(item(0, 2), 1400);
  assert.is(batches.due(1499), false);
  assert.is(batches.due(1500), true, "partition 0's first record is 500 ms old");
});

test("after a flush the next records start a fresh age and count", () => {
  const batches = new PartitionBatches<EventRow>({ maxRecords: 2, maxBytes: 1e9, maxWaitMs: 500 });
  batches.addRow(item(0, 1), 0);
  batches.takeAll();
  assert.is(batches.addRow(item(0, 2), 900), false, "the count restarted");
  assert.is(batches.due(1000), false);
  assert.is(batches.takeAll()[0]!.openedAt, 900);
});

test("clear drops every open batch", () => {
  const batches = new PartitionBatches<EventRow>({ maxRecords: 100, maxBytes: 1e9, maxWaitMs: 500 });
  batches.addRow(item(0, 1), 0);
  batches.addRow(item(1, 1), 0);
  batches.clear();
  assert.is(batches.size, 0);
  assert.equal(batches.takeAll(), []);
});

test("full once the record values held reach maxBytes (SINK_BATCH_BYTES), all partitions together", () => {
  const batches = new PartitionBatches<EventRow>({ maxRecords: 1_000, maxBytes: 100, maxWaitMs: 500 });
  const sized = (partition: number, offset: number, bytes: number): BatchItem<EventRow> => ({
    ...item(partition, offset),
    value: Buffer.alloc(bytes),
  });
  assert.is(batches.addRow(sized(0, 1, 60), 0), false);
  assert.is(batches.bytes, 60);
  assert.is(batches.addDeadLetter({ partition: 1, offset: "4", key: null, value: Buffer.alloc(40), reason: "x", step: "decode" }, 0), true);
  batches.takeAll();
  assert.is(batches.bytes, 0, "a flush empties the byte count");
});

test.run();
