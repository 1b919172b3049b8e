/**
 * The app's side of the unkeyed gate (ingest/admission/networks.ts): how a network's refusal is answered,
 * and the 401 of a body whose writeKeys are surely unknown, decided before it is parsed.
 */
import { scanWriteKeys, type AuthHeaders, type AuthResult, type WriteKeys } from "../admission/auth";
import { assertAuthenticated, rateLimited, unkeyedLimited } from "./errors";
import type { AppCollaborators } from "./app-deps";
import type { IngestMetrics } from "../metrics";
import { networkOf, Throttle, type GateRefusal, type UnkeyedAccount } from "../admission/networks";
import { emptyBucket } from "../admission/ratelimit";

/**
 * A function that answers a network's refusal: counts it (`ingest_requests_unread_total`
 * `{bucket="unkeyed_<bucket>"}`), waits the throttle's second (ingest/admission/networks.ts Throttle),
 * then throws 429 + Retry-After, with `Connection: close` when the network had too many waiting.
 */
export function networkRefusal(metrics: IngestMetrics): (network: string, refusal: GateRefusal) => Promise<never> {
  const throttle = new Throttle();
  return async (network, refusal) => {
    metrics.requestsUnread.inc({ bucket: `unkeyed_${refusal.bucket}` });
    const waited = await throttle.hold(network);
    const error = unkeyedLimited(refusal.retryAfterSeconds, refusal.bucket);
    if (!waited) error.headers.Connection = "close";
    throw error;
  };
}

/**
 * The failed authentication of a body with no key header whose writeKeys, read without parsing
 * it (scanWriteKeys), are surely none or all unknown; undefined when the body may hold a known
 * one (or the scan cannot tell), and it is parsed.
 */
export function surelyUnknown(text: string, writeKeys: WriteKeys): Extract<AuthResult, { ok: false }> | undefined {
  const scanned = scanWriteKeys(text);
  if (!scanned.complete) return undefined;
  if (scanned.keys.some((key) => writeKeys.workspaceOf(key) !== undefined)) return undefined;
  return { ok: false, reason: scanned.keys.length === 0 ? "missing" : "unknown" };
}

/** How a POST stands before its body is read (admitPost). */
export interface Admission {
  /** The client's network (ingest/admission/networks.ts networkOf). */
  network: string;
  /** A key header was sent (and checked: `headerAuth`). */
  keyed: boolean;
  headerAuth?: Extract<AuthResult, { ok: true }>;
  /** No key header: the account its body's bytes are charged to until its key is decided. */
  account?: UnkeyedAccount;
}

/** What admitPost reads of the app's dependencies: collaborators only (ingest/http/app-deps.ts). */
export type AdmitDeps = Pick<AppCollaborators, "writeKeys" | "unkeyedGate" | "rateLimit" | "bytesLimit" | "metrics">;

/**
 * Decides, before a POST's body is read, whether it is read: a key header is looked up (unless
 * its network is past its failures: `refuse`, 429 after a wait) and must be known (401, one
 * failure of the network) with room in its workspace's buckets (429); without one, the network
 * must be admitted by the gate (else `refuse`). Throws the refusal (an HttpError).
 */
export async function admitPost(
  headers: AuthHeaders,
  ip: string,
  deps: AdmitDeps,
  refuse: (network: string, refusal: GateRefusal) => Promise<never>,
): Promise<Admission> {
  const gate = deps.unkeyedGate;
  const network = networkOf(ip);
  const keyed = headers.authorization !== undefined || headers.publicwritekey !== undefined;
  if (!keyed) {
    // No key header: the body is read at its network's expense until its key checks out.
    const admitted = gate?.admit(network, performance.now());
    if (admitted !== undefined && !admitted.ok) return refuse(network, admitted);
    return { network, keyed, ...(admitted?.account ? { account: admitted.account } : {}) };
  }
  // A network that failed too often has no key looked up, valid or not (a guesser learns nothing).
  const lookUp = gate?.mayLookUp(network, performance.now());
  if (lookUp !== undefined && !lookUp.ok) return refuse(network, lookUp);
  // A bad header fails before the body is read; a good one makes the request keyed from the start.
  const headerAuth = deps.writeKeys.authenticate(headers);
  if (!headerAuth.ok) gate?.fail(network, performance.now());
  assertAuthenticated(headerAuth);
  const room = emptyBucket(deps.rateLimit, deps.bytesLimit, headerAuth.workspaceId, performance.now());
  if (!room.ok) {
    deps.metrics.requestsUnread.inc({ bucket: room.bucket });
    throw rateLimited(room.retryAfterSeconds, room.bucket);
  }
  return { network, keyed, headerAuth };
}
