/**
 * The operator's commands on the local cluster (deploy/local/cluster.sh: two shards of two
 * replicas on ClickHouse 18.16) in cluster mode, each checked on every node's own tables:
 * `users delete` removes a user's rows from every replica of every shard (ALTER ... DELETE ON
 * CLUSTER, waited for through ZooKeeper) and leaves another user's as they were; `properties
 * materialize` adds a column ON CLUSTER and writes it into the stored parts of every replica,
 * `dematerialize` drops it everywhere; `retention` drops an old month that one shard alone holds;
 * `migrate` adds a column an older release lacked to `_local` and to the Distributed table.
 * Run by `npm run test:cluster` (test/faults/cluster/run.sh).
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, waitFor } from "../../support/harness";
import { dropColumnDdl } from "../../../schemas/clickhouse/materialize";
import { clusterStack } from "./cluster";

const stack = clusterStack();
const admin = suite("operator commands ON CLUSTER (2 shards x 2 replicas)");

admin.before(() => stack.start());
admin.after(() => stack.stop());

const NODES = [1, 2, 3, 4] as const;
const WS = "ws-test";
const id = () => randomUUID();

/** One number from ClickHouse node N (1-4; shard (N+1)/2), from a query answering one value. */
async function scalar(n: number, query: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:2${n}123`, { method: "POST", body: `${query} FORMAT TSV` });
  const text = await response.text();
  if (!response.ok) throw new Error(`node ${n}: ${text}`);
  return Number(text.trim());
}

/** The same count on every node: `[node 1, node 2, node 3, node 4]`. */
const onEveryNode = (query: string) => Promise.all(NODES.map((n) => scalar(n, query)));

/** Posts a batch; every answer must be 200. */
async function send(batch: Record<string, unknown>[]): Promise<void> {
  const response = await fetch(`${stack.base}/v1/batch`, {
    method: "POST",
    headers: { authorization: basic("test-key"), "content-type": "application/json" },
    body: JSON.stringify({ batch }),
  });
  assert.is(response.status, 200, await response.text());
}

/** Runs the CLI in cluster mode with this stack's settings; throws on a non-zero exit. */
async function cli(extra: Record<string, string>, ...args: string[]): Promise<void> {
  const run = stack.spawn("deploy/cli.js", extra, args);
  const { code } = await run.exited;
  if (code !== 0) throw new Error(`cli ${args.join(" ")} exited ${code}:\n${run.output()}`);
}

/** An anonymous page, an identify linking the anonymousId, then tracks with `properties.plan`. */
const journey = (userId: string, anonymousId: string, tracks: number) => [
  { type: "page", name: "Home", anonymousId, messageId: id() },
  { type: "identify", userId, anonymousId, traits: { plan: "pro" }, messageId: id() },
  ...Array.from({ length: tracks }, (_, i) => ({
    type: "track",
    event: "Clicked",
    userId,
    properties: { plan: "pro", i },
    messageId: id(),
  })),
];

const TRACKS = 40;
const [ALICE, BOB] = [`alice-${id().slice(0, 8)}`, `bob-${id().slice(0, 8)}`];
const [ALICE_ANON, BOB_ANON] = [id(), id()];

/** A user's events rows (theirs and their anonymous page) in node N's own copy of its shard. */
const localEvents = (userId: string, anonymousId: string) =>
  `SELECT count() FROM ${stack.database}.events_local FINAL WHERE workspace_id = '${WS}' AND (user_id = '${userId}' OR anonymous_id = '${anonymousId}')`;

admin("users delete: the user's rows leave every replica of both shards; another user's stay", async () => {
  await send([...journey(ALICE, ALICE_ANON, TRACKS), ...journey(BOB, BOB_ANON, TRACKS)]);
  const total = TRACKS + 2;
  const landed = async (userId: string, anonymousId: string) => {
    const rows = await onEveryNode(localEvents(userId, anonymousId));
    // each replica holds its shard's whole copy, and the two shards hold every row between them
    return rows[0] === rows[1] && rows[2] === rows[3] && rows[0]! + rows[2]! === total ? rows : undefined;
  };
  const aliceBefore = await waitFor("Alice's rows on every replica", () => landed(ALICE, ALICE_ANON), 60_000);
  const bobBefore = await waitFor("Bob's rows on every replica", () => landed(BOB, BOB_ANON), 60_000);
  assert.ok(aliceBefore[0]! > 0 && aliceBefore[2]! > 0, `Alice's rows are on both shards: ${aliceBefore}`);
  const users = (userId: string, table: string) =>
    onEveryNode(`SELECT count() FROM ${stack.database}.${table} WHERE workspace_id = '${WS}' AND user_id = '${userId}'`);
  const usersBefore = await waitFor("Alice's users row on its shard's replicas", async () => {
    const rows = await users(ALICE, "users_local");
    return rows.some((r) => r > 0) ? rows : undefined;
  });
  console.log(`  before: Alice's events rows per node ${aliceBefore}, users rows ${usersBefore}; Bob's events ${bobBefore}`);

  const started = Date.now();
  await cli({ PRIVACY_SINK_WAIT_MS: "30000" }, "users", "delete", WS, ALICE, "--by", "cluster-test");
  const seconds = (Date.now() - started) / 1000;
  const after = await onEveryNode(localEvents(ALICE, ALICE_ANON));
  const [usersAfter, identitiesAfter] = [await users(ALICE, "users_local"), await users(ALICE, "identities_local")];
  console.log(
    `  users delete took ${seconds.toFixed(1)} s; after: Alice's events ${after}, users ${usersAfter}, identities ${identitiesAfter}`,
  );
  assert.equal(after, [0, 0, 0, 0], "Alice's events rows on nodes 1-4");
  assert.equal(usersAfter, [0, 0, 0, 0], "Alice's users rows on nodes 1-4");
  assert.equal(identitiesAfter, [0, 0, 0, 0], "Alice's identities rows on nodes 1-4");
  assert.equal(await onEveryNode(localEvents(BOB, BOB_ANON)), bobBefore, "Bob's rows on nodes 1-4, as they were");
  const audit = await scalar(1, `SELECT count() FROM ${stack.database}.privacy_requests WHERE user_id = '${ALICE}' AND action = 'delete'`);
  assert.is(audit, 1, "one audit row");
});

