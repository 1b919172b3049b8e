/**
 * `users delete | suppress | unsuppress` (live, real Kafka and ClickHouse): a user's rows go from
 * every table, including events acknowledged while the sink was stopped (they wait in Kafka and
 * are dropped when it resumes); other users' rows are untouched (count and checksum); a
 * suppressed user's new events, by userId or by a linked anonymousId, are answered 2xx by two
 * ingest processes and stored by none; unsuppress stores them again; each request leaves an
 * audit row. Hostile links (issue 23): an identify naming another user's userId as its
 * anonymousId never makes that user's rows match; a deletion a running sink may still undo
 * exits non-zero.
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, LiveStack, stopService, waitFor } from "../support/harness";
import { quoteString } from "../../schemas/clickhouse/sql";

// A refused-items topic of its own: the shared one holds every earlier test's, which a new sink group reads first.
const stack = new LiveStack({ KAFKA_REJECTED_TOPIC: `test-rejected-${randomUUID().slice(0, 8)}` });
const privacy = suite("deleting and suppressing a user (live)");

/**
 * The suppressions topic made before setup (which keeps a topic it finds) with a record limit of
 * 64 KB: an entry over it is the case of a user with more linked ids than Kafka's default 1 MB.
 */
const SUPPRESSIONS_MAX_MESSAGE_BYTES = 65_536;

privacy.before(async () => {
  const admin = stack.kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [
        {
          topic: stack.env.KAFKA_SUPPRESSIONS_TOPIC!,
          numPartitions: 1,
          configEntries: [
            { name: "cleanup.policy", value: "compact" },
            { name: "max.message.bytes", value: String(SUPPRESSIONS_MAX_MESSAGE_BYTES) },
          ],
        },
      ],
    });
  } finally {
    await admin.disconnect();
  }
  await stack.start();
});
privacy.after(() => stack.stop());

const WS = "ws-test";
const id = () => randomUUID();

/** Posts a batch to an ingest; every answer must be 200. */
async function send(base: string, batch: Record<string, unknown>[]): Promise<void> {
  const response = await fetch(`${base}/v1/batch`, {
    method: "POST",
    headers: { authorization: basic("test-key"), "content-type": "application/json" },
    body: JSON.stringify({ batch }),
  });
  assert.is(response.status, 200, await response.text());
}

/** A user's messages: an anonymous page, an identify linking the anonymousId, tracks by userId. */
function journey(userId: string, anonymousId: string, tracks: number): Record<string, unknown>[] {
  return [
    { type: "page", name: "Home", anonymousId, messageId: id() },
    { type: "identify", userId, anonymousId, traits: { email: `${userId}@example.com` }, messageId: id() },
    ...Array.from({ length: tracks }, (_, i) => ({ type: "track", event: "Clicked", userId, properties: { i }, messageId: id() })),
  ];
}

/** Runs the CLI with this stack's settings; resolves with its stdout, throws on a non-zero exit. */
async function cli(...args: string[]): Promise<string> {
  const run = stack.spawn("deploy/cli.js", { PRIVACY_SINK_WAIT_MS: "3000" }, args);
  let stdout = "";
  run.child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  const { code } = await run.exited;
  if (code !== 0) throw new Error(`cli ${args.join(" ")} exited ${code}:\n${run.output()}`);
  return stdout;
}

/** Rows (not collapsed) in `table` matching `where` in the test workspace. */
async function count(table: string, where: string): Promise<number> {
  const [row] = await stack.select<{ n: string }>(
    `SELECT count() AS n FROM ${stack.database}.${table} WHERE workspace_id = '${WS}' AND ${where}`,
  );
  return Number(row!.n);
}

/** Count and checksum of the events rows not of `ids`: what a deletion must leave as it was. */
async function others(ids: string[]): Promise<string> {
  const list = ids.map((i) => `'${i}'`).join(", ");
  const [row] = await stack.select<{ n: string; sum: string }>(
    `SELECT count() AS n, sum(cityHash64(message_id, user_id, anonymous_id, properties, traits)) AS sum FROM ${stack.table} FINAL
     WHERE workspace_id = '${WS}' AND user_id NOT IN (${list}) AND anonymous_id NOT IN (${list}) AND event != 'marker'`,
  );
  return `${row!.n} rows, checksum ${row!.sum}`;
}

