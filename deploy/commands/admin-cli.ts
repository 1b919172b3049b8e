/**
 * The CLI of the admin topic and the audit trail, calling the same operations as the admin API
 * (deploy/commands/keys.ts, tokens.ts; deploy/admin/audit.ts):
 *   keys create <workspaceId>              a key through the admin topic, printed once
 *   keys list [<workspaceId>] [--json]     every key: the topic's and the keys file's
 *   keys revoke <workspaceId> <keyId>      refused by every ingest within seconds
 *   keys create|revoke --file ...          the keys file (WRITE_KEYS_FILE) as before, for teams keeping keys in Git
 *   tokens create <name> --operator | --workspace <workspaceId>
 *   tokens list [--json] | tokens revoke <tokenId>
 *   audit [--workspace W] [--action A] [--actor A] [--since T] [--limit N]   JSON lines, newest first
 * Each change is audited with actor `cli:<user>` (PRIVACY's operator: USER or the OS account) and
 * source `cli`. Exit codes: 0 done, 1 refused or not found, 2 usage.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { createKey, readKeys, revokeKeys, parseWriteKeys, type WriteKeyEntry } from "../../ingest/admission/keys";
import { readAdmin } from "../../schemas/admin/book";
import type { OpResult } from "../../schemas/admin/result";
import { readAudit, writeAudit } from "../admin/audit";
import { createWriteKey, listWriteKeys, revokeWriteKey } from "./keys";
import { createAdminToken, listAdminTokens, revokeAdminToken } from "./tokens";
import { list } from "../../schemas/config";

/** What the admin CLI needs. */
export interface AdminCliContext {
  kafka: Kafka;
  adminTopic: string;
  clientId: string;
  clickhouse: ClickHouseClient;
  database: string;
  /** WRITE_KEYS_FILE, when set. */
  keysFile?: string;
  /** WRITE_KEYS (`key=workspaceId` entries). */
  writeKeys: string;
  /** Who runs it (the audit's actor, `cli:<operator>`). */
  operator: string;
  log: Logger;
  io: { out: (t: string) => void; err: (t: string) => void };
}

/** `keys ...`; resolves with the exit code. */
export async function keysCli(args: string[], c: AdminCliContext): Promise<number> {
  const [action, first, second] = args.filter((a) => a !== "--file" && a !== "--json");
  if (args.includes("--file")) return keysFile(action, first, second, c);
  const configured = (): WriteKeyEntry[] => [...parseWriteKeys(list(c.writeKeys)), ...(c.keysFile ? readKeys(c.keysFile) : [])];
  if (action === "list") {
    const book = await readAdmin(c.kafka, c.adminTopic, c.clientId, c.log);
    for (const k of listWriteKeys(book, configured(), first))
      c.io.out(
        args.includes("--json")
          ? `${JSON.stringify(k)}\n`
          : `${k.workspaceId}\t${k.keyId}\t${k.fingerprint}\t${k.source}\t${k.revokedAt ? "revoked" : "active"}\n`,
      );
    return 0;
  }
  const context = { kafka: c.kafka, topic: c.adminTopic };
  if (action === "create" && first && second === undefined) {
    const made = await audited(c, "keys.create", first, { workspaceId: first }, createWriteKey(context, first, actorOf(c), new Date()));
    if (!made.ok) return refused(c, made.error);
    c.io.out(`${made.value.writeKey}\n`);
    c.io.err(`keys: key ${made.value.key.keyId} created for ${first}; it is shown only now\n`);
    return 0;
  }
  if (action === "revoke" && first && second) {
    const book = await readAdmin(c.kafka, c.adminTopic, c.clientId, c.log);
    const scope = { workspaceId: first, actor: actorOf(c), now: new Date() };
    const done = await audited(
      c,
      "keys.revoke",
      first,
      { workspaceId: first, keyId: second },
      revokeWriteKey(context, book, configured(), second, scope),
    );
    if (!done.ok) return refused(c, done.error);
    c.io.err(`keys: ${second} revoked\n`);
    return 0;
  }
  return usage(c);
}

