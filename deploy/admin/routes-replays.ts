/**
 * The admin API's routes for replaying a destination's stored events of a time range (the run of
 * `cli destinations replay`, deploy/commands/replay-range.ts): POST starts one, INITIALIZED, that
 * the ingest's ReplayRunner carries out in the background (RUNNING, then FINISHED or FAILED);
 * GET follows it (deploy/commands/replay-run.ts). Scoped to the path's workspace: another
 * workspace's destination is 404, as if it did not exist.
 */
import { done } from "../../schemas/admin/result";
import { createReplay, listReplays, replayStatus, type ReplayRunner, type ReplaysContext } from "../commands/replay-run";
import type { AdminRoute } from "./routes";

/** What the replay routes act with. */
export interface ReplaysPart {
  context: ReplaysContext;
  runner: ReplayRunner;
}

const PATH = "/admin/v1/workspaces/{workspaceId}/destinations/{destinationId}/replays";

/** The replay routes (see the module comment). */
export const REPLAY_ROUTES: readonly AdminRoute[] = [
  {
    method: "post",
    path: PATH,
    operationId: "replays.create",
    summary: "Send the destination its workspace's events received in [from, to) again, in the background; answers the replay to follow",
    scope: "workspace",
    body: "ReplayBody",
    answer: "Replay",
    status: 201,
    handle: async (c, { params, body, principal }) => {
      const ids = { workspaceId: params.workspaceId!, destinationId: params.destinationId! };
      const made = await createReplay(c.replays.context, c.book, body, ids, principal.actor);
      if (made.ok) c.replays.runner.enqueue(made.value);
      return made;
    },
    target: (_call, value) => (value as { replayId: string }).replayId,
  },
  {
    method: "get",
    path: PATH,
    operationId: "replays.list",
    summary: "The destination's replays, newest first: status, counts, position",
    scope: "workspace",
    answer: "ReplayList",
    status: 200,
    handle: async (c, { params }) => done({ replays: listReplays(c.book, params.workspaceId!, params.destinationId) }),
  },
  {
    method: "get",
    path: `${PATH}/{replayId}`,
    operationId: "replays.show",
    summary: "One replay: status (INITIALIZED, RUNNING, FINISHED, FAILED), total, counts, position, error",
    scope: "workspace",
    answer: "Replay",
    status: 200,
    handle: async (c, { params }) => replayStatus(c.book, params.replayId!, params.workspaceId!, params.destinationId!),
  },
];
