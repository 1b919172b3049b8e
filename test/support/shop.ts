/**
 * A shop page on an origin of its own, for the browser tests: `/` loads the UMD bundle of
 * @segment/analytics-next (global `AnalyticsNext`) from this project's node_modules, unmodified.
 */
import { createReadStream, existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import Router from "@koa/router";
import Koa from "koa";
import { ROOT } from "./paths";

/** Where analytics-next's UMD bundle is. */
export const UMD = join(ROOT, "node_modules", "@segment", "analytics-next", "dist", "umd");

/** Serves the shop on a free port of 127.0.0.1. */
export async function serveShop(): Promise<Server> {
  const app = new Koa();
  const router = new Router();
  router.get("/", (ctx) => {
    ctx.type = "html";
    ctx.body = `<!doctype html><html><head><title>Shop</title><script src="/umd/index.js"></script></head><body>shop</body></html>`;
  });
  router.get("/umd/:file", (ctx) => {
    const file = join(UMD, ctx.params.file!);
    if (!/^[\w.-]+\.js$/.test(ctx.params.file!) || !existsSync(file)) return;
    ctx.type = "application/javascript";
    ctx.body = createReadStream(file);
  });
  app.use(router.routes());
  const server = createServer(app.callback()).listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  return server;
}
