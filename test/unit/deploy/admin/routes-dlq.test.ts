/**
 * The admin API's DLQ and kept-failure routes (deploy/admin/routes-dlq.ts): the DLQ's letters are
 * those past the replay group's commits, summed over partitions, and the oldest one's age comes
 * from Kafka's offset-for-time lookups; none pending is 0 letters and no age. Driven through a
 * stand-in kafkajs admin answering offsets as a broker would; the routes are operator routes, the
 * failures a workspace's.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { DLQ_ROUTES, dlqState } from "../../../../deploy/admin/routes-dlq";
import type { AdminContext } from "../../../../deploy/admin/routes";

const dlq = suite("admin DLQ routes");

const NOW = Date.parse("2026-11-29T12:00:00Z");

/** A context whose Kafka admin answers: partition 0 letters 0..high, the replay group committed at `committed`; record i written at `timeOf(i)`. */
function contextOf(high: number, committed: number, timeOf: (offset: number) => number): AdminContext {
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    fetchTopicOffsets: async () => [{ partition: 0, low: "0", high: String(high), offset: String(high) }],
    fetchOffsets: async () => [{ topic: "dlq", partitions: [{ partition: 0, offset: String(committed) }] }],
    fetchTopicOffsetsByTimestamp: async (_topic: string, ms: number) => {
      let offset = 0;
      while (offset < high && timeOf(offset) < ms) offset++;
      return [{ partition: 0, offset: String(offset) }];
    },
  };
  return {
    kafka: { admin: () => admin },
    dlq: { kafka: { dlqTopic: "dlq" }, sinkGroupId: "sink" },
  } as unknown as AdminContext;
}

dlq("letters past the replay group's commit are counted, and the oldest one's age is its record's", async () => {
  // 10 letters, 4 replayed; letter i written 600 - 60*i seconds ago
  const state = await dlqState(
    contextOf(10, 4, (i) => NOW - (600 - 60 * i) * 1000),
    NOW,
  );
  assert.is(state.letters, 6);
  assert.ok(
    state.oldestSeconds !== null && Math.abs(state.oldestSeconds - 360) <= 1,
    `oldest ${state.oldestSeconds} s, the 5th letter's 360 s`,
  );
});

dlq("nothing pending: 0 letters and no age (control: the same topic, all replayed)", async () => {
  assert.equal(
    await dlqState(
      contextOf(10, 10, () => NOW - 1_000),
      NOW,
    ),
    { letters: 0, oldestSeconds: null },
  );
});

dlq("the DLQ routes are the operator's, the failures a workspace's", () => {
  const scopes = Object.fromEntries(DLQ_ROUTES.map((r) => [r.operationId, r.scope]));
  assert.equal(scopes, { "dlq.show": "operator", "dlq.replay": "operator", "destinations.failures": "workspace" });
});

dlq.run();
