/**
 * Admin tokens (ingest/admission/tokens.ts): the format of a new token, the bearer header, who a
 * token is (ADMIN_TOKEN, created operator and workspace tokens, revoked, unknown, missing, off),
 * mayAccess, and failed attempts counted per network with time passed in.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { TokenRecord } from "../../../../schemas/admin/records";
import {
  AdminTokens,
  FAILED_ATTEMPTS,
  FailedAttempts,
  TOKEN_PREFIX,
  bearerOf,
  digestOf,
  generateToken,
  mayAccess,
} from "../../../../ingest/admission/tokens";
import { AT, tokenRecord } from "../../../support/admin-fixtures";

const tokens = suite("admin tokens");

/** A token record for `token`, and the stand-in lookup of the admin topic holding `records`. */
const recordOf = (token: string, tokenId: string, extra: Partial<TokenRecord> = {}) => tokenRecord(digestOf(token), tokenId, extra);
const lookup = (records: TokenRecord[]) => ({ token: (sha256: string) => records.find((r) => r.sha256 === sha256) });

tokens("a new token is sat_ and 43 base64url characters; its id tok_ and 12 hex; its digest that of its text", () => {
  const first = generateToken();
  const second = generateToken();
  assert.match(first.token, /^sat_[A-Za-z0-9_-]{43}$/);
  assert.ok(first.token.startsWith(TOKEN_PREFIX));
  assert.match(first.tokenId, /^tok_[0-9a-f]{12}$/);
  assert.is(first.sha256, digestOf(first.token));
  assert.match(first.sha256, /^[0-9a-f]{64}$/);
  assert.is.not(first.token, second.token);
  assert.is.not(first.tokenId, second.tokenId);
  assert.is(digestOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

tokens("bearerOf takes the one token of Bearer, in any case", () => {
  assert.is(bearerOf("Bearer abc"), "abc");
  assert.is(bearerOf("bearer  abc "), "abc");
  assert.is(bearerOf("Basic abc"), undefined);
  assert.is(bearerOf("Bearer a b"), undefined);
  assert.is(bearerOf("Bearer "), undefined);
  assert.is(bearerOf(undefined), undefined);
});

tokens("ADMIN_TOKEN is the operator; created tokens are who their record says", () => {
  const op = recordOf("sat_op", "tok_000000000001");
  const ws = recordOf("sat_ws", "tok_000000000002", { scope: "workspace", workspaceId: "ws1" } as Partial<TokenRecord>);
  const auth = new AdminTokens("op-token", lookup([op, ws]));
  assert.equal(auth.authenticate("Bearer op-token"), { ok: true, principal: { kind: "operator", actor: "operator" } });
  assert.equal(auth.authenticate("Bearer sat_op"), { ok: true, principal: { kind: "operator", actor: "tok_000000000001" } });
  assert.equal(auth.authenticate("Bearer sat_ws"), {
    ok: true,
    principal: { kind: "workspace", workspaceId: "ws1", actor: "tok_000000000002" },
  });
});

tokens("revoked, unknown, missing, and off when there is no ADMIN_TOKEN and no header", () => {
  const revoked = recordOf("sat_old", "tok_000000000003", { revokedAt: AT, revokedBy: "operator" });
  const auth = new AdminTokens("op-token", lookup([revoked]));
  assert.equal(auth.authenticate("Bearer sat_old"), { ok: false, reason: "revoked" });
  assert.equal(auth.authenticate("Bearer sat_nobody"), { ok: false, reason: "unknown" });
  assert.equal(auth.authenticate("Bearer OP-TOKEN"), { ok: false, reason: "unknown" });
  assert.equal(auth.authenticate(undefined), { ok: false, reason: "missing" });
  assert.equal(auth.authenticate("Basic op-token"), { ok: false, reason: "missing" });
  const off = new AdminTokens(undefined, lookup([recordOf("sat_op", "tok_000000000001")]));
  assert.equal(off.authenticate(undefined), { ok: false, reason: "off" });
  assert.equal(off.authenticate("Bearer sat_op").ok, true, "created tokens work without ADMIN_TOKEN");
  assert.equal(off.authenticate("Bearer op-token"), { ok: false, reason: "unknown" });
});

tokens("a lookup answering a record of another digest is not believed", () => {
  const other = recordOf("sat_other", "tok_000000000004");
  const auth = new AdminTokens("op-token", { token: () => other });
  assert.equal(auth.authenticate("Bearer sat_mine"), { ok: false, reason: "unknown" });
  assert.equal(auth.authenticate("Bearer sat_other").ok, true);
});

tokens("mayAccess: an operator any workspace, a workspace token its own", () => {
  assert.ok(mayAccess({ kind: "operator", actor: "operator" }, "ws9"));
  assert.ok(mayAccess({ kind: "workspace", workspaceId: "ws1", actor: "t" }, "ws1"));
  assert.not.ok(mayAccess({ kind: "workspace", workspaceId: "ws1", actor: "t" }, "ws2"));
});

tokens("failed attempts: 10 in a row, then refused; another network unaffected; refilled as time passes", () => {
  const failures = new FailedAttempts();
  const t0 = 1_000_000;
  assert.is(FAILED_ATTEMPTS.burst, 10);
  for (let i = 0; i < 10; i++) {
    assert.ok(failures.mayTry("10.0.0.0/24", t0).ok, `attempt ${i + 1} may try`);
    failures.failed("10.0.0.0/24", t0);
  }
  const refused = failures.mayTry("10.0.0.0/24", t0);
  assert.is(refused.ok, false);
  assert.ok(!refused.ok && refused.retryAfterSeconds > 0 && refused.retryAfterSeconds <= 60);
  assert.ok(failures.mayTry("10.0.1.0/24", t0).ok, "another network");
  assert.is(failures.mayTry("10.0.0.0/24", t0 + 30_000).ok, false, "half a minute is not enough");
  assert.ok(failures.mayTry("10.0.0.0/24", t0 + 60_000).ok, "one attempt back after 60 s");
  failures.failed("10.0.0.0/24", t0 + 60_000);
  assert.is(failures.mayTry("10.0.0.0/24", t0 + 60_000).ok, false);
});

tokens.run();