admin("properties materialize writes prop_plan into the stored parts of every replica; dematerialize drops it everywhere", async () => {
  const parts = `FROM system.parts WHERE database = '${stack.database}' AND table = 'events_local' AND active`;
  const lacking = `SELECT count() ${parts} AND name NOT IN
    (SELECT name FROM system.parts_columns WHERE database = '${stack.database}' AND table = 'events_local' AND column = 'prop_plan')`;
  await cli({}, "properties", "materialize", "plan");
  const [withParts, lackingAfter] = await waitFor(
    "every replica's parts hold prop_plan",
    async () => {
      const [all, missing] = [await onEveryNode(`SELECT count() ${parts}`), await onEveryNode(lacking)];
      return missing.every((m) => m === 0) ? [all, missing] : undefined;
    },
    60_000,
  );
  console.log(`  materialize: active parts per node ${withParts}, parts without prop_plan ${lackingAfter}`);
  assert.ok(
    withParts.every((p) => p > 0),
    "every node has parts",
  );
  const pro = await onEveryNode(
    `SELECT count() FROM ${stack.database}.events_local WHERE user_id = '${BOB}' AND event = 'Clicked' AND prop_plan = 'pro'`,
  );
  assert.is(pro[0]! + pro[2]!, TRACKS, `Bob's tracks by prop_plan over the two shards: ${pro}`);
  await cli({}, "properties", "dematerialize", "plan");
  const columns = await onEveryNode(
    `SELECT count() FROM system.columns WHERE database = '${stack.database}' AND table IN ('events_local', 'events') AND name = 'prop_plan'`,
  );
  assert.equal(columns, [0, 0, 0, 0], "prop_plan gone from events_local and events on nodes 1-4");
});

