/**
 * Fault scenarios on the local ClickHouse cluster (deploy/local/cluster.sh: two shards of two
 * replicas, ZooKeeper) in cluster mode (CLICKHOUSE_CLUSTER): the sink inserts into the Distributed
 * events table with insert_distributed_sync=1 through node 1. Same traffic and verdict as
 * test/faults: every messageId answered 2xx is in ClickHouse exactly once under FINAL. Run by
 * `npm run test:cluster` (test/faults/cluster/run.sh).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, sinkPort, stopService, waitFor } from "../../support/harness";
import { sleep, verdict } from "../node/scenarios";
import { Traffic } from "../node/traffic";
import { CLUSTER_DIR, clusterSh, clusterStack } from "./cluster";
import { messageRow } from "../../../schemas/row";
import type { Message } from "../../../schemas/messages";

const stack = clusterStack();
const cluster = suite("ClickHouse cluster (2 shards x 2 replicas)");

cluster.before(() => stack.start());
cluster.after(() => stack.stop());

/** ClickHouse node N (1-4): shard (N+1)/2; node 1 is the one the services use. */
const nodeUrl = (n: number) => `http://127.0.0.1:2${n}123`;
const nodePid = (n: number) => Number(readFileSync(join(CLUSTER_DIR, `clickhouse-${n}`, "clickhouse", "clickhouse.pid"), "utf8").trim());

/** One number from node N (a query answering one value). */
async function scalar(n: number, query: string): Promise<number> {
  const response = await fetch(nodeUrl(n), { method: "POST", body: `${query} FORMAT TSV`, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  if (!response.ok) throw new Error(`node ${n}: ${text}`);
  return Number(text.trim());
}

/** Rows for `userId` in node N's own `events_local` (its shard's copy), under FINAL. */
const localRows = (n: number, userId: string) =>
  scalar(n, `SELECT count() FROM ${stack.database}.events_local FINAL WHERE user_id = '${userId}'`);

const traffic = (userId: string) =>
  new Traffic(`${stack.base}/v1/batch`, basic("test-key"), { userId, batchSize: 10, workers: 4, pauseMs: 50, maxRequests: 20_000 });

cluster("setup made Replicated tables on every node and Distributed tables over them", async () => {
  for (const n of [1, 2, 3, 4]) {
    const engines = await fetch(nodeUrl(n), {
      method: "POST",
      body: `SELECT name, engine FROM system.tables WHERE database = '${stack.database}' AND name IN ('events', 'events_local', 'users', 'users_local') ORDER BY name FORMAT TSV`,
    }).then((r) => r.text());
    assert.is(
      engines.trim(),
      "events\tDistributed\nevents_local\tReplicatedReplacingMergeTree\nusers\tDistributed\nusers_local\tReplicatedAggregatingMergeTree",
      `node ${n}`,
    );
  }
});

cluster("one ClickHouse replica stopped 60 s under load, then restarted and caught up", async () => {
  const userId = "cl-replica-down";
  const t = traffic(userId);
  t.start();
  await sleep(5_000);
  // node 3: shard 2's first replica; the Distributed insert passes over it to node 4
  await clusterSh("clickhouse", "3", "stop");
  const stoppedAt = Date.now();
  const rowsAtStop = await localRows(4, userId);
  // The sink reads the shards' replicas every 15 s (sink/monitors/redundancy.ts): shard 2's tables show 1 of 2 up.
  const metricsUrl = `http://127.0.0.1:${await sinkPort(stack.sink!)}/metrics`;
  const down = await waitFor(
    "the sink reports shard 2's replica down",
    async () => {
      const text = await (await fetch(metricsUrl)).text();
      const active = /^sink_clickhouse_replicas_active\{path="([^"]*events_local)",replica="[^"]*"\} 1$/m.exec(text);
      const total = active && new RegExp(`^sink_clickhouse_replicas\\{path="${active[1]}",replica="[^"]*"\\} 2$`, "m").test(text);
      return total ? active[1] : undefined;
    },
    40_000,
  );
  console.log(`  the sink reported ${down}: 1 of 2 replicas up`);
  await sleep(Math.max(0, 60_000 - (Date.now() - stoppedAt)));
  const rowsBeforeRestart = await localRows(4, userId);
  const during = t.figures();
  await clusterSh("clickhouse", "3", "start");
  await sleep(5_000);
  await t.stop();
  await t.drain(90_000);
  assert.ok(
    t.ackTimes.some((at) => at > stoppedAt + 5_000 && at < stoppedAt + 55_000),
    "requests were acknowledged with the replica down",
  );
  assert.ok(rowsBeforeRestart > rowsAtStop, `shard 2 took rows on its other replica meanwhile (${rowsAtStop} -> ${rowsBeforeRestart})`);
  const result = await verdict(
    stack,
    "ClickHouse replica (shard 2, node 3) stopped 60 s, restarted",
    userId,
    t,
    `acked during the outage: ${during.acked}`,
  );
  const copies = await waitFor(
    "both replicas of each shard hold the same rows",
    async () => {
      const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map((n) => localRows(n, userId)));
      return a === b && c === d && a! + c! === result.rows ? [a!, b!, c!, d!] : undefined;
    },
    60_000,
  );
  console.log(`  rows per node (shard 1: nodes 1, 2; shard 2: nodes 3, 4): ${copies.join(", ")}`);
});

