/**
 * The Koa application (no listen): routes, CORS, auth, body parsing, validation, limits,
 * produce. Kafka failing or too slow is answered 503 with Retry-After; nothing is answered 2xx
 * unless the broker acknowledged every record of the request.
 */
import { randomUUID } from "node:crypto";
import cors from "@koa/cors";
import Router from "@koa/router";
import Koa from "koa";
import type { AppDeps } from "./app-deps";
import { answerError } from "./answer";
import { methodNotAllowed, notFound, type ErrorBody } from "./errors";
import { postHandler, REJECTED_HEADER } from "./post";
import { routeTable } from "./routes";
import { settingsRoute } from "./settings-route";
import { networkRefusal } from "./unkeyed";

export type { AppDeps } from "./app-deps";
export { REJECTED_HEADER } from "./post";
export type { Limits } from "../admission/limits";

/** Builds the ingest Koa app. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.trustedProxies > 0, maxIpsCount: deps.trustedProxies });
  // Every error of a request is answered by the first middleware below; what still reaches Koa is
  // a connection that closed before its answer was written (a client gone mid-body). Koa's default
  // prints each one's stack to stderr, outside the JSON log.
  app.on("error", (error: Error) => deps.log.debug({ err: error }, "connection closed before the answer"));
  const router = new Router();
  const { limits } = deps;

  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });
  router.get("/readyz", (ctx) => {
    const ready = deps.isReady();
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? "ready" : "not ready" };
  });
  router.get("/openapi.json", (ctx) => {
    ctx.body = deps.openapi;
  });
  const refuseNetwork = networkRefusal(deps.metrics);
  // The settings analytics.js and the mobile SDKs load first (their CDN's path, under /v1).
  router.get("/v1/projects/:writeKey/settings", settingsRoute(deps, refuseNetwork));

  const ingest = postHandler(deps, refuseNetwork);
  for (const route of routeTable(limits)) router.post(route.path, ingest(route));

  app.use(answerEvery(deps));
  app.use(
    cors({
      origin: (ctx) => corsOrigin(ctx.get("Origin"), deps.corsOrigins),
      allowMethods: ["GET", "POST", "OPTIONS"],
      // analytics.js 1.84 sends X-Retry-Count on every retry: without it the preflight fails and no retry ever lands.
      allowHeaders: ["Authorization", "Content-Type", "Content-Encoding", "PublicWriteKey", "X-Retry-Count", "X-Request-Id"],
      exposeHeaders: ["Retry-After", REJECTED_HEADER, "X-Request-Id"],
      maxAge: 86_400,
    }),
  );
  app.use(router.routes());
  // A method no route has (TRACE, ...) is the client's mistake: 405, not the router's default 501.
  app.use(router.allowedMethods({ throw: true, notImplemented: methodNotAllowed, methodNotAllowed }));
  return app;
}

/**
 * The app's first middleware: gives the request its X-Request-Id, answers every error below it
 * (answerError: a named HttpError as its JSON body, anything else 500/503), closes keep-alive while
 * draining, and counts the request (route, status, seconds, the refusal's reason).
 */
function answerEvery(deps: AppDeps): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdOf(ctx.get("X-Request-Id"));
    ctx.set("X-Request-Id", requestId);
    // The request's logger is made when something is logged (an error, or debug): most requests log nothing.
    const log = () => deps.log.child({ reqId: requestId });
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw notFound(ctx.method, ctx.path);
    } catch (error) {
      answerError(ctx, error, deps.retryAfterSeconds, deps.limits, log());
    }
    if (deps.isDraining()) ctx.set("Connection", "close");
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched";
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.requests.inc({ route, status: String(ctx.status) });
    deps.metrics.requestSeconds.observe({ route }, seconds);
    if (ctx.status >= 400) deps.metrics.requestsRefused.inc({ reason: (ctx.body as ErrorBody | undefined)?.error ?? String(ctx.status) });
    if (deps.log.isLevelEnabled("debug"))
      log().debug({ method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1000) }, "request");
  };
}

/** The Access-Control-Allow-Origin value for a request's Origin, or '' to send none. */
function corsOrigin(origin: string, allowed: string[]): string {
  if (allowed.includes("*")) return origin === "" ? "*" : origin;
  return allowed.includes(origin) ? origin : "";
}

/** A client's X-Request-Id when it is short and plain, else a new one. */
function requestIdOf(header: string): string {
  return /^[\w.:-]{1,128}$/.test(header) ? header : randomUUID();
}
