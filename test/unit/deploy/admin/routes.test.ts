/**
 * The admin API's route table (deploy/admin/routes.ts): unique operationIds, scopes consistent
 * with paths (a `{workspaceId}` path is workspace-scoped, tokens and the whole audit are the
 * operator's), statuses, and the audit routes' query refusals, which answer before ClickHouse is asked.
 */
import pino from "pino";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AdminBook } from "../../../../schemas/admin/book";
import { ADMIN_ROUTES, isoTime, type AdminCall, type AdminContext } from "../../../../deploy/admin/routes";
import { adminCall } from "../../../support/admin-fixtures";

const routes = suite("admin routes table");

const route = (operationId: string) => ADMIN_ROUTES.find((r) => r.operationId === operationId)!;

routes("operationIds are unique, and each method+path is served once", () => {
  const ids = ADMIN_ROUTES.map((r) => r.operationId);
  assert.is(new Set(ids).size, ids.length);
  const paths = ADMIN_ROUTES.map((r) => `${r.method} ${r.path}`);
  assert.is(new Set(paths).size, paths.length);
  for (const id of ids) assert.match(id, /^[a-z]+\.[a-z-]+$/);
});

routes("a path with {workspaceId} is workspace-scoped; tokens.* and audit.list are the operator's", () => {
  for (const r of ADMIN_ROUTES) {
    if (r.path.includes("{workspaceId}")) assert.is(r.scope, "workspace", r.operationId);
    if (r.scope === "workspace") assert.ok(r.path.includes("{workspaceId}"), `${r.operationId} names its workspace`);
    if (r.operationId.startsWith("tokens.")) assert.is(r.scope, "operator", r.operationId);
  }
  assert.is(route("audit.list").scope, "operator");
  assert.is(route("workspaces.list").scope, "any");
  assert.ok(ADMIN_ROUTES.filter((r) => r.operationId.startsWith("tokens.")).length >= 3);
});

routes("every route answers 200 or 201 (a read 200); what creates a key, token or regulation answers 201", () => {
  for (const r of ADMIN_ROUTES) {
    assert.ok(r.status === 200 || r.status === 201, r.operationId);
    if (r.method === "get") assert.is(r.status, 200, r.operationId);
    assert.ok(r.path.startsWith("/admin/v1/"), r.path);
  }
  for (const id of ["keys.create", "tokens.create", "regulations.create"]) assert.is(route(id).status, 201, id);
  for (const id of ["keys.revoke", "tokens.revoke"]) assert.is(route(id).status, 200, id);
});

routes("the audit routes refuse a bad limit or since before reading", async () => {
  const context = {
    book: new AdminBook(),
    database: "d",
    log: pino({ level: "silent" }),
    clickhouse: {
      query: () => {
        throw new Error("ClickHouse must not be asked");
      },
    },
  } as unknown as AdminContext;
  const call = (query: AdminCall["query"]) => adminCall({ workspaceId: "ws1" }, { query });
  for (const id of ["audit.list", "audit.workspace"]) {
    for (const limit of ["0", "1001", "1.5", "abc"]) {
      const result = await route(id).handle(context, call({ limit }));
      assert.equal(result.ok ? "done" : [result.status, result.field], [400, "limit"], `${id} limit=${limit}`);
    }
    const since = await route(id).handle(context, call({ since: "not a time" }));
    assert.equal(since.ok ? "done" : [since.status, since.field], [400, "since"]);
    try {
      await route(id).handle(context, call({ limit: "1000", since: "2026-03-01T00:00:00Z" }));
      assert.unreachable("a good query reads ClickHouse");
    } catch (error) {
      assert.match((error as Error).message, "must not be asked");
    }
  }
});

routes("isoTime takes ISO 8601 dates and times as UTC text, and refuses what only Date.parse would take", () => {
  assert.is(isoTime("2026-11-29T13:00:00+01:00"), "2026-11-29T12:00:00.000Z");
  assert.is(isoTime("2026-11-29"), "2026-11-29T00:00:00.000Z");
  assert.is(isoTime("99999"), null);
  assert.is(isoTime("Sun Nov 29 2026"), null);
  assert.is(isoTime("2026-13-45T00:00:00Z"), null);
});

routes.run();
