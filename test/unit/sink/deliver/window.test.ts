/**
 * The last minutes of each destination (sink/deliver/window.ts): counts summed over 15 one-minute
 * buckets and no older, the oldest waiting message's age at the time asked, only destinations run
 * now told, a stop keeping the buckets but not the wait, a change of workspace starting afresh.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { RecentDeliveries, WINDOW_MINUTES } from "../../../../sink/deliver/window";

const T0 = Date.parse("2026-11-29T10:00:00.000Z");
const MIN = 60_000;

test("counts of the last 15 minutes are summed by outcome; a bucket 15 minutes old is dropped", () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  recent.count("d-1", "delivered", 5, T0);
  recent.count("d-1", "delivered", 2, T0 + 30_000);
  recent.count("d-1", "retried", 3, T0 + 5 * MIN);
  recent.count("d-1", "failed", 1, T0 + 14 * MIN);
  assert.equal(recent.now(T0 + 14 * MIN + 59_000), [
    { destinationId: "d-1", workspaceId: "ws-1", delivered: 7, retried: 3, failed: 1, oldestWaitingSeconds: 0 },
  ]);
  assert.is(WINDOW_MINUTES, 15);
  const later = recent.now(T0 + 15 * MIN); // the minute of T0 has left the window
  assert.equal([later[0]!.delivered, later[0]!.retried, later[0]!.failed], [0, 3, 1]);
  const latest = recent.now(T0 + 30 * MIN);
  assert.equal([latest[0]!.delivered, latest[0]!.retried, latest[0]!.failed], [0, 0, 0], "still run: told with nothing counted");
});

test("the oldest waiting message's age is of the time asked; none waiting is 0", () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  recent.waitingSince("d-1", T0 - 4_000);
  assert.is(recent.now(T0)[0]!.oldestWaitingSeconds, 4);
  assert.is(recent.now(T0 + 6_500)[0]!.oldestWaitingSeconds, 10.5);
  recent.waitingSince("d-1", undefined);
  assert.is(recent.now(T0 + 7_000)[0]!.oldestWaitingSeconds, 0);
});

test("only destinations run now are told; a stop keeps the buckets (a resume counts on) but not the wait", () => {
  const recent = new RecentDeliveries();
  recent.count("d-never", "delivered", 9, T0);
  recent.running("d-1", "ws-1");
  recent.running("d-2", "ws-2");
  recent.count("d-1", "delivered", 4, T0);
  recent.waitingSince("d-1", T0 - 1_000);
  recent.stopped("d-1");
  recent.count("d-1", "failed", 1, T0); // a failure kept as the loop stopped still counts
  recent.waitingSince("d-1", T0 - 1_000); // ignored: not run
  assert.equal(
    recent.now(T0).map((d) => d.destinationId),
    ["d-2"],
    "a stopped destination and one never run are not told",
  );
  recent.running("d-1", "ws-1");
  assert.equal(
    recent.now(T0 + MIN).find((d) => d.destinationId === "d-1"),
    {
      destinationId: "d-1",
      workspaceId: "ws-1",
      delivered: 4,
      retried: 0,
      failed: 1,
      oldestWaitingSeconds: 0,
    },
  );
});

test("a destination run for another workspace starts afresh; a stopped one is forgotten once its window is empty", () => {
  const recent = new RecentDeliveries();
  recent.running("d-1", "ws-1");
  recent.count("d-1", "delivered", 4, T0);
  recent.running("d-1", "ws-2");
  assert.equal(recent.now(T0)[0], {
    destinationId: "d-1",
    workspaceId: "ws-2",
    delivered: 0,
    retried: 0,
    failed: 0,
    oldestWaitingSeconds: 0,
  });
  recent.count("d-1", "delivered", 1, T0);
  recent.stopped("d-1");
  recent.count("d-1", "retried", 2, T0 + 20 * MIN); // still known (stopped, its window not empty): counted
  assert.equal(recent.now(T0 + 34 * MIN), [], "not told while stopped");
  recent.now(T0 + 35 * MIN); // its window empty: forgotten
  recent.count("d-1", "delivered", 3, T0 + 35 * MIN); // of a destination not known here: ignored
  recent.running("d-1", "ws-2");
  assert.is(recent.now(T0 + 35 * MIN)[0]!.delivered, 0, "forgotten: what came while it was not known is not counted");
});

test.run();
