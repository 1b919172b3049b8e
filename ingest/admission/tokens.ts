/**
 * Admin tokens: who may use the admin port's API, pages and live view, and for what.
 *
 * - ADMIN_TOKEN (a setting) is the first operator token: it can do everything, and creates the
 *   others. Tokens created through the API or the CLI are `sat_` + 43 base64url characters (256
 *   random bits; the prefix lets secret scanners find a leaked one), shown once; the admin topic
 *   holds only their SHA-256 (schemas/admin/records.ts TokenRecord) with a scope: `operator`, or
 *   `workspace` (that workspace's resources only).
 * - A presented token is hashed and looked up by digest, and the digest compared again with
 *   timingSafeEqual: nothing in the comparison depends on how much of a secret matched.
 * - Failed attempts are counted per client network (IPv4 /24, IPv6 /64: ingest/admission/networks.ts):
 *   past FAILED_ATTEMPTS.burst in a row (refilled at FAILED_ATTEMPTS.perSecond), every request of
 *   that network is answered 429 before its token is looked at, right or wrong, so the answer
 *   tells a guesser nothing.
 * Pure: time is passed in.
 */
import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import type { TokenRecord } from "../../schemas/admin/records";
import { TokenBuckets, type Take } from "./ratelimit";

/** The prefix of a created token. */
export const TOKEN_PREFIX = "sat_";

/** Who a request is, once its token checked out. `actor` names them in the audit trail. */
export type Principal = { kind: "operator"; actor: string } | { kind: "workspace"; workspaceId: string; actor: string };

/** Why a request is not authenticated: no token, an unknown one, a revoked one, or none configured at all. */
export type AdminAuth = { ok: true; principal: Principal } | { ok: false; reason: "missing" | "unknown" | "revoked" | "off" };

/** A new token: its text (shown once), its digest (stored) and its public id. */
export function generateToken(): { token: string; sha256: string; tokenId: string } {
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  return { token, sha256: digestOf(token), tokenId: `tok_${randomBytes(6).toString("hex")}` };
}

/** Lower-case hex SHA-256 of a secret's UTF-8 bytes. */
export function digestOf(secret: string): string {
  return hash("sha256", secret, "hex");
}

/** The token of `Authorization: Bearer <token>`, or undefined. */
export function bearerOf(authorization: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? "");
  return match?.[1];
}

/**
 * The operator token of the settings and the created ones. `tokens` is the admin topic's
 * view (schemas/admin/book.ts AdminBook), read at each call: a revoke applies as soon as an
 * ingest has read it.
 */
export class AdminTokens {
  private readonly adminDigest: Buffer | undefined;

  constructor(
    adminToken: string | undefined,
    private readonly tokens: { token(sha256: string): TokenRecord | undefined },
  ) {
    this.adminDigest = adminToken === undefined ? undefined : Buffer.from(digestOf(adminToken), "hex");
  }

  /** Authenticates a bearer token (the Authorization header's value). */
  authenticate(authorization: string | undefined): AdminAuth {
    const token = bearerOf(authorization);
    if (token === undefined) return { ok: false, reason: this.adminDigest === undefined ? "off" : "missing" };
    const digest = Buffer.from(digestOf(token), "hex");
    if (this.adminDigest !== undefined && timingSafeEqual(digest, this.adminDigest)) {
      return { ok: true, principal: { kind: "operator", actor: "operator" } };
    }
    const record = this.tokens.token(digest.toString("hex"));
    if (record === undefined || !timingSafeEqual(Buffer.from(record.sha256, "hex"), digest)) return { ok: false, reason: "unknown" };
    if (record.revokedAt !== undefined) return { ok: false, reason: "revoked" };
    return {
      ok: true,
      principal:
        record.scope === "operator"
          ? { kind: "operator", actor: record.tokenId }
          : { kind: "workspace", workspaceId: record.workspaceId, actor: record.tokenId },
    };
  }
}

/** Whether `principal` may see and change `workspaceId`'s resources: an operator any, a workspace token its own. */
export function mayAccess(principal: Principal, workspaceId: string): boolean {
  return principal.kind === "operator" || principal.workspaceId === workspaceId;
}

/** Failed attempts a network may make in a row, and how fast it is given them back (one a minute). */
export const FAILED_ATTEMPTS = { burst: 10, perSecond: 1 / 60 };

/** Most client networks whose failures are remembered (the least recently seen forgotten). */
const MAX_NETWORKS = 10_000;

/** Failed attempts per client network (see the module comment). */
export class FailedAttempts {
  private readonly buckets = new TokenBuckets(FAILED_ATTEMPTS.perSecond, FAILED_ATTEMPTS.burst, MAX_NETWORKS);

  /** Whether `network` may try a token now (refused: how long to wait, s). */
  mayTry(network: string, nowMs: number): Take {
    return this.buckets.empty(network, nowMs);
  }

  /** Counts one failed attempt of `network`. */
  failed(network: string, nowMs: number): void {
    this.buckets.take(network, 1, nowMs);
  }
}
