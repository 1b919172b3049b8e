/**
 * The live view's routes, on the ingest's admin port only (INGEST_METRICS_PORT; the public port
 * never serves them):
 *   GET /live                the page (test/live/live-page.test.ts opens it in Chromium)
 *   GET /live/events         text/event-stream of one workspace: `item` events (LiveItem JSON),
 *                            first the recent ones, oldest first, then each as the tail reads it;
 *                            `dropped` events counting items a slow viewer missed
 *   GET /live/recent         JSON `{ items: LiveItem[] }`, newest first (receivedAt), at most RECENT_MAX
 *   GET /live/workspaces     JSON `{ workspaces: string[] }`, those of the configured write keys
 * Every route but the page needs an admin token (ingest/http/admin.ts adminGuard: 401 without
 * one; every request is refused while ADMIN_TOKEN is unset); a workspace token sees only its own
 * workspace (403 for another's; /live/workspaces lists only its own); /live/events and
 * /live/recent need `workspaceId` (400) and take the filters `type`, `event`, `userId`, `anonymousId`. At most
 * LIVE_MAX_VIEWERS streams and LIVE_MAX_RECENT /live/recent calls at once per process; past
 * either, 503 with Retry-After (issue 46 row 6). A viewer whose connection holds more than
 * VIEWER_BUFFER_BYTES unsent is skipped, not buffered for: its next event says how many it missed.
 * Items arrive from the tail's worker as server-sent events ready to write, several at a time,
 * and are written as they are (nothing is parsed or serialised here, on the public API's loop).
 */
import Router from "@koa/router";
import { createSession } from "better-sse";
import type Koa from "koa";
import type { Logger } from "pino";
import type { IngestMetrics } from "../metrics";
import type { AdminGuard } from "../http/admin";
import { mayAccess, type Principal } from "../admission/tokens";
import type { LiveFilter } from "./items";
import { PAGE_CSS, PAGE_HTML, PAGE_SCRIPT } from "./page";
import type { LiveThread } from "./thread";

/** Items /live/recent returns at most, and what a new viewer is sent first. */
export const RECENT_MAX = 1_000;
export const STREAM_BACKLOG = 200;

/** Bytes a viewer's connection may hold unsent before its items are skipped. */
export const VIEWER_BUFFER_BYTES = 1024 * 1024;

/** Retry-After of a /live/recent call over LIVE_MAX_RECENT, and of a stream over LIVE_MAX_VIEWERS, s. */
export const RETRY_AFTER_SECONDS = { recent: 1, viewers: 5 };

/**
 * The live view's Content-Security-Policy, on the page and its files: only this origin's script
 * and style sheet, no inline script or style, nothing framed, no form sent anywhere (the admin
 * pages' own, deploy/admin/pages.ts).
 */
export const LIVE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** What the live routes need. */
export interface LiveDeps {
  /** The tail's worker (or, in unit tests, anything with its three members). */
  tail: Pick<LiveThread, "acquire" | "watch" | "recent">;
  /** Who a request is (ingest/http/admin.ts adminGuard); it answers 401 or 429 itself. */
  guard: AdminGuard;
  /** Streams open at once in this process (LIVE_MAX_VIEWERS). */
  maxViewers: number;
  /** /live/recent calls served at once in this process (LIVE_MAX_RECENT). */
  maxRecent: number;
  /** The workspaces of the configured write keys. */
  workspaces: () => string[];
  metrics: IngestMetrics;
  log: Logger;
}

/** The routes above, on a router for the admin app. */
export function liveRouter(deps: LiveDeps): Router {
  const router = new Router();
  const authorized = deps.guard;
  const serve = (type: string, body: string) => (ctx: Koa.Context) => {
    ctx.type = type;
    ctx.set("Content-Security-Policy", LIVE_CSP);
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Referrer-Policy", "no-referrer");
    ctx.set("Cache-Control", "no-store");
    ctx.body = body;
  };
  router.get("/live", serve("text/html; charset=utf-8", PAGE_HTML));
  router.get("/live/page.css", serve("text/css; charset=utf-8", PAGE_CSS));
  router.get("/live/page.js", serve("text/javascript; charset=utf-8", PAGE_SCRIPT));
  router.get("/live/workspaces", (ctx) => {
    const principal = authorized(ctx);
    if (principal === undefined) return;
    ctx.body = { workspaces: [...new Set(deps.workspaces())].filter((w) => mayAccess(principal, w)).sort() };
  });
  router.get("/live/recent", recentRoute(deps, authorized));
  router.get("/live/events", eventsRoute(deps, authorized));
  return router;
}