/** Waits until the sink committed every record of the events topic and of the refused-items topic. */
const caughtUp = () =>
  waitFor(
    "the sink committed every record",
    async () => {
      const events = await stack.groupLag();
      const refused = await stack.groupLag(stack.env.KAFKA_REJECTED_TOPIC!, `${stack.env.SINK_GROUP_ID!}-rejected`);
      return events.committed === events.end && refused.committed === refused.end ? true : undefined;
    },
    60_000,
  );

/** End offsets of the events and refused-items topics (what the ingests produced). */
const produced = async () => [
  (await stack.groupLag(stack.env.KAFKA_TOPIC!, "none")).end,
  (await stack.groupLag(stack.env.KAFKA_REJECTED_TOPIC!, "none")).end,
];

privacy("users delete: every table, events still in Kafka included; other users untouched; an audit row", async () => {
  const [gone, anon, kept, keptAnon] = ["del-u1", "del-anon-1", "keep-u2", "keep-anon-2"];
  // with two refused items of the user (tracks without their event name), kept in rejected_messages;
  // the second, 24 KB as sent, has 12,000 quotes before its anonymousId: escaped again in its
  // record they pass 32 KB, so its stored text is cut
  const big = { type: "track", messageId: id(), properties: { note: '"'.repeat(12_000) }, anonymousId: anon };
  await send(stack.base, [...journey(gone, anon, 5), ...journey(kept, keptAnon, 5), { type: "track", userId: gone, messageId: id() }, big]);
  await stack.marker();
  await caughtUp();
  const ofGone = `(position(raw, '${gone}') > 0 OR message_id = '${big.messageId}')`;
  await waitFor("the refused items", async () => ((await count("rejected_messages", ofGone)) === 2 ? true : undefined));
  const before = await others([gone, anon]);

  // acknowledged while the sink is stopped: these wait in Kafka during the deletion
  await stopService(stack.sink!);
  await send(stack.base, [
    { type: "track", event: "In flight", userId: gone, messageId: id() },
    { type: "page", name: "In flight", anonymousId: anon, messageId: id() },
  ]);
  const stdout = await cli("users", "delete", WS, gone, "--by", "test-operator");
  // stdout: one `table<TAB>rows` line per table (the CLI's log lines are JSON)
  const lines = stdout.split("\n").filter((line) => line.includes("\t") && !line.startsWith("{"));
  const removed = Object.fromEntries(lines.map((line) => line.split("\t") as [string, string]));
  console.log(`\n  rows removed per table: ${JSON.stringify(removed)}`);
  assert.equal(Object.keys(removed), ["events", "users", "identities", "rejected_messages", "delivery_failures"]);
  assert.is(removed.events, "7", "a page, an identify and 5 tracks; the 2 in Kafka were never stored");
  assert.is(removed.rejected_messages, "2", "the cut one too: its anonymousId is kept first");
  // users and identities hold a row per insert block until merges, so at least one each
  assert.ok(Number(removed.users) >= 1 && Number(removed.identities) >= 1);

  stack.sink = stack.spawn("sink/main.js");
  await stack.marker();
  await caughtUp();
  const ids = `'${gone}', '${anon}'`;
  assert.is(await count("events", `(user_id IN (${ids}) OR anonymous_id IN (${ids}))`), 0, "no event of the user, in-flight ones included");
  assert.is(await count("users", `user_id = '${gone}'`), 0);
  assert.is(await count("identities", `user_id = '${gone}' OR anonymous_id = '${anon}'`), 0);
  assert.is(await count("rejected_messages", ofGone), 0);
  assert.is(await others([gone, anon]), before, "other users' rows: same count and checksum");
  assert.is(await count("users", `user_id = '${kept}'`), 1);

  const [audit] = await stack.select<{ action: string; requested_by: string; ids: string[]; tables: string[]; rows_removed: string[] }>(
    `SELECT action, requested_by, ids, tables, rows_removed FROM ${stack.database}.privacy_requests WHERE user_id = '${gone}'`,
  );
  assert.is(audit!.action, "delete");
  assert.is(audit!.requested_by, "test-operator");
  assert.equal([...audit!.ids].sort(), [anon, gone]);
  assert.equal(audit!.tables, ["events", "users", "identities", "rejected_messages", "delivery_failures"]);
  assert.equal(audit!.rows_removed.map(Number), Object.values(removed).map(Number));
});

