/**
 * The admin API's routes for a workspace's webhook destinations and tracking plan: the operations
 * of `destinations ...` and `plans ...` (deploy/commands/destinations.ts, deliveries.ts,
 * plans.ts), each scoped to the path's workspace: another workspace's destination is 404, as if
 * it did not exist. A destination's body is checked here first (typia: each bad field named),
 * then by the operation (the URL's address, the headers, the batch bounds).
 */
import typia, { tags } from "typia";
import { done, invalid, type OpResult } from "../../schemas/admin/result";
import type { DeliveriesSettings } from "../commands/deliveries";
import { testDestination, replayDestinationFailures } from "../commands/deliveries";
import { addDestination, listDestinations, removeDestination, setDestinationPaused } from "../commands/destinations";
import { applyPlan, checkPlan, diffPlan, draftPlanOf, removePlan, showPlan, type PlansOpContext } from "../commands/plans";
import type { AdminContext, AdminRoute } from "./routes";
import type { MessageType } from "../../schemas/messages";

/** What the destination and plan routes act with, beside AdminContext's clients. */
export interface WorkspaceContext {
  destinations: DeliveriesSettings;
  plans: PlansOpContext;
}

/** POST .../destinations: a webhook destination (DestinationInput without its workspaceId, which is the path's). */
export interface DestinationBody {
  url: string & tags.MinLength<1> & tags.MaxLength<2048>;
  id?: string & tags.Pattern<"^[a-z0-9][a-z0-9-]{0,62}$">;
  name?: string & tags.MinLength<1> & tags.MaxLength<100>;
  headers?: Record<string, string>;
  /** The shared secret in clear, or true to have one made (answered once). */
  secret?: string | true;
  types?: MessageType[];
  events?: string[];
  categories?: string[];
  batchSize?: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<1000>;
  batchWaitMs?: number & tags.Type<"uint32"> & tags.Maximum<60000>;
}

/** POST .../plan/check: a time range of stored events, and optionally a plan to check instead of the one in force. */
export interface PlanCheckBody {
  from: string;
  to: string;
  plan?: object;
}

const validateDestination = typia.createValidate<DestinationBody>();
const validateCheck = typia.createValidate<PlanCheckBody>();

const destination = (verb: string, summary: string, handle: AdminRoute["handle"], method: AdminRoute["method"] = "post"): AdminRoute => ({
  method,
  path: `/admin/v1/workspaces/{workspaceId}/destinations/{destinationId}${verb === "" ? "" : `/${verb}`}`,
  operationId: `destinations.${verb || "remove"}`,
  summary,
  scope: "workspace",
  answer: verb === "test" ? "DestinationTest" : verb === "replay-failures" ? "ReplayCounts" : verb === "" ? "Removed" : "Destination",
  status: 200,
  handle,
  target: ({ params }) => params.destinationId!,
});

const plan = (c: AdminContext): PlansOpContext => c.workspace.plans;

/** The destination and plan routes (see the module comment). */
export const WORKSPACE_ROUTES: readonly AdminRoute[] = [
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/destinations",
    operationId: "destinations.list",
    summary: "A workspace's webhook destinations (never a secret nor a header's value)",
    scope: "workspace",
    answer: "DestinationList",
    status: 200,
    handle: async (c, { params }) =>
      done({ destinations: await listDestinations(c.workspace.destinations, c.kafka, c.log, params.workspaceId) }),
  },
  {
    method: "post",
    path: "/admin/v1/workspaces/{workspaceId}/destinations",
    operationId: "destinations.add",
    summary: "Add a webhook destination; a generated secret is in this answer only",
    scope: "workspace",
    body: "DestinationBody",
    answer: "AddedDestination",
    status: 201,
    handle: async (c, { params, body, now }) => {
      const checked = validateDestination(body);
      if (!checked.success) return invalid("destination", checked.errors);
      return addDestination(c.workspace.destinations, c.kafka, c.log, { ...checked.data, workspaceId: params.workspaceId! }, now);
    },
    target: (_call, value) => (value as { destination: { destinationId: string } }).destination.destinationId,
  },
  destination("pause", "Pause a destination: its messages wait in Kafka", (c, { params, now }) =>
    setDestinationPaused(c.workspace.destinations, c.kafka, c.log, params.destinationId!, true, params.workspaceId, now),
  ),
  destination("resume", "Resume a paused destination", (c, { params, now }) =>
    setDestinationPaused(c.workspace.destinations, c.kafka, c.log, params.destinationId!, false, params.workspaceId, now),
  ),
  destination(
    "",
    "Remove a destination",
    (c, { params }) => removeDestination(c.workspace.destinations, c.kafka, c.log, params.destinationId!, params.workspaceId),
    "delete",
  ),
  destination("test", "Send one sample message to the destination now; answers its status", (c, { params, now }) =>
    testDestination(c.workspace.destinations, c.kafka, c.log, params.destinationId!, params.workspaceId, now),
  ),
  destination("replay-failures", "Send the destination's kept failures again (a deleted or suppressed user's skipped)", (c, { params }) =>
    replayDestinationFailures(c.workspace.destinations, c.kafka, c.clickhouse, c.log, params.destinationId!, params.workspaceId),
  ),
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/plan",
    operationId: "plans.show",
    summary: "The tracking plan in force (404: none)",
    scope: "workspace",
    answer: "TrackingPlan",
    status: 200,
    handle: (c, { params }) => showPlan(plan(c), params.workspaceId!),
  },
  {
    method: "put",
    path: "/admin/v1/workspaces/{workspaceId}/plan",
    operationId: "plans.apply",
    summary: "Apply a tracking plan (its next version); every ingest follows it within seconds",
    scope: "workspace",
    body: "PlanBody",
    answer: "AppliedPlan",
    status: 200,
    handle: (c, { params, body }) => applyPlan(plan(c), params.workspaceId!, body),
  },
  {
    method: "delete",
    path: "/admin/v1/workspaces/{workspaceId}/plan",
    operationId: "plans.remove",
    summary: "Remove the tracking plan",
    scope: "workspace",
    answer: "Removed",
    status: 200,
    handle: (c, { params }) => removePlan(plan(c), params.workspaceId!),
  },
  {
    method: "get",
    path: "/admin/v1/workspaces/{workspaceId}/plan/draft",
    operationId: "plans.draft",
    summary: "A plan drafted from the catalog of what has arrived",
    scope: "workspace",
    answer: "PlanBody",
    status: 200,
    handle: async (c, { params }) => done(await draftPlanOf(plan(c), params.workspaceId!)),
  },
  {
    method: "post",
    path: "/admin/v1/workspaces/{workspaceId}/plan/diff",
    operationId: "plans.diff",
    summary: "What applying this plan would change",
    scope: "workspace",
    body: "PlanBody",
    answer: "PlanDiff",
    status: 200,
    handle: (c, { params, body }) => diffPlan(plan(c), params.workspaceId!, body),
  },
  {
    method: "post",
    path: "/admin/v1/workspaces/{workspaceId}/plan/check",
    operationId: "plans.check",
    summary: "Check stored events of a time range against the plan in force, or the one given",
    scope: "workspace",
    body: "PlanCheckBody",
    answer: "PlanCheck",
    status: 200,
    handle: async (c, { params, body }): Promise<OpResult<unknown>> => {
      const checked = validateCheck(body);
      if (!checked.success) return invalid("check", checked.errors);
      return checkPlan(plan(c), params.workspaceId!, checked.data);
    },
  },
];