/** GET /live/recent: the worker's recent items of a workspace, at most `maxRecent` calls at once (503 past it). */
function recentRoute(deps: LiveDeps, authorized: AdminGuard): (ctx: Koa.Context) => Promise<void> {
  let recentCalls = 0;
  return async (ctx) => {
    const principal = authorized(ctx);
    if (principal === undefined) return;
    const filter = filterOf(ctx, principal);
    if (filter === undefined) return;
    if (recentCalls >= deps.maxRecent) {
      ctx.status = 503;
      ctx.set("Retry-After", String(RETRY_AFTER_SECONDS.recent));
      ctx.body = { error: "busy", message: `at most ${deps.maxRecent} /live/recent calls at once per process (LIVE_MAX_RECENT)` };
      return;
    }
    const limit = Math.min(RECENT_MAX, Math.max(1, Number.parseInt(String(ctx.query.limit ?? "100"), 10) || 100));
    recentCalls++;
    try {
      const release = await deps.tail.acquire();
      try {
        // The worker's JSON text, newest first by arrival at the ingest: sent, not parsed.
        const body = await deps.tail.recent(filter, limit);
        ctx.type = "application/json; charset=utf-8";
        ctx.body = body;
      } finally {
        release();
      }
    } finally {
      recentCalls--;
    }
  };
}

/**
 * GET /live/events: a workspace's items as server-sent events, at most `maxViewers` streams at
 * once (503 past it); a viewer holding more than VIEWER_BUFFER_BYTES unsent is skipped and told
 * how many it missed.
 */
function eventsRoute(deps: LiveDeps, authorized: AdminGuard): (ctx: Koa.Context) => Promise<void> {
  let viewers = 0;
  return async (ctx) => {
    const principal = authorized(ctx);
    if (principal === undefined) return;
    const filter = filterOf(ctx, principal);
    if (filter === undefined) return;
    if (viewers >= deps.maxViewers) {
      ctx.status = 503;
      ctx.set("Retry-After", String(RETRY_AFTER_SECONDS.viewers));
      ctx.body = { error: "too_many_viewers", message: `at most ${deps.maxViewers} live viewers per process (LIVE_MAX_VIEWERS)` };
      return;
    }
    viewers++;
    deps.metrics.liveViewers.set(viewers);
    // One ending, whichever comes first: the client gone (also while the tail is still starting,
    // seconds, before the session exists to see it), the session's end, or a failed start.
    let release: () => void = () => undefined;
    let unsubscribe: () => void = () => undefined;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      unsubscribe();
      release();
      viewers--;
      deps.metrics.liveViewers.set(viewers);
    };
    ctx.res.once("close", end);
    let acquired: () => void;
    try {
      acquired = await deps.tail.acquire();
    } catch (error) {
      end();
      throw error;
    }
    ctx.respond = false;
    if (ended) return acquired();
    release = acquired;
    ctx.req.socket.setTimeout(0);
    const session = await createSession(ctx.req, ctx.res, { statusCode: 200, keepAlive: 15_000, retry: 2_000, trustClientEventId: false });
    if (ended) return;
    let dropped = 0;
    // The worker's frames (the backlog, oldest first, then each new item), one write per batch.
    const frames = (text: string, count: number) => {
      if (!session.isConnected || count === 0) return;
      if (ctx.res.writableLength > VIEWER_BUFFER_BYTES) {
        dropped += count;
        deps.metrics.liveDropped.inc(count);
        return;
      }
      if (dropped > 0) {
        session.push({ dropped }, "dropped");
        dropped = 0;
      }
      ctx.res.write(text);
    };
    unsubscribe = deps.tail.watch(filter, STREAM_BACKLOG, { frames, end: () => ctx.res.end() });
    session.once("disconnected", end);
  };
}

/**
 * The filter of a request; answers 400 and returns undefined without a workspaceId, 403 when the
 * token is another workspace's.
 */
function filterOf(ctx: Koa.Context, principal: Principal): LiveFilter | undefined {
  const one = (name: string): string | undefined => {
    const value = ctx.query[name];
    const text = Array.isArray(value) ? value[0] : value;
    return text === undefined || text === "" ? undefined : text;
  };
  const workspaceId = one("workspaceId");
  if (workspaceId === undefined) {
    ctx.status = 400;
    ctx.body = { error: "invalid_request", message: "workspaceId is required", fields: ["workspaceId"] };
    return undefined;
  }
  if (!mayAccess(principal, workspaceId)) {
    ctx.status = 403;
    ctx.body = { error: "forbidden", message: "this token is another workspace's" };
    return undefined;
  }
  const filter: LiveFilter = { workspaceId };
  for (const name of ["type", "event", "userId", "anonymousId"] as const) {
    const value = one(name);
    if (value !== undefined) filter[name] = value;
  }
  return filter;
}
