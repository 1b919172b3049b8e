/**
 * RETENTION_DAYS on users, identities and catalog_shapes (issue 46, row 4) and users' ranking of
 * identifies (row 10), as SQL text: the TTL on current ClickHouse and none on 18.16, the 18.16
 * deletions and the text system.mutations finds them by. Run on both engines: test/live/retention.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { USERS_RANK, aggregateRetentionTtl, feeds } from "../../../../schemas/clickhouse/analyst";
import { catalogFeed } from "../../../../schemas/clickhouse/catalog";
import {
  EXPIRING_TABLES,
  aggregateRetentionDdl,
  expiryDeletionDdl,
  recentExpiryDeletionsQuery,
} from "../../../../schemas/clickhouse/tables";

test("aggregateRetentionTtl: a row kept while the day of its max state is one of the last N days", () => {
  assert.is(aggregateRetentionTtl("last_seen", 30.7), "TTL toDate(finalizeAggregation(last_seen)) + toIntervalDay(30)");
});

test("the aggregate tables carry the TTL on current ClickHouse with RETENTION_DAYS only", () => {
  const all = (dialect: "current" | "legacy", days?: number) => [
    ...feeds(dialect, "db", "events", undefined, days),
    catalogFeed(dialect, "db", "events", undefined, days),
  ];
  const withTtl = all("current", 30).map(
    (f) => /TTL toDate\(finalizeAggregation\((\w+)\)\) \+ toIntervalDay\(30\)$/.exec(f.tableDdl[0]!)?.[1],
  );
  assert.equal(withTtl, ["last_seen", "last_linked_at", "last_seen"]);
  assert.equal(
    all("current", 30).map((f) => f.expiresBy),
    withTtl,
  );
  for (const f of [...all("current"), ...all("legacy", 30)]) assert.not.match(f.tableDdl[0]!, /TTL/, f.table);
  // On a cluster the TTL is the `_local` table's; the Distributed one has none.
  const [users] = feeds("current", "db", "events", "c", 30);
  assert.match(users!.tableDdl[0]!, /^CREATE TABLE IF NOT EXISTS `db`\.`users_local` ON CLUSTER `c`[\s\S]*TTL /);
  assert.not.match(users!.tableDdl[1]!, /TTL/);
});

test("aggregateRetentionDdl: MODIFY TTL on an existing table of current ClickHouse, REMOVE TTL without the setting, nothing on 18.16", () => {
  const bare =
    "CREATE TABLE db.users (...) ENGINE = AggregatingMergeTree ORDER BY (workspace_id, user_id) SETTINGS index_granularity = 8192";
  assert.equal(aggregateRetentionDdl("current", "db", "users", "last_seen", bare, 30), [
    "ALTER TABLE `db`.`users` MODIFY TTL toDate(finalizeAggregation(last_seen)) + toIntervalDay(30)",
  ]);
  const set = bare.replace(" SETTINGS", " TTL toDate(finalizeAggregation(last_seen)) + toIntervalDay(30) SETTINGS");
  assert.equal(aggregateRetentionDdl("current", "db", "users", "last_seen", set, 30), []);
  assert.equal(aggregateRetentionDdl("current", "db", "users", "last_seen", set), ["ALTER TABLE `db`.`users` REMOVE TTL"]);
  assert.equal(aggregateRetentionDdl("current", "db", "catalog_shapes", "last_seen", bare, 7, "c"), [
    "ALTER TABLE `db`.`catalog_shapes_local` ON CLUSTER `c` MODIFY TTL toDate(finalizeAggregation(last_seen)) + toIntervalDay(7)",
  ]);
  assert.equal(aggregateRetentionDdl("legacy", "db", "users", "last_seen", bare, 30), []);
});

test("18.16: one deletion per table by the same condition; the mutation check finds each table's own", () => {
  assert.equal(
    EXPIRING_TABLES.map((t) => t.table),
    ["rejected_messages", "users", "identities", "catalog_shapes"],
  );
  for (const t of EXPIRING_TABLES) {
    const ddl = expiryDeletionDdl("db", 1_700_000_000, undefined, t);
    assert.ok(ddl.startsWith(`ALTER TABLE \`db\`.\`${t.table}\` DELETE WHERE ${t.time} < toDateTime(1700000000)`), ddl);
    const start = /startsWith\(command, '([^']*)'\)/.exec(recentExpiryDeletionsQuery("db", undefined, t))?.[1];
    assert.ok(start !== undefined && ddl.includes(` ${start}1700000000)`), `${t.table}: ${start}`);
    assert.match(recentExpiryDeletionsQuery("db", "c", t), new RegExp(`table = '${t.table}_local'`));
  }
  assert.is(
    expiryDeletionDdl("db", 1_700_000_000, "c", EXPIRING_TABLES[1]),
    "ALTER TABLE `db`.`users_local` ON CLUSTER `c` DELETE WHERE finalizeAggregation(last_seen) < toDateTime(1700000000)",
  );
});

test("users ranks identifies and anonymousIds by least(timestamp, received_at); its feed names the step that marks it", () => {
  for (const dialect of ["current", "legacy"] as const) {
    const [users, identities] = feeds(dialect, "db", "events");
    assert.is(USERS_RANK, "least(timestamp, received_at)");
    assert.is(users!.viewDdl.split(USERS_RANK).length - 1, 2, dialect);
    assert.match(users!.viewDdl, /maxState\(timestamp\) AS last_seen/);
    assert.ok(users!.revision !== undefined && identities!.revision === undefined);
  }
});

test.run();
