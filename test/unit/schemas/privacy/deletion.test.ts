/**
 * The SQL of a user's deletion (schemas/privacy/deletion.ts): which rows of each table it covers,
 * on one server and on a cluster, and statements under max_query_size whatever the linked ids.
 * The live side is test/live/privacy.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { deletionTargets, DELETION_IDS_BYTES, IDS_PER_DELETION, linkedIdsQuery } from "../../../../schemas/privacy/deletion";

test("deletionTargets: events up to the request by userId or, without one, by the userId or a linked id as anonymousId; users and identities by userId only", () => {
  const targets = deletionTargets("db", "events", "w", "u", ["u", "a'1"], 1_700_000_000.2);
  assert.equal(
    targets.map((t) => t.table),
    ["events", "users", "identities", "rejected_messages", "delivery_failures"],
  );
  const [events, users, identities, rejected, failures] = targets;
  assert.is(failures!.where, events!.where, "kept delivery failures by the events' rule");
  assert.is(
    events!.where,
    "workspace_id = 'w' AND (user_id = 'u' OR (user_id = '' AND anonymous_id IN ('u', 'a\\'1'))) AND received_at <= toDateTime(1700000001)",
  );
  assert.is(events!.mutation, `ALTER TABLE \`db\`.\`events\` DELETE WHERE ${events!.where}`);
  assert.is(users!.count, "SELECT count() AS n FROM `db`.`users` WHERE workspace_id = 'w' AND user_id = 'u'");
  assert.is(identities!.where, "workspace_id = 'w' AND user_id = 'u'");
  assert.match(rejected!.where, `workspace_id = 'w' AND ((startsWith(raw, '{"userId":"u",') OR raw = '{"userId":"u"}' OR `);
  assert.match(
    rejected!.where,
    `OR ((NOT (startsWith(raw, '{"userId":"') OR startsWith(raw, '{"userId":-') OR startsWith(raw, '{"userId":0')`,
  );
  assert.match(rejected!.where, `OR startsWith(raw, '{"userId":9')) OR startsWith(raw, '{"userId":"",')) AND (`);
  assert.match(rejected!.where, `position(raw, '"anonymousId":"a\\'1"') > 0`);
  assert.not.match(rejected!.where, `'"userId":"a\\'1"'`, "a linked id never matches a refused item's userId");
  assert.match(linkedIdsQuery("db", "events", "w", "u"), /FROM `db`\.`identities` WHERE workspace_id = 'w' AND user_id = 'u'/);
});

test("deletionTargets on a cluster: counts read the Distributed tables, mutations alter each shard's _local table ON CLUSTER", () => {
  const targets = deletionTargets("db", "events", "w", "u", [], 1_700_000_000, "c1");
  assert.equal(
    targets.map((t) => [t.table, t.storage]),
    [
      ["events", "events_local"],
      ["users", "users_local"],
      ["identities", "identities_local"],
      ["rejected_messages", "rejected_messages_local"],
      ["delivery_failures", "delivery_failures_local"],
    ],
  );
  for (const t of targets) {
    assert.ok(t.count.startsWith(`SELECT count() AS n FROM \`db\`.\`${t.table}\` WHERE `), t.count);
    assert.is(t.mutation, `ALTER TABLE \`db\`.\`${t.storage}\` ON CLUSTER \`c1\` DELETE WHERE ${t.where}`);
  }
  assert.is(deletionTargets("db", "events", "w", "u", [], 1_700_000_000)[0]!.storage, "events", "one server: the table itself");
});

test("a deletion of any number of linked ids: every id in a statement under max_query_size, the user's own match once", () => {
  const linked = [...Array(5_150).keys()].map((i) => `linked-${"x".repeat(180)}-${i}`);
  const targets = deletionTargets("db", "events", "w", "u", linked, 1_700_000_000);
  const events = targets.filter((t) => t.table === "events");
  const rejected = targets.filter((t) => t.table === "rejected_messages");
  assert.ok(events.length >= 5 && events.length <= 7, `${events.length} events statements`);
  for (const id of linked) {
    assert.ok(
      events.some((t) => t.where.includes(`'${id}'`)),
      id,
    );
    assert.ok(
      rejected.some((t) => t.where.includes(`"anonymousId":"${id}"`)),
      id,
    );
  }
  for (const t of targets)
    assert.ok(Buffer.byteLength(t.mutation) < 262_144 - 10_000, `${t.table}: ${Buffer.byteLength(t.mutation)} bytes`);
  assert.is(events.filter((t) => t.where.includes("user_id = 'u' OR")).length, 1);
});

test("ids of control characters (seven bytes each in a refused item's match) still make statements under max_query_size", () => {
  // 200 such ids made a 564 KB refused-items statement, which ClickHouse refuses: the deletion stopped there.
  const linked = [...Array(400).keys()].map((i) => "\u0001".repeat(196) + String(i).padStart(4, "0"));
  const targets = deletionTargets("db", "events", "w", "u", linked, 1_700_000_000);
  for (const t of targets)
    assert.ok(Buffer.byteLength(t.mutation) < 262_144 - 10_000, `${t.table}: ${Buffer.byteLength(t.mutation)} bytes`);
  const rejected = targets.filter((t) => t.table === "rejected_messages");
  for (const id of linked)
    assert.ok(
      // The id as JSON text inside an SQL string: each backslash of `\u0001` doubled.
      rejected.some((t) => t.where.includes(JSON.stringify(id).slice(1, -1).replaceAll("\\", "\\\\"))),
      "every id matched",
    );
  assert.ok(rejected.length >= 3, `${rejected.length} refused-items statements`);
});

test("ids of newlines: escaped in the statement, so it is as long as the text ClickHouse forwards to a cluster's servers", () => {
  const linked = [...Array(1_500).keys()].map((i) => "\n".repeat(196) + String(i).padStart(4, "0"));
  const targets = deletionTargets("db", "events", "w", "u", linked, 1_700_000_000, "c1");
  for (const t of targets) {
    assert.not.ok(t.mutation.includes("\n"), "no raw newline");
    assert.ok(Buffer.byteLength(t.mutation) < 262_144 - 10_000, `${t.table}: ${Buffer.byteLength(t.mutation)} bytes`);
  }
});

test("UUID-sized ids: thousands to a statement, at most IDS_PER_DELETION", () => {
  const linked = [...Array(9_999).keys()].map((i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`);
  const targets = deletionTargets("db", "events", "w", "u", linked, 1_700_000_000);
  assert.is(targets.filter((t) => t.table === "events").length, 5);
  // About 150 bytes of matches an id, 1.5 MB in all: 7 or 8 statements (50 of 200 ids before).
  const rejected = targets.filter((t) => t.table === "rejected_messages").length;
  assert.ok(rejected >= Math.ceil((10_000 * 132) / DELETION_IDS_BYTES) && rejected <= 8, `${rejected} refused-items statements`);
  for (const t of targets) assert.ok(t.where.split("anonymous_id IN").length <= 2);
  assert.ok(IDS_PER_DELETION * 14 < 50_000);
});

test.run();

test.run();
