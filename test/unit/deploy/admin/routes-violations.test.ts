/**
 * The admin API's violations route (deploy/admin/routes-violations.ts): its query on both
 * dialects (FINAL, the workspace quoted, only flagged rows, newest first, the limit bounded), the
 * limit's refusal, and the rows as answered, with a stand-in Sql that records each query.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Sql } from "../../../../schemas/clickhouse/client";
import type { AdminCall, AdminContext } from "../../../../deploy/admin/routes";
import { flaggedMessage, limitOf, VIOLATION_ROUTES, violationsQuery } from "../../../../deploy/admin/routes-violations";
import { adminCall } from "../../../support/admin-fixtures";

const violations = suite("admin violations route");

violations("the query: under FINAL, the workspace quoted, flagged rows only, newest first, the limit bounded", () => {
  const q = violationsQuery("current", "db", "events", "ws'1", 500);
  assert.match(q, "FROM `db`.`events` FINAL");
  assert.match(q, "workspace_id = 'ws\\'1'");
  assert.match(q, "notEmpty(violations)");
  assert.match(q, "toUnixTimestamp64Milli(received_at) AS received_ms");
  assert.match(q, /ORDER BY received_at DESC, message_id, type\nLIMIT 200$/);
  assert.match(violationsQuery("current", "db", "events", "ws", 0), /LIMIT 1$/);
  const legacy = violationsQuery("legacy", "db", "events", "ws", 50);
  assert.match(legacy, "toUInt64(toUnixTimestamp(received_at)) * 1000 AS received_ms");
  assert.not.match(legacy, "64Milli");
});

violations("limit: 50 when absent, 1-200, anything else refused", () => {
  assert.is(limitOf({}), 50);
  assert.is(limitOf({ limit: "1" }), 1);
  assert.is(limitOf({ limit: "200" }), 200);
  for (const bad of ["0", "201", "1.5", "-3", "ten", "1e2"]) assert.is(limitOf({ limit: bad }), undefined, bad);
});

violations("a row as answered: its time as ISO 8601 (a 64-bit number as text too), its violations as stored", () => {
  const row = { message_id: "m1", type: "track", event: "Order", received_ms: "1772366400123", violations: ['{"path":"/x"}'] };
  assert.equal(flaggedMessage(row), {
    messageId: "m1",
    type: "track",
    event: "Order",
    receivedAt: "2026-03-01T12:00:00.123Z",
    violations: ['{"path":"/x"}'],
  });
  assert.is(flaggedMessage({ ...row, received_ms: 1772366400000 }).receivedAt, "2026-03-01T12:00:00.000Z");
});

violations("the route: scope workspace, its answer named; the path's workspace queried; a bad limit 400 before any query", async () => {
  const [route] = VIOLATION_ROUTES;
  assert.is(VIOLATION_ROUTES.length, 1);
  assert.is(route!.path, "/admin/v1/workspaces/{workspaceId}/plan/violations");
  assert.equal([route!.method, route!.scope, route!.operationId, route!.answer], ["get", "workspace", "plans.violations", "ViolationList"]);
  const queries: string[] = [];
  const sql: Sql = {
    command: async () => undefined,
    rows: async <T>(query: string) => {
      queries.push(query);
      if (query.includes("version()")) return [{ version: "18.16.1" }] as T[];
      return [{ message_id: "m1", type: "page", event: "Home", received_ms: 1000, violations: ["v"] }] as T[];
    },
  };
  const context = { workspace: { plans: { sql: async () => ({ sql, database: "db", table: "events" }) } } } as unknown as AdminContext;
  const call = (query: AdminCall["query"]) => adminCall({ workspaceId: "ws1" }, { query });
  const refused = await route!.handle(context, call({ limit: "0" }));
  assert.equal(refused, { ok: false, status: 400, error: "limit is a whole number from 1 to 200", field: "limit" });
  assert.is(queries.length, 0);
  const answered = await route!.handle(context, call({ limit: "5" }));
  assert.equal(answered, {
    ok: true,
    value: { violations: [{ messageId: "m1", type: "page", event: "Home", receivedAt: "1970-01-01T00:00:01.000Z", violations: ["v"] }] },
  });
  assert.match(queries[1]!, "workspace_id = 'ws1'");
  assert.match(queries[1]!, "toUnixTimestamp(received_at)", "the legacy dialect of an 18.16 server");
  assert.match(queries[1]!, /LIMIT 5$/);
});

violations.run();
