/**
 * The route of the settings document (`GET /v1/projects/<writeKey>/settings`, ingest/http/settings.ts
 * builds it): an unknown key is 404 and one failure of the client's network (ingest/admission/networks.ts);
 * a network past its failures is answered 429 before the lookup; a Host the document may not
 * name is 421.
 */
import type Koa from "koa";
import { hostNotAllowed, unknownProject } from "./errors";
import { networkOf, type GateRefusal } from "../admission/networks";
import { publicAddress, settingsDocument } from "./settings";
import type { AppCollaborators, AppSettings } from "./app-deps";

/**
 * How long a settings document may be kept, s (writeKeys and the address rarely change): by any
 * cache when PUBLIC_URL fixes the address in it, else only by the browser that asked (the
 * address comes from the request's Host or X-Forwarded-Host, so a shared cache could serve one
 * client's address to all).
 */
const SETTINGS_MAX_AGE_SECONDS = 300;

/** What the settings route reads of the app's dependencies (ingest/http/app-deps.ts). */
export type SettingsDeps = Pick<AppCollaborators, "writeKeys" | "unkeyedGate"> & Pick<AppSettings, "publicUrl" | "allowedHosts">;

/** The settings route's handler; `refuse` answers a network's refusal (ingest/http/unkeyed.ts networkRefusal). */
export function settingsRoute(
  deps: SettingsDeps,
  refuse: (network: string, refusal: GateRefusal) => Promise<never>,
): (ctx: Koa.ParameterizedContext & { params: Record<string, string> }) => Promise<void> {
  return async (ctx) => {
    const writeKey = ctx.params.writeKey!;
    const network = networkOf(ctx.ip);
    const now = performance.now();
    const lookUp = deps.unkeyedGate?.mayLookUp(network, now);
    if (lookUp !== undefined && !lookUp.ok) return refuse(network, lookUp);
    if (deps.writeKeys.workspaceOf(writeKey) === undefined) {
      deps.unkeyedGate?.fail(network, now);
      throw unknownProject();
    }
    const address = publicAddress(deps.publicUrl, { protocol: ctx.protocol, host: ctx.host }, deps.allowedHosts);
    if (address === undefined) throw hostNotAllowed(ctx.host);
    if (deps.publicUrl) {
      ctx.set("Cache-Control", `public, max-age=${SETTINGS_MAX_AGE_SECONDS}`);
    } else {
      ctx.set("Cache-Control", `private, max-age=${SETTINGS_MAX_AGE_SECONDS}`);
      // Koa reads X-Forwarded-Host and -Proto only behind trusted proxies; naming them costs nothing otherwise.
      ctx.vary("Host");
      ctx.vary("X-Forwarded-Host");
      ctx.vary("X-Forwarded-Proto");
    }
    ctx.body = settingsDocument(writeKey, address);
  };
}