privacy(
  "users delete --suppress: new events of the user and of their anonymousId are answered 2xx and stored by neither ingest; unsuppress stores them",
  async () => {
    const [user, anon] = ["sup-u3", "sup-anon-3"];
    const { service: second, port } = await stack.startIngest();
    try {
      const bases = [stack.base, `http://127.0.0.1:${port}`];
      await send(stack.base, journey(user, anon, 2));
      await stack.marker();
      await caughtUp();
      await cli("users", "delete", WS, user, "--suppress", "--by", "test-operator");
      await new Promise((r) => setTimeout(r, 3_000)); // every process follows the topic (within a second here)

      const before = await produced();
      for (const base of bases) {
        await send(base, [
          { type: "track", event: "After", userId: user, messageId: id() },
          { type: "page", name: "After", anonymousId: anon, messageId: id() },
          { type: "track", userId: user, messageId: id() }, // refused (no event name): not kept either
        ]);
      }
      assert.equal(await produced(), before, "both ingests answered 2xx and produced nothing");
      await stack.marker();
      await caughtUp();
      const ids = `'${user}', '${anon}'`;
      assert.is(await count("events", `(user_id IN (${ids}) OR anonymous_id IN (${ids}))`), 0, "suppressed: nothing stored");
      assert.is(await count("rejected_messages", `position(raw, '${user}') > 0`), 0);

      await cli("users", "unsuppress", WS, user, "--by", "test-operator");
      await new Promise((r) => setTimeout(r, 3_000));
      const back = bases.map(() => ({ type: "track", event: "Back", userId: user, messageId: id() }));
      for (const [i, base] of bases.entries()) await send(base, [back[i]!]);
      await stack.rowsLanded(back.map((m) => m.messageId));

      const audit = await stack.select<{ action: string }>(
        `SELECT action FROM ${stack.database}.privacy_requests WHERE user_id = '${user}' ORDER BY requested_at, action`,
      );
      assert.equal(audit.map((a) => a.action).sort(), ["delete+suppress", "unsuppress"]);
    } finally {
      await stopService(second);
    }
  },
);

privacy(
  "hostile link: mallory's identify names alice's userId as its anonymousId; deleting and suppressing mallory leave alice whole",
  async () => {
    const suffix = id().slice(0, 8);
    const [alice, aliceDevice, mallory] = [`alice-${suffix}`, `alice-dev-${suffix}`, `mallory-${suffix}`];
    await send(stack.base, journey(alice, aliceDevice, 2));
    await send(stack.base, [
      { type: "identify", userId: mallory, anonymousId: alice, messageId: id() },
      { type: "track", event: "Planted", userId: mallory, messageId: id() },
    ]);
    await stack.marker();
    await caughtUp();
    const aliceRows = async () => [
      await count("events", `user_id = '${alice}'`),
      await count("users", `user_id = '${alice}'`),
      await count("identities", `user_id = '${alice}'`),
    ];
    const before = await aliceRows();
    assert.equal(before.slice(0, 1), [3], "alice's identify and 2 tracks");
    await cli("users", "delete", WS, mallory, "--suppress", "--by", "test-operator");
    assert.is(await count("events", `user_id = '${mallory}'`), 0, "mallory's rows are gone");
    assert.equal(await aliceRows(), before, "alice's events, users and identities rows stay");
    await new Promise((r) => setTimeout(r, 3_000)); // the ingest follows the suppression
    const later = { type: "track", event: "Still here", userId: alice, messageId: id() };
    await send(stack.base, [later]);
    await stack.rowsLanded([later.messageId]);
  },
);

