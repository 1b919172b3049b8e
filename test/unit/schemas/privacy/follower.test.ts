/**
 * The suppressions follower (schemas/privacy/follower.ts): offsets already applied are skipped
 * when the topic is read again. The follower against a real broker stopped for 90 s is fault
 * scenario 10 (test/faults/node/privacy.test.ts).
 */
import { test } from "uvu";
import { AppliedOffsets } from "../../../../schemas/privacy/follower";
import * as assert from "uvu/assert";

test("AppliedOffsets: a record is new once per partition; a re-read from the start is skipped", () => {
  const applied = new AppliedOffsets();
  assert.equal(
    ["0", "1", "5"].map((o) => applied.take(0, o)),
    [true, true, true],
    "compaction leaves gaps: still new",
  );
  assert.equal(
    ["0", "1", "5"].map((o) => applied.take(0, o)),
    [false, false, false],
    "read again after a restart",
  );
  assert.is(applied.take(0, "6"), true, "past the last one applied");
  assert.is(applied.take(1, "0"), true, "partitions are counted apart");
  assert.is(applied.take(0, "9007199254740993"), true, "offsets beyond 2^53 compare exactly");
  assert.is(applied.take(0, "9007199254740992"), false);
});

test.run();