/** The keys file's commands, as before the admin topic (`--file`). */
function keysFile(action: string | undefined, first: string | undefined, second: string | undefined, c: AdminCliContext): number {
  if (!c.keysFile) return (c.io.err("keys: set WRITE_KEYS_FILE to the keys file\n"), 2);
  if (action === "create" && first) {
    c.io.out(`${createKey(c.keysFile, first)}\n`);
    c.io.err(`keys: added a key for ${first} to ${c.keysFile}; it is shown only now\n`);
    return 0;
  }
  if (action === "revoke" && first) {
    const removed =
      first === "--key" && second ? revokeKeys(c.keysFile, { writeKey: second }) : revokeKeys(c.keysFile, { workspaceId: first });
    c.io.err(`keys: revoked ${removed} key(s) of ${c.keysFile}\n`);
    return removed > 0 ? 0 : 1;
  }
  return usage(c);
}

/** `tokens ...`; resolves with the exit code. */
export async function tokensCli(args: string[], c: AdminCliContext): Promise<number> {
  const [action, first] = args;
  const context = { kafka: c.kafka, topic: c.adminTopic };
  if (action === "list") {
    const book = await readAdmin(c.kafka, c.adminTopic, c.clientId, c.log);
    for (const t of listAdminTokens(book))
      c.io.out(
        args.includes("--json")
          ? `${JSON.stringify(t)}\n`
          : `${t.tokenId}\t${t.scope === "workspace" ? t.workspaceId : "(operator)"}\t${t.name}\t${t.revokedAt ? "revoked" : "active"}\n`,
      );
    return 0;
  }
  if (action === "create" && first) {
    const at = args.indexOf("--workspace");
    const input = args.includes("--operator")
      ? { name: first, scope: "operator" }
      : { name: first, scope: "workspace", ...(at > 0 && args[at + 1] ? { workspaceId: args[at + 1] } : {}) };
    const workspaceId = "workspaceId" in input ? String(input.workspaceId) : "";
    const made = await audited(c, "tokens.create", workspaceId, input, createAdminToken(context, input, actorOf(c), new Date()));
    if (!made.ok) return refused(c, made.error);
    c.io.out(`${made.value.token}\n`);
    c.io.err(`tokens: ${made.value.listed.tokenId} created; the token is shown only now\n`);
    return 0;
  }
  if (action === "revoke" && first) {
    const book = await readAdmin(c.kafka, c.adminTopic, c.clientId, c.log);
    const done = await audited(c, "tokens.revoke", "", { tokenId: first }, revokeAdminToken(context, book, first, actorOf(c), new Date()));
    if (!done.ok) return refused(c, done.error);
    c.io.err(`tokens: ${first} revoked\n`);
    return 0;
  }
  return usage(c);
}

/** `audit [--workspace W] [--action A] [--actor A] [--since T] [--limit N]`: JSON lines, newest first. */
export async function auditCli(args: string[], c: AdminCliContext): Promise<number> {
  const option = (name: string) => {
    const at = args.indexOf(name);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const limit = Number(option("--limit") ?? "100");
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000) return usage(c);
  const filter = {
    limit,
    workspaceId: option("--workspace"),
    action: option("--action"),
    actor: option("--actor"),
    since: option("--since"),
  };
  const defined = Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined)) as typeof filter;
  for (const row of await readAudit(c.clickhouse, c.database, defined)) c.io.out(`${JSON.stringify(row)}\n`);
  return 0;
}

const actorOf = (c: AdminCliContext) => `cli:${c.operator}`;

/** Runs `operation` and audits it as the API does (status 200/201 done, the refusal's otherwise, 0 when it threw). */
async function audited<T>(
  c: AdminCliContext,
  action: string,
  workspaceId: string,
  params: unknown,
  operation: Promise<OpResult<T>>,
): Promise<OpResult<T>> {
  const entry = {
    actor: actorOf(c),
    scope: "operator" as const,
    workspaceId,
    action,
    target: "",
    params,
    sourceIp: "cli",
    userAgent: "cli",
  };
  let result: OpResult<T>;
  try {
    result = await operation;
  } catch (error) {
    await writeAudit(c.clickhouse, c.database, { ...entry, status: 0 }, c.log);
    throw error;
  }
  await writeAudit(
    c.clickhouse,
    c.database,
    { ...entry, status: result.ok ? (action.endsWith(".create") ? 201 : 200) : result.status },
    c.log,
  );
  return result;
}

function refused(c: AdminCliContext, error: string): number {
  c.io.err(`${error}\n`);
  return 1;
}

function usage(c: AdminCliContext): number {
  c.io.err("usage: keys create|list|revoke ..., tokens create|list|revoke ..., audit [...] (see `cli` without arguments)\n");
  return 2;
}
