/**
 * One POST of the Segment API, from admission to answer (ingest/http/app.ts mounts it on each route of
 * ingest/http/routes.ts): authenticate, read the body against the in-flight budget and the network's
 * and workspace's buckets, take the rate, sort the items, build their records, produce them
 * (acks=all) and answer. Every refusal is a named HttpError of ingest/http/errors.ts, answered by the
 * app's first middleware.
 */
import type Koa from "koa";
import { namesNoKey, type AuthHeaders, type AuthResult } from "../admission/auth";
import type { AppDeps } from "./app-deps";
import { InflightBudget, senderCap, type Lease } from "../admission/budget";
import { PLAIN_CONTEXT, type Receipt } from "../records/build";
import { assertAuthenticated, overloaded, rateLimited, tooCostly, unauthorized, unkeyedLimited, type HttpError } from "./errors";
import { readJson } from "./json-body";
import type { Limits } from "../admission/limits";
import { refusalOf, refusedWhole, toRecords, withoutNonFinite, withoutSuppressed, withPlan, type Route } from "./routes";
import { admitPost, surelyUnknown, type networkRefusal } from "./unkeyed";

/**
 * Header of a 200 answer counting the batch items refused (each kept in `rejected_messages`
 * with its reasons); absent when none was. The body is the route's (ingest/http/routes.ts): Segment's
 * `{"success":true}` under /v1, the spec's empty body under /api/public/apps.
 */
export const REJECTED_HEADER = "X-Rejected-Messages";

/**
 * The handler of every POST route, sharing one in-flight budget (ingest/admission/budget.ts): `maxInflightBytes`
 * of bodies and the records the producer holds, each sender capped at its share.
 */
export function postHandler(
  deps: AppDeps,
  refuseNetwork: ReturnType<typeof networkRefusal>,
): (route: Route) => (ctx: Koa.Context) => Promise<void> {
  const { limits } = deps;
  const budget = new InflightBudget(
    deps.maxInflightBytes,
    deps.producerBytesHeld,
    senderCap(deps.maxInflightBytes, limits.maxRequestBytes),
  );

  /**
   * One POST: authenticate (a key header whose workspace has an empty bucket: 429 unread), read
   * the body (charged to the budget as it arrives and before it is parsed; its decoded bytes paid
   * to the bytes bucket whatever the answer), take the rate (one token per item, whatever the answer), sort it into messages and
   * refused items, build their records, produce both (acks=all), answer. 200 with the route's success body (REJECTED_HEADER counting
   * refused items), or 400 naming each bad field when nothing was accepted; every other refusal
   * is a named HttpError of errors.ts.
   */
  return (route: Route) => async (ctx: Koa.Context) => {
    const receivedAt = new Date().toISOString();
    const headers = ctx.headers as AuthHeaders;
    const { network, keyed, headerAuth, account } = await admitPost(headers, ctx.ip, deps, refuseNetwork);
    // The sender whose arriving bodies share a cap: the key header's workspace, else the client's network.
    const lease = budget.open(keyed, headerAuth?.ok ? `w:${headerAuth.workspaceId}` : `n:${network}`);
    /** The body's key is decided: an unknown one is one failure of the network, a known one gives its bytes back. */
    const decided = (auth: AuthResult) => {
      if (auth.ok) account?.keyed(performance.now());
      else account?.failed(performance.now());
    };
    // Decoded bytes are paid once: below, once the key is known, or in `finally` by the key header's workspace.
    let decoded = 0;
    let unpaid = headerAuth?.workspaceId;
    try {
      const body = await readJson(ctx, limits, {
        bodyTimeoutMs: deps.bodyTimeoutMs,
        charge: (n) => {
          const paid = account?.charge(n, performance.now());
          if (paid !== undefined && !paid.ok) return unkeyedLimited(paid.retryAfterSeconds, paid.bucket);
          return chargeLease(lease, n, deps.retryAfterSeconds);
        },
        decoded: (n) => (decoded += n),
        arrived: () => lease.markArrived(),
        eviction: lease,
        // No key header: a body whose every writeKey is unknown is refused before it is parsed.
        beforeParse: (text) => {
          if (keyed) return undefined;
          const early = surelyUnknown(text, deps.writeKeys);
          if (early === undefined) return undefined;
          decided(early);
          return unauthorized(early.reason);
        },
      });
      // A body without a writeKey of its own leaves the header's lookup standing (one SHA-256 a
      // request); one with a writeKey is checked against the header's key and looked up.
      const bodyKey: unknown = body?.writeKey;
      const auth = headerAuth !== undefined && namesNoKey(bodyKey) ? headerAuth : deps.writeKeys.authenticate(headers, bodyKey);
      decided(auth);
      assertAuthenticated(auth);
      lease.markKeyed();
      unpaid = undefined;
      const paid = deps.bytesLimit.pay(auth.workspaceId, decoded, performance.now());
      if (!paid.ok) throw rateLimited(paid.retryAfterSeconds, "bytes");
      // Parsed, the body's work is done: it takes its items' tokens before it is sorted, so a 400
      // or 413 after this has paid; a 429 takes none (a charge for each one starved SDKs that
      // retry above the limit: a review of 2026-11-26).
      const allowed = deps.rateLimit.take(auth.workspaceId, tokensOf(route, body, limits), performance.now());
      if (!allowed.ok) throw rateLimited(allowed.retryAfterSeconds);
      await storeAndAnswer(ctx, route, deps, body, { workspaceId: auth.workspaceId, receivedAt, clientIp: clientIp(ctx.ip) });
    } finally {
      if (unpaid !== undefined) deps.bytesLimit.pay(unpaid, decoded, performance.now());
      lease.release();
    }
  };
}