cluster("the sink SIGKILLed mid-insert while shard 2 is frozen, then restarted", async () => {
  const userId = "cl-between-shards";
  const t = traffic(userId);
  t.start();
  try {
    await sleep(5_000);
    // Freeze shard 2 (both replicas): node 1 takes the sink's insert, its shard 1 part is local,
    // and the part for shard 2 waits on a server that does not answer.
    const frozen = [3, 4].map(nodePid);
    for (const pid of frozen) process.kill(pid, "SIGSTOP");
    let shard1: number[] = [];
    let lag = { committed: 0, end: 0 };
    try {
      const rowsAtFreeze = await localRows(1, userId);
      await sleep(6_000);
      shard1 = [rowsAtFreeze, await localRows(1, userId)];
      lag = await stack.groupLag();
      stack.sink!.child.kill("SIGKILL");
      await stack.sink!.exited;
    } finally {
      for (const pid of frozen) process.kill(pid, "SIGCONT");
    }
    assert.ok(lag.committed < lag.end, `killed with records fetched and not committed (committed ${lag.committed} of ${lag.end})`);
    stack.sink = stack.spawn("sink/main.js");
    await sleep(5_000);
    await t.stop();
    await t.drain(90_000);
    await verdict(
      stack,
      "Sink SIGKILLed mid-insert (shard 2 frozen 6 s), restarted",
      userId,
      t,
      `shard 1 rows at the freeze and at the kill: ${shard1.join(" -> ")}; uncommitted records at the kill: ${lag.end - lag.committed}`,
    );
  } finally {
    await t.stop();
  }
});

cluster("the same messages sent to two ingest processes land once", async () => {
  const userId = "cl-two-ingests";
  const { service: second, port } = await stack.startIngest();
  try {
    const bases = [stack.base, `http://127.0.0.1:${port}`];
    const endBefore = (await stack.groupLag()).end;
    const ids = Array.from({ length: 2_000 }, (_, i) => `two-ingests-${stack.id}-${i}`);
    let acked = 0;
    for (let i = 0; i < ids.length; i += 50) {
      const batch = ids.slice(i, i + 50).map((messageId) => ({ type: "track", event: "Twice", userId, messageId }));
      const statuses = await Promise.all(
        bases.map((base) =>
          fetch(`${base}/v1/batch`, {
            method: "POST",
            headers: { authorization: basic("test-key"), "content-type": "application/json" },
            body: JSON.stringify({ batch }),
          }).then((r) => r.status),
        ),
      );
      assert.equal(statuses, [200, 200]);
      acked += batch.length;
    }
    const records = (await stack.groupLag()).end - endBefore;
    assert.is(records, 2 * ids.length, "both ingests produced every message (two records per messageId)");
    await verdict(
      stack,
      "Same 2,000 messages to two ingest processes",
      userId,
      { sent: ids.length, acked, rejected: {}, slowestRefusalMs: 0, refusalsWithoutRetryAfter: 0 },
      `${records} Kafka records`,
    );
  } finally {
    await stopService(second);
  }
});

cluster(
  "a retried insert is written again, as on one server (insert_deduplicate off): twice in events_local, once under FINAL",
  async () => {
    // A Replicated table skips a block it stored before, and the materialized views with it: a retry
    // after a view failed would never feed users, identities or catalog_shapes (clusterSettings).
    const userId = `cl-retry-${stack.id}`;
    const at = "2026-11-27T10:00:00.000Z";
    const rows = Array.from({ length: 50 }, (_, i) =>
      messageRow({ type: "track", event: "Retried", userId, messageId: `retry-${stack.id}-${i}` } as Message, {
        workspaceId: "ws-test",
        receivedAt: at,
        sentAt: null,
        originalTimestamp: at,
        timestamp: at,
        context: undefined,
      }),
    );
    for (let attempt = 0; attempt < 2; attempt++)
      await stack.ch.insert({
        table: "events",
        values: rows,
        format: "JSONEachRow",
        clickhouse_settings: { date_time_input_format: "best_effort" },
      });
    const raw = (n: number) => scalar(n, `SELECT count() FROM ${stack.database}.events_local WHERE user_id = '${userId}'`);
    // Each shard's two replicas agree once the fetches are done; the total is one replica per shard.
    const total = await waitFor(
      "every replica fetched the parts",
      async () => {
        const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map(raw));
        return a === b && c === d && a! + c! === 100 ? a! + c! : undefined;
      },
      30_000,
    );
    assert.is(total, 100, "both attempts stored");
    const final = await scalar(1, `SELECT count() FROM ${stack.database}.events FINAL WHERE user_id = '${userId}'`);
    assert.is(final, 50, "collapsed under FINAL");
    const seen = await scalar(1, `SELECT uniqMerge(events) FROM ${stack.database}.users WHERE user_id = '${userId}'`);
    assert.is(seen, 50, "the users view fed, its count idempotent");
    console.log(`  retried insert: events_local ${total} rows over the shards, ${final} under FINAL, users.events ${seen}`);
  },
);

cluster.run();
