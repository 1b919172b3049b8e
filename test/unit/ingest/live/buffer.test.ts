/** The recent buffer of the live tail (ingest/live/buffer.ts): bounded by count and bytes, newest first. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { RecentBuffer } from "../../../../ingest/live/buffer";
import type { LiveRecord } from "../../../../ingest/live/items";

const record = (n: number, workspaceId = "ws1", bytes = 10): LiveRecord => ({
  kind: "accepted",
  workspaceId,
  value: Buffer.alloc(bytes),
  id: `events/0/${n}`,
});

test("newest first, filtered by workspace, at most the limit", () => {
  const buffer = new RecentBuffer({ records: 10, bytes: 1_000 });
  for (let n = 0; n < 6; n++) buffer.add(record(n, n % 2 === 0 ? "ws1" : "ws2"));
  assert.equal(
    buffer.newest((r) => r.workspaceId === "ws1", 10).map((r) => r.id),
    ["events/0/4", "events/0/2", "events/0/0"],
  );
  assert.equal(
    buffer.newest((r) => r.workspaceId === "ws2", 2).map((r) => r.id),
    ["events/0/5", "events/0/3"],
  );
});

test("the count bound drops the oldest", () => {
  const buffer = new RecentBuffer({ records: 3, bytes: 1_000 });
  for (let n = 0; n < 5; n++) buffer.add(record(n));
  assert.is(buffer.size, 3);
  assert.equal(
    buffer.newest((r) => r.workspaceId === "ws1", 10).map((r) => r.id),
    ["events/0/4", "events/0/3", "events/0/2"],
  );
});

test("the byte bound drops the oldest until the new record fits; a record over it alone is not kept", () => {
  const buffer = new RecentBuffer({ records: 100, bytes: 100 });
  for (let n = 0; n < 5; n++) buffer.add(record(n, "ws1", 30));
  assert.is(buffer.bytes, 90);
  assert.is(buffer.size, 3);
  buffer.add(record(99, "ws1", 101));
  assert.is(buffer.size, 3, "too big for the buffer: skipped");
  buffer.add(record(5, "ws1", 70));
  assert.equal(
    buffer.newest((r) => r.workspaceId === "ws1", 10).map((r) => r.id),
    ["events/0/5", "events/0/4"],
  );
  assert.is(buffer.bytes, 100);
  buffer.clear();
  assert.is(buffer.size, 0);
  assert.is(buffer.bytes, 0);
});

test.run();
