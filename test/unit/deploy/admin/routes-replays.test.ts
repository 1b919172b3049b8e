/**
 * The admin API's replay routes (deploy/admin/routes-replays.ts) with a stand-in context (a book,
 * destinations from memory, the admin topic an array, a runner that records what it is given):
 * a replay made is queued to run, a refused one is not; the list and show stay within the path's
 * workspace and destination.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AdminBook } from "../../../../schemas/admin/book";
import { adminKey, type ReplayRecord } from "../../../../schemas/admin/records";
import { REPLAY_ROUTES } from "../../../../deploy/admin/routes-replays";
import type { AdminContext } from "../../../../deploy/admin/routes";
import type { ReplayRunner } from "../../../../deploy/commands/replay-run";
import { adminCall, replaysContext, webhookDestination } from "../../../support/admin-fixtures";

const replays = suite("admin replay routes");
const NOW = new Date("2026-11-29T12:00:00Z");
const RANGE = { from: "2026-11-28T00:00:00Z", to: "2026-11-29T00:00:00Z" };

const hook = webhookDestination("hook", "ws1");

function world() {
  const book = new AdminBook();
  const queued: ReplayRecord[] = [];
  // The topic as the ingest sees it: what is published is in the book.
  const context = replaysContext([hook], NOW, async (records) => records.forEach((r) => book.apply(adminKey(r), JSON.stringify(r))));
  const runner = { enqueue: (r: ReplayRecord) => (queued.push(r), true) } as unknown as ReplayRunner;
  return { c: { book, replays: { context, runner } } as unknown as AdminContext, queued, book };
}

const call = (params: Record<string, string>, body?: unknown) => adminCall(params, { body, now: NOW });
const route = (id: string) => REPLAY_ROUTES.find((r) => r.operationId === id)!;
const ids = { workspaceId: "ws1", destinationId: "hook" };

replays("a replay made is queued to run; a refused one (bad body, another workspace's destination) is not", async () => {
  const { c, queued } = world();
  const made = await route("replays.create").handle(c, call(ids, RANGE));
  assert.ok(made.ok);
  assert.equal(
    queued.map((r) => r.replayId),
    [(made as { value: ReplayRecord }).value.replayId],
  );
  const bad = await route("replays.create").handle(c, call({ workspaceId: "ws1", destinationId: "hook" }, { from: "x", to: "y" }));
  assert.equal(bad.ok ? "done" : bad.field, "from");
  const theirs = await route("replays.create").handle(c, call({ workspaceId: "ws2", destinationId: "hook" }, RANGE));
  assert.equal(theirs.ok ? "done" : theirs.status, 404);
  assert.is(queued.length, 1);
});

replays("list and show stay within the path's workspace and destination", async () => {
  const { c } = world();
  const made = await route("replays.create").handle(c, call(ids, RANGE));
  const replayId = (made as { value: ReplayRecord }).value.replayId;
  const list = await route("replays.list").handle(c, call(ids));
  assert.equal(list.ok ? (list.value as { replays: ReplayRecord[] }).replays.map((r) => r.replayId) : [], [replayId]);
  const elsewhere = await route("replays.list").handle(c, call({ workspaceId: "ws2", destinationId: "hook" }));
  assert.equal(elsewhere.ok ? (elsewhere.value as { replays: ReplayRecord[] }).replays : "refused", []);
  assert.ok((await route("replays.show").handle(c, call({ ...ids, replayId }))).ok);
  const other = await route("replays.show").handle(c, call({ workspaceId: "ws2", destinationId: "hook", replayId }));
  assert.equal(other.ok ? "done" : other.status, 404);
});

replays.run();
