/**
 * The admin API's regulation routes: deletion and suppression requests shaped like Segment's
 * Public API regulations (POST creates one, INITIALIZED; the ingest's RegulationRunner carries it
 * out, RUNNING, to FINISHED or FAILED; GET follows it). The operations are those of
 * `regulations create|list|show` (deploy/commands/regulations.ts and its -run and -command files).
 */
import { done, refuse, type OpResult } from "../../schemas/admin/result";
import type { RegulationStatus, RegulationType } from "../../schemas/admin/records";
import { REGULATION_STATUSES, REGULATION_TYPES, createRegulation, listRegulations, regulationStatus } from "../commands/regulations";
import type { AdminCall, AdminContext, AdminRoute } from "./routes";

/** `status` and `regulationTypes` of a list's query (comma-separated), or the field at fault. */
function filterOf(query: AdminCall["query"]): OpResult<{ status?: RegulationStatus[]; types?: RegulationType[] }> {
  const split = (text: string | undefined) => text?.split(",").filter((s) => s !== "");
  const status = split(query.status);
  const types = split(query.regulationTypes);
  if (status?.some((s) => !(REGULATION_STATUSES as readonly string[]).includes(s)))
    return refuse(400, `status is a list of ${REGULATION_STATUSES.join(", ")}`, "status");
  if (types?.some((t) => !(REGULATION_TYPES as readonly string[]).includes(t)))
    return refuse(400, `regulationTypes is a list of ${REGULATION_TYPES.join(", ")}`, "regulationTypes");
  return done({
    ...(status === undefined ? {} : { status: status as RegulationStatus[] }),
    ...(types === undefined ? {} : { types: types as RegulationType[] }),
  });
}

/** The regulation routes (see the module comment). */
export const REGULATION_ROUTES: readonly AdminRoute[] = [
  {
    method: "post",
    path: "/admin/v1/workspaces/{workspaceId}/regulations",
    operationId: "regulations.create",
    summary: "Delete or suppress users (Segment's regulationType, subjectType USER_ID, subjectIds); runs in the background",
    scope: "workspace",
    body: "RegulationInput",
    answer: "Regulation",
    status: 201,
    handle: async (c: AdminContext, { params, body, principal }) => {
      const made = await createRegulation(c.regulations, body, params.workspaceId!, principal.actor);
      if (made.ok) c.runner.enqueue(made.value);
      return made;
    },
    target: (_call, value) => (value as { regulateId: string }).regulateId,
  },
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/regulations",
    operationId: "regulations.list",
    summary: "A workspace's regulations, newest first (filters: status, regulationTypes, comma-separated)",
    scope: "workspace",
    answer: "RegulationList",
    status: 200,
    query: ["status", "regulationTypes"],
    handle: async (c, { params, query }) => {
      const filter = filterOf(query);
      return filter.ok ? done({ regulations: listRegulations(c.book, params.workspaceId, filter.value) }) : filter;
    },
  },
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/regulations/{regulateId}",
    operationId: "regulations.show",
    summary: "One regulation: overallStatus (INITIALIZED, RUNNING, FINISHED, FAILED), subjects done, error",
    scope: "workspace",
    answer: "Regulation",
    status: 200,
    handle: async (c, { params }) => regulationStatus(c.book, params.regulateId!, params.workspaceId),
  },
];