admin("retention drops a month that only shard 2 holds, and deletes a refused item past it there, on both of its replicas", async () => {
  // One old row written into shard 2 alone (node 3; node 4 fetches it): shard 1, which the
  // services connect to, has no part of that month.
  const old = `${stack.database}.events_local`;
  const insert = `INSERT INTO ${old} (workspace_id, message_id, type, user_id, anonymous_id, received_at, timestamp)
    VALUES ('${WS}', '${id()}', 'track', 'old-user', '', toDateTime('2025-01-15 00:00:00'), toDateTime('2025-01-15 00:00:00'))`;
  const response = await fetch("http://127.0.0.1:23123", { method: "POST", body: insert });
  assert.ok(response.ok, await response.text());
  const month = `SELECT count() FROM ${old} WHERE toYYYYMM(event_date) = 202501`;
  const before = await waitFor("the old row on both replicas of shard 2", async () => {
    const rows = await onEveryNode(month);
    return rows[2] === 1 && rows[3] === 1 ? rows : undefined;
  });
  assert.equal(before, [0, 0, 1, 1], "the month is on shard 2 only");
  // A refused item received 200 days ago, and one of today, on shard 2 alone.
  const refused = `${stack.database}.rejected_messages_local`;
  const item = (id: string, daysAgo: number) =>
    fetch("http://127.0.0.1:23123", {
      method: "POST",
      body: `INSERT INTO ${refused} (workspace_id, received_at, rejection_id, message_id, type, reasons, raw)
    VALUES ('${WS}', now() - ${daysAgo * 86_400}, '${id}', '', 'track', ['event: string'], '{}')`,
    });
  for (const [tag, daysAgo] of [
    ["old", 200],
    ["new", 0],
  ] as const) {
    const answer = await item(`retention-${tag}-${id()}`, daysAgo);
    assert.ok(answer.ok, await answer.text());
  }
  const items = (tag: string) => onEveryNode(`SELECT count() FROM ${refused} WHERE startsWith(rejection_id, 'retention-${tag}-')`);
  await waitFor("both refused items on both replicas of shard 2", async () =>
    (await items("old"))[3] === 1 && (await items("new"))[3] === 1 ? true : undefined,
  );
  await cli({ RETENTION_DAYS: "180" }, "retention");
  const after = await onEveryNode(month);
  console.log(`  retention: rows of 2025-01 per node ${before} -> ${after}`);
  assert.equal(after, [0, 0, 0, 0], "2025-01 dropped on every node");
  const expired = await waitFor("the expired refused item deleted on both replicas", async () => {
    const rows = await items("old");
    return rows.every((n) => n === 0) ? rows : undefined;
  });
  assert.equal(expired, [0, 0, 0, 0]);
  assert.equal(await items("new"), [0, 0, 1, 1], "today's refused item kept");
});

admin("migrate adds a column an older release lacked to events_local ON CLUSTER and to the Distributed table, on every node", async () => {
  // The tables as an older release left them: no is_bot, in _local nor in the Distributed table.
  for (const ddl of dropColumnDdl("legacy", stack.database, "events", "is_bot", "pipeline")) {
    const response = await fetch("http://127.0.0.1:21123", { method: "POST", body: ddl });
    assert.ok(response.ok, await response.text());
  }
  const columns = (table: string) =>
    onEveryNode(`SELECT count() FROM system.columns WHERE database = '${stack.database}' AND table = '${table}' AND name = 'is_bot'`);
  assert.equal([...(await columns("events_local")), ...(await columns("events"))], [0, 0, 0, 0, 0, 0, 0, 0], "is_bot dropped");
  await cli({}, "migrate");
  const after = [...(await columns("events_local")), ...(await columns("events"))];
  console.log(`  migrate: is_bot in events_local and events per node ${after}`);
  assert.equal(after, [1, 1, 1, 1, 1, 1, 1, 1], "is_bot back in events_local and events on nodes 1-4");
  // The sink inserts through the Distributed table made again.
  const userId = `after-migrate-${id().slice(0, 8)}`;
  await send(journey(userId, id(), 3));
  await waitFor("the batch sent after migrate lands", async () => {
    const [row] = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} FINAL WHERE user_id = '${userId}'`);
    return Number(row!.n) === 4 ? true : undefined;
  });
});

admin.run();
