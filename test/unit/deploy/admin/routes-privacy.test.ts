/**
 * The admin API's regulation routes (deploy/admin/routes-privacy.ts): the list's query filters
 * (status, regulationTypes: comma-separated, each refusal naming its field) and show's 404, with
 * a stand-in context holding only an AdminBook.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RegulationRecord } from "../../../../schemas/admin/records";
import { REGULATION_ROUTES } from "../../../../deploy/admin/routes-privacy";
import type { AdminCall, AdminContext } from "../../../../deploy/admin/routes";
import { adminCall, bookOf, regulationRecord } from "../../../support/admin-fixtures";

const privacy = suite("admin regulation routes");

const regulation = (n: string, workspaceId: string, overallStatus: RegulationRecord["overallStatus"]) =>
  regulationRecord({ regulateId: `reg_${n.repeat(16)}`, workspaceId, overallStatus });

const book = bookOf(regulation("1", "ws1", "FINISHED"), regulation("2", "ws1", "RUNNING"), regulation("3", "ws2", "FINISHED"));
const context = { book } as unknown as AdminContext;
const call = (params: Record<string, string>, query: AdminCall["query"] = {}) => adminCall(params, { query });
const route = (id: string) => REGULATION_ROUTES.find((r) => r.operationId === id)!;
const list = (query: AdminCall["query"]) => route("regulations.list").handle(context, call({ workspaceId: "ws1" }, query));

privacy("the list refuses an unknown status or type by field", async () => {
  const status = await list({ status: "BOGUS" });
  assert.equal(status.ok ? "done" : [status.status, status.field], [400, "status"]);
  const mixed = await list({ status: "FINISHED,BOGUS" });
  assert.equal(mixed.ok ? "done" : mixed.field, "status");
  const types = await list({ regulationTypes: "DELETE_EVERYTHING" });
  assert.equal(types.ok ? "done" : [types.status, types.field], [400, "regulationTypes"]);
});

privacy("the list filters by status and type, within the path's workspace", async () => {
  const ids = async (query: AdminCall["query"]) => {
    const result = await list(query);
    if (!result.ok) throw new Error(result.error);
    return (result.value as { regulations: RegulationRecord[] }).regulations.map((r) => r.regulateId).sort();
  };
  assert.equal(await ids({}), [`reg_${"1".repeat(16)}`, `reg_${"2".repeat(16)}`]);
  assert.equal(await ids({ status: "FINISHED" }), [`reg_${"1".repeat(16)}`]);
  assert.equal(await ids({ status: "FINISHED,RUNNING," }), [`reg_${"1".repeat(16)}`, `reg_${"2".repeat(16)}`]);
  assert.equal(await ids({ regulationTypes: "SUPPRESS_ONLY" }), []);
  assert.equal(await ids({ regulationTypes: "DELETE_ONLY" }), [`reg_${"1".repeat(16)}`, `reg_${"2".repeat(16)}`]);
});

privacy("show answers a regulation of the path's workspace, 404 otherwise", async () => {
  const show = (workspaceId: string, n: string) =>
    route("regulations.show").handle(context, call({ workspaceId, regulateId: `reg_${n.repeat(16)}` }));
  const found = await show("ws1", "1");
  assert.ok(found.ok && (found.value as RegulationRecord).workspaceId === "ws1");
  const other = await show("ws1", "3");
  assert.equal(other.ok ? "done" : [other.status, other.field], [404, "regulateId"]);
  const none = await show("ws1", "9");
  assert.equal(none.ok ? "done" : none.status, 404);
});

privacy("every regulation route is workspace-scoped", () => {
  assert.equal(
    REGULATION_ROUTES.map((r) => [r.operationId, r.scope]),
    [
      ["regulations.create", "workspace"],
      ["regulations.list", "workspace"],
      ["regulations.show", "workspace"],
    ],
  );
});

privacy.run();
