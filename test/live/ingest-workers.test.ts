/**
 * INGEST_WORKERS > 1 (live, real Kafka and ClickHouse): a node:cluster primary and its workers
 * share the port, every acknowledged message lands once, and SIGTERM stops them all cleanly.
 */
import { randomUUID } from "node:crypto";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { processTree } from "../bench/procstat";
import { LiveStack, stopService } from "../support/harness";

const stack = new LiveStack({ INGEST_WORKERS: "2" });

test.before(() => stack.start());
test.after(() => stack.stop());

test("two workers behind one port: all rows land once; SIGTERM stops the primary and both workers", async () => {
  const primary = stack.ingest!.child.pid!;
  const tree = processTree(primary);
  assert.is(tree.length, 3, `primary + 2 workers, found pids ${tree.join(", ")}`);

  // Concurrent requests open several connections, which the primary hands to both workers.
  const ids: string[] = [];
  const answers = await Promise.all(
    Array.from({ length: 20 }, async () => {
      const batch = Array.from({ length: 5 }, () => ({ type: "track", event: "Clustered", userId: "u1", messageId: randomUUID() }));
      ids.push(...batch.map((m) => m.messageId));
      return stack.post("/v1/batch", { batch });
    }),
  );
  assert.equal([...new Set(answers.map((a) => a.status))], [200]);
  await stack.rowsLanded(ids, 100);

  const exited = await stopService(stack.ingest!);
  assert.equal(exited, { code: 0, signal: null }, stack.ingest!.output());
  for (const pid of tree) assert.not.ok(isAlive(pid), `pid ${pid} still runs`);
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test.run();
