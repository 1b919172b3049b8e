/**
 * The destination health route (deploy/admin/routes-health.ts): messages waiting from the
 * group's offsets (a group without commits from the destination's creation; what retention
 * removed not counted), with a stand-in Kafka admin and its deadline; reports summed or the
 * largest, stale ones ignored, a report tombstoned gone (through the AdminBook); the count of kept
 * failures; the route's place in the table.
 */
import type { Kafka } from "kafkajs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AdminBook } from "../../../../schemas/admin/book";
import type { DestinationHealthRecord } from "../../../../schemas/admin/records";
import { ADMIN_ROUTES } from "../../../../deploy/admin/routes";
import {
  failuresKeptQuery,
  freshReports,
  HEALTH_ROUTES,
  healthOf,
  REPORT_FRESH_MS,
  waitingMessages,
  waitingOf,
} from "../../../../deploy/admin/routes-health";
import { START_MARGIN_MS } from "../../../../sink/deliver/loop";

const health = suite("destination health");
const T0 = Date.parse("2026-11-29T10:00:00.000Z");

const report = (instanceId: string, over: Partial<DestinationHealthRecord> = {}): DestinationHealthRecord => ({
  kind: "destination-health",
  destinationId: "d-1",
  workspaceId: "ws-1",
  instanceId,
  at: new Date(T0).toISOString(),
  delivered: 0,
  retried: 0,
  failed: 0,
  oldestWaitingSeconds: 0,
  ...over,
});

health("waiting: the high watermark less the commit, per partition; without any commit, from where the group will start", () => {
  const ends = [
    { partition: 0, high: "100", low: "0" },
    { partition: 1, high: "50", low: "40" },
    { partition: 2, high: "7", low: "0" },
  ];
  assert.is(
    waitingOf(ends, [
      { partition: 0, offset: "90" },
      { partition: 1, offset: "10" }, // below the low watermark: what retention removed is not waiting
      { partition: 2, offset: "7" },
    ]),
    10 + 10 + 0,
  );
  assert.is(waitingOf(ends, [{ partition: 0, offset: "-1" }], [{ partition: 0, offset: "60" }]), 40, "no commit: from its start");
  assert.is(waitingOf(ends, [], []), 0, "no commit and no start: nothing counted");
  assert.is(waitingOf([{ partition: 0, high: "5", low: "0" }], [{ partition: 0, offset: "9" }]), 0, "never negative");
  assert.is(
    waitingOf([{ partition: 0, high: "9007199254740993", low: "0" }], [{ partition: 0, offset: "9007199254740990" }]),
    3,
    "offsets past 2^53",
  );
});

/** A stand-in Kafka whose admin answers these offsets, and records the start time it was asked for. */
function kafkaOf(committed: { partition: number; offset: string }[], hang = false) {
  const asked: number[] = [];
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    fetchTopicOffsets: async () =>
      hang
        ? new Promise(() => undefined)
        : [
            { partition: 0, offset: "100", high: "100", low: "0" },
            { partition: 1, offset: "30", high: "30", low: "0" },
          ],
    fetchOffsets: async () => [{ topic: "events", partitions: committed }],
    fetchTopicOffsetsByTimestamp: async (_topic: string, at: number) => {
      asked.push(at);
      return [
        { partition: 0, offset: "95" },
        { partition: 1, offset: "30" },
      ];
    },
  };
  return { kafka: { admin: () => admin } as unknown as Kafka, asked };
}

health(
  "waitingMessages reads the group's offsets; a group without commits counts from the destination's creation less the margin",
  async () => {
    const started = kafkaOf([
      { partition: 0, offset: "80" },
      { partition: 1, offset: "-1" },
    ]);
    assert.is(await waitingMessages(started.kafka, "events", "g", new Date(T0).toISOString()), 20);
    assert.equal(started.asked, [], "a group with a commit is not asked where it starts");
    const fresh = kafkaOf([
      { partition: 0, offset: "-1" },
      { partition: 1, offset: "-1" },
    ]);
    assert.is(await waitingMessages(fresh.kafka, "events", "g", new Date(T0).toISOString()), 5);
    assert.equal(fresh.asked, [T0 - START_MARGIN_MS]);
  },
);

