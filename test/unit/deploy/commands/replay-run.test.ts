/**
 * Replays started through the admin API (deploy/commands/replay-run.ts), without I/O: a request's
 * checks (each refusal naming its field, the defaults, an `after` carried as the starting
 * position, a record the admin topic takes), creating one (404 for another workspace's
 * destination, 409 while one of that destination is under way, nothing published on a refusal),
 * and reading them back within a workspace and destination. Running one needs ClickHouse and a
 * receiver: test/live/admin-api.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { AdminBook } from "../../../../schemas/admin/book";
import { adminKey, parseAdminRecord, type ReplayRecord } from "../../../../schemas/admin/records";
import type { WebhookDestination } from "../../../../schemas/destinations";
import { REPLAY_RATE } from "../../../../deploy/commands/deliveries";
import { createReplay, listReplays, replayOf, replayStatus } from "../../../../deploy/commands/replay-run";
import { replaysContext, webhookDestination } from "../../../support/admin-fixtures";

const NOW = new Date("2026-11-29T12:00:00Z");
const RANGE = { from: "2026-11-28T00:00:00Z", to: "2026-11-29T00:00:00Z" };

const made = (body: unknown, workspaceId = "ws1", destinationId = "hook") => replayOf(body, workspaceId, destinationId, "operator", NOW);
const refusal = (body: unknown) => {
  const r = made(body);
  return r.ok ? "done" : [r.status, r.field];
};

test("a request's checks name the field at fault", () => {
  assert.equal(refusal({ ...RANGE, from: "yesterday" }), [400, "from"]);
  assert.equal(refusal({ from: RANGE.from }), [400, "to"]);
  assert.equal(refusal({ from: RANGE.to, to: RANGE.from }), [400, "from"]);
  assert.equal(refusal({ ...RANGE, after: "not/a/position/at/all" }), [400, "after"]);
  assert.equal(refusal({ ...RANGE, rate: 0 }), [400, "rate"]);
  assert.equal(refusal({ ...RANGE, rate: 1001 }), [400, "rate"]);
  assert.equal(refusal({ ...RANGE, maxWaitSeconds: -1 }), [400, "maxWaitSeconds"]);
  assert.equal(refusal([]), [400, "from"], "not an object: the first field it lacks");
});

test("a replay made: INITIALIZED, the defaults, UTC times, `after` as its starting position, a record the admin topic takes", () => {
  const r = made({ from: "2026-11-28T01:00:00+01:00", to: RANGE.to });
  if (!r.ok) throw new Error(r.error);
  assert.equal(
    [r.value.status, r.value.rate, r.value.maxWaitSeconds, r.value.from, r.value.total, r.value.counts],
    ["INITIALIZED", REPLAY_RATE, 300, "2026-11-28T00:00:00.000Z", 0, { read: 0, delivered: 0, failed: 0, skipped: 0 }],
  );
  assert.match(r.value.replayId, /^rpl_[0-9a-f]{16}$/);
  assert.is(r.value.position, undefined);
  assert.ok(parseAdminRecord(adminKey(r.value), JSON.stringify(r.value)));
  const after = made({ ...RANGE, after: "1764374400000/m%2F1/track", rate: 5 });
  if (!after.ok) throw new Error(after.error);
  assert.equal([after.value.after, after.value.position, after.value.rate], ["1764374400000/m%2F1/track", "1764374400000/m%2F1/track", 5]);
  assert.ok(parseAdminRecord(adminKey(after.value), JSON.stringify(after.value)));
  const ids = [made(RANGE), made(RANGE)].map((m) => (m.ok ? m.value.replayId : ""));
  assert.is.not(ids[0], ids[1], "each replay gets its own id");
});

/** A context whose destinations are `destinations` (a view from memory) and whose admin topic is an array. */
function world(destinations: WebhookDestination[]) {
  const published: ReplayRecord[] = [];
  const ctx = replaysContext(destinations, NOW, async (records) => void published.push(...records));
  return { ctx, published };
}

test("creating: published INITIALIZED; another workspace's destination 404; one under way 409; a refusal publishes nothing", async () => {
  const { ctx, published } = world([webhookDestination("hook", "ws1"), webhookDestination("theirs", "ws2")]);
  const book = new AdminBook();
  const ids = { workspaceId: "ws1", destinationId: "hook" };
  const first = await createReplay(ctx, book, RANGE, ids, "operator");
  if (!first.ok) throw new Error(first.error);
  assert.equal(published, [first.value]);
  book.apply(adminKey(first.value), JSON.stringify(first.value));
  const again = await createReplay(ctx, book, RANGE, ids, "operator");
  assert.equal(again.ok ? "done" : again.status, 409);
  assert.match(again.ok ? "" : again.error, new RegExp(first.value.replayId));
  const theirs = await createReplay(ctx, book, RANGE, { workspaceId: "ws1", destinationId: "theirs" }, "operator");
  assert.equal(theirs.ok ? "done" : theirs.status, 404);
  const bad = await createReplay(ctx, book, { from: "x" }, { workspaceId: "ws1", destinationId: "theirs" }, "operator");
  assert.equal(bad.ok ? "done" : bad.status, 400);
  assert.is(published.length, 1);
  const finished = { ...first.value, status: "FINISHED" as const };
  book.apply(adminKey(finished), JSON.stringify(finished));
  assert.ok((await createReplay(ctx, book, RANGE, ids, "operator")).ok, "the one before ended");
});

test("reading back: newest first, within the workspace and the destination; another's is 404", () => {
  const book = new AdminBook();
  const record = (workspaceId: string, destinationId: string, createdAt: string): ReplayRecord => {
    const r = replayOf(RANGE, workspaceId, destinationId, "operator", new Date(createdAt));
    if (!r.ok) throw new Error(r.error);
    book.apply(adminKey(r.value), JSON.stringify(r.value));
    return r.value;
  };
  const old = record("ws1", "hook", "2026-11-29T10:00:00Z");
  const young = record("ws1", "hook", "2026-11-29T11:00:00Z");
  const other = record("ws1", "other", "2026-11-29T11:30:00Z");
  const theirs = record("ws2", "hook", "2026-11-29T11:45:00Z");
  assert.equal(
    listReplays(book, "ws1", "hook").map((r) => r.replayId),
    [young.replayId, old.replayId],
  );
  assert.equal(
    listReplays(book, "ws1").map((r) => r.replayId),
    [other.replayId, young.replayId, old.replayId],
  );
  assert.ok(replayStatus(book, old.replayId, "ws1", "hook").ok);
  assert.equal(replayStatus(book, theirs.replayId, "ws1", "hook").ok, false);
  assert.equal(replayStatus(book, other.replayId, "ws1", "hook").ok, false);
});

test.run();
