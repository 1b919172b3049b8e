/**
 * The admin API's server side (deploy/admin/api.ts): `allowed` for each scope and principal, and
 * the router on a local Koa server with stand-ins: Kafka whose producer() throws (nothing may be
 * published), a ClickHouse client whose insert records audit rows. The open document, 401 with
 * WWW-Authenticate, 403 by scope, bad JSON and refused bodies as AdminErrors, the audit row of a
 * change, and 503 when the operation throws. Against Kafka and ClickHouse: test/live/admin-api.test.ts.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import pino from "pino";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AdminBook } from "../../../../schemas/admin/book";
import type { AuditRow } from "../../../../schemas/clickhouse/audit";
import { parseWriteKeys } from "../../../../ingest/admission/keys";
import { AdminTokens, FailedAttempts, digestOf, type Principal } from "../../../../ingest/admission/tokens";
import { adminGuard } from "../../../../ingest/http/admin";
import { adminRouter, allowed } from "../../../../deploy/admin/api";
import type { AdminContext } from "../../../../deploy/admin/routes";
import { kafkaWithoutProducer, tokenRecord } from "../../../support/admin-fixtures";

const api = suite("admin api");

const operator: Principal = { kind: "operator", actor: "operator" };
const ws1: Principal = { kind: "workspace", workspaceId: "ws1", actor: "tok_00000000000a" };

api("allowed: operator routes for operators; workspace routes for the path's workspace; any for all", () => {
  assert.ok(allowed({ scope: "operator" }, operator, {}));
  assert.not.ok(allowed({ scope: "operator" }, ws1, {}));
  assert.ok(allowed({ scope: "workspace" }, operator, { workspaceId: "ws9" }));
  assert.ok(allowed({ scope: "workspace" }, ws1, { workspaceId: "ws1" }));
  assert.not.ok(allowed({ scope: "workspace" }, ws1, { workspaceId: "ws2" }));
  assert.not.ok(allowed({ scope: "workspace" }, operator, {}), "a workspace route without its workspace");
  assert.ok(allowed({ scope: "any" }, operator, {}));
  assert.ok(allowed({ scope: "any" }, ws1, {}));
});

const wsToken = tokenRecord(digestOf("sat_ws1"), "tok_00000000000a", {
  name: "ws1",
  scope: "workspace",
  workspaceId: "ws1",
  createdAt: "2026-03-01T00:00:00.000Z",
});
const rows: AuditRow[] = [];
const state = { auditFails: false };
const context = {
  kafka: kafkaWithoutProducer(),
  adminTopic: "admin",
  book: new AdminBook(),
  configuredKeys: () => parseWriteKeys(["k1=ws1", "k2=ws2"]),
  clickhouse: {
    insert: async ({ values }: { values: AuditRow[] }) => {
      if (state.auditFails) throw new Error("clickhouse down");
      rows.push(...values);
    },
  },
  database: "d",
  log: pino({ level: "silent" }),
  regulations: {},
  runner: {},
} as unknown as AdminContext;
const lookup = { token: (sha256: string) => (sha256 === wsToken.sha256 ? wsToken : undefined) };

let server: Server;
let base: string;
api.before(async () => {
  const router = adminRouter(context, adminGuard(new AdminTokens("op-token", lookup), new FailedAttempts()), { openapi: "3.1.0" });
  const app = new Koa();
  app.use(router.routes()).use(router.allowedMethods());
  server = createServer(app.callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
api.after.each(() => {
  rows.length = 0;
  state.auditFails = false;
});
api.after(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

const call = (path: string, init: { method?: string; token?: string; body?: string } = {}) =>
  fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: {
      ...(init.token === undefined ? {} : { Authorization: `Bearer ${init.token}` }),
      ...(init.body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: init.body }),
  });

api("the document is open; every route needs a token (401 with WWW-Authenticate)", async () => {
  const doc = await call("/admin/v1/openapi.json");
  assert.is(doc.status, 200);
  assert.equal(await doc.json(), { openapi: "3.1.0" });
  for (const path of ["/admin/v1/tokens", "/admin/v1/workspaces", "/admin/v1/workspaces/ws1/keys"]) {
    const none = await call(path);
    assert.is(none.status, 401, path);
    assert.match(none.headers.get("www-authenticate") ?? "", /^Bearer/);
    assert.is(((await none.json()) as { error: string }).error, "unauthorized");
    assert.is((await call(path, { token: "wrong" })).status, 401);
  }
  assert.is((await call("/admin/v1/tokens", { token: "op-token" })).status, 200, "positive control");
});

api("scopes: a workspace token reads its own workspace only, never an operator route (403)", async () => {
  const own = await call("/admin/v1/workspaces/ws1/keys", { token: "sat_ws1" });
  assert.is(own.status, 200);
  assert.equal(
    ((await own.json()) as { keys: { workspaceId: string }[] }).keys.map((k) => k.workspaceId),
    ["ws1"],
  );
  const other = await call("/admin/v1/workspaces/ws2/keys", { token: "sat_ws1" });
  assert.is(other.status, 403);
  assert.is(((await other.json()) as { error: string }).error, "forbidden");
  assert.is((await call("/admin/v1/tokens", { token: "sat_ws1" })).status, 403);
  const listed = (await (await call("/admin/v1/workspaces", { token: "sat_ws1" })).json()) as unknown;
  assert.equal(listed, { workspaces: [{ workspaceId: "ws1", keys: 1 }] });
  const all = (await (await call("/admin/v1/workspaces", { token: "op-token" })).json()) as { workspaces: unknown[] };
  assert.is(all.workspaces.length, 2);
  assert.is(rows.length, 0, "reads are not audited");
});

api("bad JSON is 400 bad_request naming the body", async () => {
  const bad = await call("/admin/v1/tokens", { method: "POST", token: "op-token", body: "{not json" });
  assert.is(bad.status, 400);
  const answer = (await bad.json()) as { error: string; field: string };
  assert.equal([answer.error, answer.field], ["bad_request", "body"]);
});

api("a refused body is 400 naming its field, and audited with its status and actor", async () => {
  const refused = await call("/admin/v1/tokens", { method: "POST", token: "op-token", body: "{}" });
  assert.is(refused.status, 400);
  assert.is(refused.headers.get("cache-control"), "no-store");
  const answer = (await refused.json()) as { error: string; field: string; issues: unknown[] };
  assert.equal([answer.error, answer.field], ["bad_request", "name"]);
  assert.ok(answer.issues.length >= 1);
  assert.is(rows.length, 1);
  assert.equal([rows[0]!.status, rows[0]!.actor, rows[0]!.scope, rows[0]!.action], [400, "operator", "operator", "tokens.create"]);
  assert.is(rows[0]!.params, '{"body":{}}');
  assert.is(refused.headers.get("x-audit"), null);
});

api("an operation that throws is 503, audited with status 0; an unwritten audit is flagged", async () => {
  const failed = await call("/admin/v1/workspaces/ws1/keys", { method: "POST", token: "sat_ws1" });
  assert.is(failed.status, 503);
  assert.is(((await failed.json()) as { error: string }).error, "unavailable");
  assert.equal(
    rows.map((r) => [r.status, r.actor, r.workspace_id, r.action]),
    [[0, "tok_00000000000a", "ws1", "keys.create"]],
  );
  state.auditFails = true;
  const unknown = await call("/admin/v1/tokens/tok_ffffffffffff", { method: "DELETE", token: "op-token" });
  assert.is(unknown.status, 404);
  assert.is(((await unknown.json()) as { field: string }).field, "tokenId");
  assert.is(unknown.headers.get("x-audit"), "unwritten");
});

api.run();
