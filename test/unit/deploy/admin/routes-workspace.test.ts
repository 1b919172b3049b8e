/**
 * The admin API's destination and plan routes (deploy/admin/routes-workspace.ts): each is scoped
 * to its path's workspace, and a body that is not what the route takes is refused naming each bad
 * field before any operation runs (the stand-in context throws if anything reaches Kafka).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { WORKSPACE_ROUTES } from "../../../../deploy/admin/routes-workspace";
import type { AdminContext, AdminRoute } from "../../../../deploy/admin/routes";
import { adminCall } from "../../../support/admin-fixtures";

const routes = suite("admin destination and plan routes");

const unreachable = () => {
  throw new Error("reached Kafka or ClickHouse");
};
const context = {
  kafka: { producer: unreachable, consumer: unreachable, admin: unreachable },
  workspace: {
    destinations: { kafka: { destinationsTopic: "t", clientId: "c" }, allowLinkLocal: false, env: {} },
    plans: { sql: unreachable },
  },
} as unknown as AdminContext;

const route = (operationId: string): AdminRoute => {
  const found = WORKSPACE_ROUTES.find((r) => r.operationId === operationId);
  assert.ok(found, operationId);
  return found!;
};

const call = (body: unknown) =>
  adminCall(
    { workspaceId: "ws-1", destinationId: "d-1" },
    { body, principal: { kind: "workspace", workspaceId: "ws-1", actor: "tok_000000000000" }, now: new Date("2026-11-29T12:00:00Z") },
  );

routes("every route is a workspace's, under its path's {workspaceId}", () => {
  assert.ok(WORKSPACE_ROUTES.length >= 12);
  for (const r of WORKSPACE_ROUTES) {
    assert.is(r.scope, "workspace", r.operationId);
    assert.ok(r.path.startsWith("/admin/v1/workspaces/{workspaceId}/"), r.path);
  }
  assert.equal(
    WORKSPACE_ROUTES.filter((r) => r.path.includes("{destinationId}")).map((r) => r.operationId),
    ["destinations.pause", "destinations.resume", "destinations.remove", "destinations.test", "destinations.replay-failures"],
  );
});

routes("destinations.add: a body that is not a destination is refused naming each bad field, before Kafka", async () => {
  const add = route("destinations.add");
  const missing = await add.handle(context, call({ headers: { "X-A": 1 } }));
  assert.is(missing.ok, false);
  if (missing.ok) return;
  assert.is(missing.status, 400);
  assert.equal(missing.issues?.map((i) => i.field).sort(), ['headers["X-A"]', "url"]);
  const typed = await add.handle(context, call({ url: "http://127.0.0.1/", batchSize: "10" }));
  assert.is(!typed.ok && typed.field, "batchSize");
  // a body that passes this check reaches the operation, which would reach Kafka (control)
  const reached = await add.handle(context, call({ url: "http://127.0.0.1/", id: "d-1" })).then(
    () => "answered",
    (error: Error) => error.message,
  );
  assert.is(reached, "reached Kafka or ClickHouse");
});

routes("plans.check: the range is required, named when missing", async () => {
  const check = route("plans.check");
  const refused = await check.handle(context, call({ to: "2026-11-29T00:00:00Z" }));
  assert.is(!refused.ok && refused.field, "from");
  const notObject = await check.handle(context, call("from=yesterday"));
  assert.is(!notObject.ok && notObject.status, 400);
});

routes("a change names its destination in the audit trail", () => {
  assert.is(route("destinations.pause").target?.(call(undefined), {}), "d-1");
  assert.is(route("destinations.add").target?.(call(undefined), { destination: { destinationId: "d-9" } }), "d-9");
});

routes.run();