/** `bytes` more for a request's lease, or its refusal: 503 + Retry-After while the budget is full, 413 if it can never fit. */
function chargeLease(lease: Lease, bytes: number, retryAfterSeconds: number): HttpError | undefined {
  const charged = lease.grow(bytes);
  if (charged.ok) return undefined;
  return charged.reason === "busy" ? overloaded(retryAfterSeconds) : tooCostly(lease.bytes + bytes, charged.capacity);
}

/**
 * An admitted body's end: sort it into messages and refused items (a body refused whole is kept
 * too: its items, or itself), apply the workspace's tracking plan, drop suppressed users' items, build the records, produce them all
 * (acks=all, so no refused item is lost silently) and answer: 200 with the route's success body
 * (REJECTED_HEADER counting refused items), or the refusal when nothing was accepted. Throws
 * that refusal, or the producer's error.
 */
async function storeAndAnswer(
  ctx: Koa.Context,
  route: Route,
  deps: AppDeps,
  body: Record<string, unknown> | undefined,
  receipt: Receipt,
): Promise<void> {
  const sorted = route.sort(body);
  const whole = sorted.ok ? sorted.value : refusedWhole(body, sorted.issues);
  const valid = ctx.state.nonFinite === true ? withoutNonFinite(whole) : whole;
  const value = withPlan(valid, deps.plans?.get(receipt.workspaceId), deps.metrics);
  const kept = deps.privacy ? withoutSuppressed(value, receipt.workspaceId, deps.privacy, deps.metrics) : value;
  const policy = deps.contextPolicy ?? PLAIN_CONTEXT;
  const { records, refusals, listedShapes, oversized } = toRecords(kept, receipt, deps.limits, policy);
  const refusal = refusalOf(sorted, value, oversized);
  await deps.produce([...records, ...refusals]);
  policy.shapes?.markDelivered(listedShapes);
  deps.metrics.messagesRejected.inc(refusals.length);
  if (refusal !== undefined) throw refusal;
  if (refusals.length > 0) ctx.set(REJECTED_HEADER, String(refusals.length));
  ctx.status = 200;
  ctx.body = route.successBody;
}

/**
 * Tokens a parsed body takes (ingest/admission/ratelimit.ts): one per item of a batch (refused items are
 * stored too), at most MAX_BATCH_MESSAGES (a longer batch is refused, too_many_messages); one
 * for any other body.
 */
function tokensOf(route: Route, body: Record<string, unknown> | undefined, limits: Limits): number {
  const items = route.kind === "batch" ? body?.batch : undefined;
  return Array.isArray(items) ? Math.min(limits.maxBatchMessages, Math.max(1, items.length)) : 1;
}

/** `::ffff:1.2.3.4` -> `1.2.3.4`; empty -> undefined. */
function clientIp(ip: string): string | undefined {
  if (ip === "") return undefined;
  return ip.startsWith("::ffff:") ? ip.slice("::ffff:".length) : ip;
}