health("waitingMessages throws when Kafka does not answer in time", async () => {
  const { kafka } = kafkaOf([], true);
  const error = await waitingMessages(kafka, "events", "g", new Date(T0).toISOString(), 50).catch((e: Error) => e);
  assert.instance(error, Error);
  assert.match((error as Error).message, /not read within 50 ms/);
});

health("reports: counts summed, the oldest waiting the largest, reportedAt the newest; none fresh: nulls and zeros", () => {
  const fresh = [
    report("aaaaaaaaaaaaaaaa", { delivered: 5, retried: 1, failed: 2, oldestWaitingSeconds: 3, at: new Date(T0 - 40_000).toISOString() }),
    report("bbbbbbbbbbbbbbbb", { delivered: 7, retried: 4, failed: 0, oldestWaitingSeconds: 9, at: new Date(T0 - 10_000).toISOString() }),
  ];
  assert.equal(healthOf("d-1", fresh, { waiting: 12, failuresKept: 3 }), {
    destinationId: "d-1",
    waiting: 12,
    oldestWaitingSeconds: 9,
    delivered: 12,
    retried: 5,
    failed: 2,
    failuresKept: 3,
    reportedAt: new Date(T0 - 10_000).toISOString(),
  });
  assert.equal(healthOf("d-1", [], { waiting: 0, failuresKept: 0 }), {
    destinationId: "d-1",
    waiting: 0,
    oldestWaitingSeconds: null,
    delivered: 0,
    retried: 0,
    failed: 0,
    failuresKept: 0,
    reportedAt: null,
  });
});

health("a report older than 2 minutes is ignored (a killed process's); a tombstoned one is gone from the book", () => {
  const book = new AdminBook();
  const live = report("aaaaaaaaaaaaaaaa", { at: new Date(T0 - 30_000).toISOString(), delivered: 1 });
  const dead = report("bbbbbbbbbbbbbbbb", { at: new Date(T0 - REPORT_FRESH_MS - 1).toISOString(), delivered: 100 });
  const stopped = report("cccccccccccccccc", { at: new Date(T0).toISOString(), delivered: 1_000 });
  for (const r of [live, dead, stopped]) book.apply(`destination-health:d-1:${r.instanceId}`, JSON.stringify(r));
  book.apply(`destination-health:d-1:${stopped.instanceId}`, null);
  const fresh = freshReports(book.healthReports("d-1"), T0);
  assert.equal(fresh, [live]);
  assert.is(healthOf("d-1", fresh, { waiting: 0, failuresKept: 0 }).delivered, 1);
  assert.equal(freshReports([dead], T0 - 1_000), [dead], "the same report counts while it is fresh (control)");
});

health("the kept failures query counts the destination's of its workspace not resolved, FINAL", () => {
  const q = failuresKeptQuery("db", "d-1", "ws-'1");
  assert.match(q, /SELECT count\(\) AS n FROM `db`\.`delivery_failures` FINAL/);
  assert.match(q, /destination_id = 'd-1' AND workspace_id = 'ws-\\'1' AND resolved = 0/);
});

health("the route: a GET of the workspace's destination, answering DestinationHealth, in the table", () => {
  const [route] = HEALTH_ROUTES;
  assert.is(HEALTH_ROUTES.length, 1);
  assert.is(route!.path, "/admin/v1/workspaces/{workspaceId}/destinations/{destinationId}/health");
  assert.equal([route!.method, route!.scope, route!.answer, route!.status], ["get", "workspace", "DestinationHealth", 200]);
  assert.ok(ADMIN_ROUTES.includes(route!));
});

health.run();
