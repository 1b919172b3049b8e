/**
 * The audit table (schemas/clickhouse/audit.ts): its DDL in both dialects and on a cluster, and
 * the audit query: every filter quoted, the limit clamped, no WHERE without filters. The table
 * against a server is test/live/admin-api.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AUDIT_SORTING_KEY, AUDIT_TABLE, auditQuery, auditTableDdl } from "../../../../schemas/clickhouse/audit";

const audit = suite("admin_audit sql");

audit("DDL: DateTime64(3, 'UTC') and LowCardinality on current ClickHouse, DateTime and String on 18.16", () => {
  const [current, ...more] = auditTableDdl("current", "d");
  assert.is(more.length, 0);
  assert.match(current!, "CREATE TABLE IF NOT EXISTS `d`.`admin_audit` (");
  assert.match(current!, "at DateTime64(3, 'UTC'),");
  assert.match(current!, "action LowCardinality(String),");
  assert.match(current!, /ENGINE = MergeTree\nORDER BY \(workspace_id, at, audit_id\)$/);
  const [legacy] = auditTableDdl("legacy", "d");
  assert.match(legacy!, "at DateTime,");
  assert.not.match(legacy!, "DateTime64");
  assert.not.match(legacy!, "LowCardinality");
  assert.is(
    AUDIT_SORTING_KEY.replace(/,/g, ", "),
    /ORDER BY \((.*)\)/.exec(current!)?.[1],
    "the sorting key ownership checks is the one created",
  );
});

audit("DDL on a cluster: a replicated _local table and a Distributed table over it, sharded by workspace", () => {
  const ddl = auditTableDdl("current", "d", "c");
  assert.is(ddl.length, 2);
  assert.match(ddl[0]!, "`d`.`admin_audit_local` ON CLUSTER `c`");
  assert.match(ddl[0]!, "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/d/admin_audit_local', '{replica}')");
  assert.match(ddl[1]!, "`d`.`admin_audit` ON CLUSTER `c` AS `d`.`admin_audit_local`");
  assert.match(ddl[1]!, "ENGINE = Distributed('c', 'd', 'admin_audit_local', cityHash64(workspace_id))");
  assert.is(AUDIT_TABLE, "admin_audit");
});

audit("query without filters has no WHERE; newest first", () => {
  const sql = auditQuery("d", { limit: 100 });
  assert.not.match(sql, "WHERE");
  assert.match(sql, "FROM `d`.`admin_audit`\nORDER BY at DESC, audit_id DESC\nLIMIT 100");
});

audit("query filters are quoted literals, joined by AND", () => {
  const sql = auditQuery("d", { workspaceId: "o'brien", actor: "tok_1", action: "keys.create", since: "2026-03-01T00:00:00Z", limit: 5 });
  assert.match(sql, "WHERE workspace_id = 'o\\'brien' AND actor = 'tok_1' AND action = 'keys.create'");
  assert.match(sql, "AND at >= parseDateTimeBestEffort('2026-03-01T00:00:00Z')\n");
  assert.not.match(sql, "'o'brien'");
  assert.match(auditQuery("d", { actor: "x\\' OR 1=1 --", limit: 1 }), "actor = 'x\\\\\\' OR 1=1 --'");
});

audit("limit is clamped to 1..1000 and made whole", () => {
  assert.match(auditQuery("d", { limit: 0 }), /LIMIT 1$/);
  assert.match(auditQuery("d", { limit: -5 }), /LIMIT 1$/);
  assert.match(auditQuery("d", { limit: 5000 }), /LIMIT 1000$/);
  assert.match(auditQuery("d", { limit: 7.9 }), /LIMIT 7$/);
  assert.match(auditQuery("d", { limit: 1000 }), /LIMIT 1000$/);
});

audit.run();