privacy(
  "a user with more linked ids than a record of the suppressions topic holds (any writeKey can link them): delete --suppress runs whole, in several records, and audits every id",
  async () => {
    const victim = `victim-${id().slice(0, 8)}`;
    // 1,400 ids of 200 characters (the longest the ingest takes), each linked by an identify: 290 KB
    // of ids, over the topic's 64 KB and over max_query_size (256 KiB) as a literal in SQL; then
    // 200 ids of control characters, seven bytes each in a refused item's match (`\\u0001` in SQL): in one
    // statement of 200 ids, 564 KB.
    const linked = [
      ...[...Array(1_400).keys()].map((i) => `${victim}-dev-${i}-`.padEnd(200, "x")),
      ...[...Array(200).keys()].map((i) => `${victim}-dev-c${i}-`.padEnd(200, "\u0001")),
    ];
    for (let at = 0; at < linked.length; at += 200)
      await send(
        stack.base,
        linked.slice(at, at + 200).map((anonymousId) => ({ type: "identify", userId: victim, anonymousId, messageId: id() })),
      );
    const [first, last] = [linked[0]!, linked[linked.length - 1]!];
    // With them, a refused item (a track without its event) of the last id, kept in rejected_messages.
    const refused = id();
    await send(stack.base, [
      ...[first, last].map((anonymousId) => ({ type: "page", name: "Before", anonymousId, messageId: id() })),
      { type: "track", anonymousId: last, messageId: refused },
    ]);
    await stack.marker();
    await caughtUp();
    const ofVictim = `(user_id = '${victim}' OR anonymous_id LIKE '${victim}-dev-%')`;
    assert.is(await count("events", ofVictim), 1_602);
    assert.is(await count("rejected_messages", `message_id = '${refused}'`), 1);

    const suppressions = stack.env.KAFKA_SUPPRESSIONS_TOPIC!;
    const recordsBefore = (await stack.groupLag(suppressions, "none")).end;
    await cli("users", "delete", WS, victim, "--suppress", "--by", "test-operator");
    const records = (await stack.groupLag(suppressions, "none")).end - recordsBefore;
    assert.ok(records >= 5, `the entry in ${records} records of at most ${SUPPRESSIONS_MAX_MESSAGE_BYTES / 2} bytes of ids`);
    assert.is(await count("events", ofVictim), 0, "the user's events and the anonymous pages of the first and last linked id are gone");
    assert.is(await count("rejected_messages", `message_id = '${refused}'`), 0, "the refused item of the last linked id is gone");

    await new Promise((r) => setTimeout(r, 3_000)); // the ingest follows the suppression
    const before = await produced();
    await send(stack.base, [{ type: "page", name: "After", anonymousId: last, messageId: id() }]);
    assert.equal(await produced(), before, "an anonymous page of the last linked id (in the entry's last record): 2xx, not produced");

    const [audit] = await stack.select<{ n: string; first: number; last: number }>(
      `SELECT length(ids) AS n, has(ids, '${first}') AS first, has(ids, ${quoteString(last)}) AS last
       FROM ${stack.database}.privacy_requests WHERE user_id = '${victim}'`,
    );
    assert.equal({ ...audit!, n: Number(audit!.n) }, { n: 1_601, first: 1, last: 1 }, "the audit row lists the userId and every linked id");
    console.log(`\n  ${linked.length} linked ids: the entry in ${records} records; audit row with ${audit!.n} ids`);
  },
);

privacy("a deletion the sink may still undo (it runs and is behind past PRIVACY_SINK_WAIT_MS) says so and exits non-zero", async () => {
  const user = `late-${id().slice(0, 8)}`;
  await send(stack.base, journey(user, `${user}-anon`, 1));
  await stack.marker();
  await caughtUp();
  process.kill(stack.sink!.child.pid!, "SIGSTOP"); // still a member of its group for the session timeout (6 s here)
  try {
    await send(stack.base, [{ type: "track", event: "Held", userId: user, messageId: id() }]);
    const error = await cli("users", "delete", WS, user, "--by", "test-operator").then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(error, "the CLI exits non-zero");
    assert.match(error!.message, /deletion incomplete/);
  } finally {
    process.kill(stack.sink!.child.pid!, "SIGCONT");
  }
  await stack.marker();
  await caughtUp();
  const [audit] = await stack.select<{ n: string }>(
    `SELECT count() AS n FROM ${stack.database}.privacy_requests WHERE user_id = '${user}'`,
  );
  assert.is(Number(audit!.n), 1, "the rows found were deleted and audited");
});

privacy.run();
