/**
 * Admin tokens through the admin topic (schemas/admin/records.ts TokenRecord): create (the token
 * shown once; the topic keeps its SHA-256), list, revoke. Only an operator does these (the API's
 * routes say so; the CLI is the operator). The admin API and `tokens create|list|revoke` call the
 * same functions. Errors are values (OpResult); Kafka failures throw.
 */
import type { Kafka } from "kafkajs";
import typia, { tags } from "typia";
import { generateToken } from "../../ingest/admission/tokens";
import { publishAdmin, type AdminBook } from "../../schemas/admin/book";
import type { TokenFields, TokenRecord, TokenScope } from "../../schemas/admin/records";
import { done, invalid, refuse, type OpResult } from "../../schemas/admin/result";

/** Where tokens are written. */
export interface TokensContext {
  kafka: Kafka;
  /** KAFKA_ADMIN_TOPIC. */
  topic: string;
}

/** What a new token is: a name for people, and its scope (a workspace token names its workspace). */
export interface TokenInput {
  name: string & tags.MinLength<1> & tags.MaxLength<100>;
  scope: "operator" | "workspace";
  workspaceId?: string & tags.MinLength<1> & tags.MaxLength<200> & tags.Pattern<"^[^\\s/]+$">;
}

/** A token as lists show it: never the token, nor its digest. */
export type ListedToken = TokenScope & Omit<TokenFields, "sha256" | "kind">;

const validateInput = typia.createValidate<TokenInput>();

/**
 * Creates a token; resolves with the token (its only appearance) and its listing. 400 names the
 * field: `scope` workspace needs `workspaceId`, operator takes none. Throws when Kafka does not acknowledge.
 */
export async function createAdminToken(
  c: TokensContext,
  input: unknown,
  actor: string,
  now: Date,
): Promise<OpResult<{ token: string; listed: ListedToken }>> {
  const checked = validateInput(input);
  if (!checked.success) return invalid("token", checked.errors);
  const { name, scope, workspaceId } = checked.data;
  if (scope === "workspace" && workspaceId === undefined) return refuse(400, "a workspace token names its workspaceId", "workspaceId");
  if (scope === "operator" && workspaceId !== undefined) return refuse(400, "an operator token has no workspaceId", "workspaceId");
  const { token, sha256, tokenId } = generateToken();
  const scoped: TokenScope = scope === "operator" ? { scope } : { scope, workspaceId: workspaceId! };
  const record: TokenRecord = { kind: "token", sha256, tokenId, name, ...scoped, createdAt: now.toISOString(), createdBy: actor };
  await publishAdmin(c.kafka, c.topic, [record]);
  return done({ token, listed: listedToken(record) });
}

/** Every token, revoked ones included, oldest first. */
export function listAdminTokens(book: AdminBook): ListedToken[] {
  return [...book.tokens.values()].map(listedToken).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** Revokes `tokenId` (404 when there is none); a revoked one is answered as it is. Throws when Kafka does not acknowledge. */
export async function revokeAdminToken(
  c: TokensContext,
  book: AdminBook,
  tokenId: string,
  actor: string,
  now: Date,
): Promise<OpResult<ListedToken>> {
  const found = [...book.tokens.values()].find((t) => t.tokenId === tokenId);
  if (found === undefined) return refuse(404, `no token ${tokenId}`, "tokenId");
  if (found.revokedAt !== undefined) return done(listedToken(found));
  const revoked: TokenRecord = { ...found, revokedAt: now.toISOString(), revokedBy: actor };
  await publishAdmin(c.kafka, c.topic, [revoked]);
  book.apply(`token:${revoked.sha256}`, JSON.stringify(revoked)); // refused here at once, elsewhere within seconds
  return done(listedToken(revoked));
}

function listedToken(r: TokenRecord): ListedToken {
  const { sha256: _digest, kind: _kind, ...rest } = r;
  return rest as ListedToken;
}
