/**
 * The operator CLI and the container image's entrypoint:
 *   ingest | sink | deliver  run a service until SIGTERM
 *   migrate                  create topics and apply ClickHouse migrations, then exit
 *   dlq replay               send the dead letters there are when it starts back to their topic, then exit
 *   retention                drop what RETENTION_DAYS no longer keeps (18.16; TTLs on current), then exit (the sink runs it hourly)
 *   keys create|list|revoke ... | tokens create|list|revoke ... | audit ... | regulations create|list|show ...
 *                            write keys, admin tokens and the audit trail (deploy/commands/admin-cli.ts)
 *   users delete|suppress|unsuppress <workspaceId> <userId> [--suppress] [--by <who>]
 *                            delete a user's data, suppress their later events, or lift that (deploy/commands/privacy.ts)
 *   destinations add|list|pause|resume|remove|test|replay-failures|replay ...
 *                            a workspace's webhook destinations (deploy/commands/destinations.ts)
 *   plans draft|apply|show|diff|check|remove ...
 *                            a workspace's tracking plan (deploy/commands/plans.ts)
 * Settings come from the environment (docs/OPERATIONS.md, Settings). Exit codes: 0 done, 1 failed, 2 usage.
 */
// First, before anything loads kafkajs: its stand-ins (schemas/kafka/stand-ins.ts).
import "../schemas/kafka/stand-ins";
import pino from "pino";
import { kafkaConfig } from "../schemas/config";
import { privacyConfig, setupConfig } from "./setup/config";
import { sinkConfig } from "../sink/config";
import { auditCli, keysCli, tokensCli } from "./commands/admin-cli";
import { adminApi } from "./admin/extension";
import { regulationsCommand } from "./commands/regulations-command";
import { runIngest } from "../ingest/main";
import { runSink } from "../sink/main";
import { runDeliver } from "../sink/deliver/main";
import { logProcessWarnings } from "../schemas/runtime/warnings";
import { deliveriesCommand } from "./commands/deliveries";
import { replayCommand } from "./commands/replay-range";
import { clientSql, createClickHouse } from "../schemas/clickhouse/client";
import { createKafka } from "../schemas/kafka/client";
import { keysCommandConfig } from "../ingest/config";
import { applyRetention } from "../sink/upkeep/retention";
import { runPrivacyRequest } from "./commands/privacy";
import { replayDeadLetters } from "./commands/replay";
import { replayGroupId } from "../sink/monitors/dlq-progress";
import { runSetup } from "./setup/main";
import { catalogText, readCatalog, safeJson } from "./commands/catalog";
import { dematerializeKey, listMaterialized, materializeKey } from "./commands/properties";
import { destinationsCommand } from "./commands/destinations";
import { plansCommand } from "./commands/plans";
import { USAGE } from "./usage";
import { COLUMN_TYPES, type ColumnType, type PropertySource } from "../schemas/clickhouse/materialize";

const log = pino({ name: "cli" });

/** Runs one command; resolves with the process exit code (services never resolve). */
export async function cli(args: string[]): Promise<number> {
  const [command, sub] = args;
  switch (command) {
    case "ingest":
      await runIngest(adminApi(process.env));
      return new Promise<number>(() => {}); // runs until a signal stops the process
    case "sink":
      await runSink();
      return new Promise<number>(() => {});
    case "deliver":
      await runDeliver();
      return new Promise<number>(() => {});
    case "migrate":
      await runSetup();
      return 0;
    case "dlq":
      if (sub !== "replay") break;
      return dlqReplay();
    case "keys":
    case "tokens":
    case "audit":
    case "regulations":
      return admin(command, args.slice(1));
    case "retention":
      return retention();
    case "users":
      return users(args.slice(1));
    case "catalog":
      return catalog(args.slice(1));
    case "properties":
      return properties(args.slice(1));
    case "destinations":
      return destinations(args.slice(1));
    case "plans":
      return plans(args.slice(1));
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

/** `keys`, `tokens`, `audit` (deploy/commands/admin-cli.ts), `regulations` (regulations-command.ts) with the settings of the environment. */
async function admin(command: "keys" | "tokens" | "audit" | "regulations", args: string[]): Promise<number> {
  const config = privacyConfig(process.env);
  const clickhouse = createClickHouse(config.clickhouse);
  const file = keysCommandConfig(process.env).writeKeysFile;
  const context = {
    kafka: createKafka(config.kafka, "cli"),
    adminTopic: config.kafka.adminTopic,
    clientId: config.kafka.clientId,
    clickhouse,
    database: config.clickhouse.database,
    ...(file ? { keysFile: file } : {}),
    writeKeys: process.env.WRITE_KEYS ?? "",
    operator: config.operator ?? "unknown",
    log,
    io: { out: (t: string) => process.stdout.write(t), err: (t: string) => process.stderr.write(t) },
  };
  try {
    if (command === "regulations")
      return await regulationsCommand(
        args,
        { kafka: context.kafka, config, sql: clientSql(clickhouse), log, now: () => new Date() },
        context.io,
      );
    return await (command === "keys" ? keysCli : command === "tokens" ? tokensCli : auditCli)(args, context);
  } finally {
    await clickhouse.close();
  }
}

async function retention(): Promise<number> {
  const config = setupConfig(process.env).clickhouse;
  if (config.retentionDays === undefined) {
    process.stderr.write("retention: RETENTION_DAYS is not set; nothing is dropped\n");
    return 2;
  }
  const client = createClickHouse(config);
  try {
    const done = await applyRetention(clientSql(client), config, new Date().toISOString().slice(0, 10));
    log.info({ ...done, retentionDays: config.retentionDays, table: `${config.database}.${config.table}` }, "retention applied");
    return 0;
  } finally {
    await client.close();
  }
}

async function catalog(args: string[]): Promise<number> {
  const json = args.includes("--json");
  const [workspaceId, ...rest] = args.filter((a) => a !== "--json");
  if (rest.length > 0 || workspaceId?.startsWith("-")) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = setupConfig(process.env).clickhouse;
  const client = createClickHouse(config);
  try {
    const found = await readCatalog(clientSql(client), config.database, workspaceId);
    process.stdout.write(json ? `${safeJson(found)}\n` : catalogText(found));
    return 0;
  } finally {
    await client.close();
  }
}

async function properties(args: string[]): Promise<number> {
  const [action, key, ...rest] = args;
  const options = new Map<string, string>();
  for (let i = 0; i + 1 < rest.length; i += 2) options.set(rest[i]!, rest[i + 1]!);
  const source = options.get("--from") ?? "properties";
  const type = options.get("--type");
  const known = rest.length % 2 === 0 && [...options.keys()].every((o) => o === "--from" || o === "--type");
  const sourceOk = source === "properties" || source === "traits" || source === "context";
  const typeOk = type === undefined || (COLUMN_TYPES as readonly string[]).includes(type);
  if (action !== "list" && (!key || !known || !sourceOk || !typeOk)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = setupConfig(process.env).clickhouse;
  const client = createClickHouse(config, { requestTimeoutMs: 3_600_000 });
  try {
    const sql = clientSql(client);
    if (action === "list") {
      for (const c of await listMaterialized(sql, config)) process.stdout.write(`${c.name}\t${c.type}\t${c.kind} ${c.expression}\n`);
      return 0;
    }
    const from = source as PropertySource;
    if (action === "materialize") {
      const result = await materializeKey(sql, config, from, key!, type as ColumnType | undefined);
      if (!result.ok) return refuse(result.error);
      log.info(result, result.existed ? "column existed; stored rows checked" : "column added and filled");
      return 0;
    }
    if (action === "dematerialize") {
      const result = await dematerializeKey(sql, config, from, key!);
      if (!result.ok) return refuse(result.error);
      log.info(result, result.dropped ? "column dropped" : "no such column");
      return 0;
    }
  } finally {
    await client.close();
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

function refuse(error: string): number {
  process.stderr.write(`properties: ${error}\n`);
  return 2;
}

async function dlqReplay(): Promise<number> {
  const config = kafkaConfig(process.env);
  const groupId = replayGroupId(sinkConfig(process.env).groupId);
  const kafka = createKafka(config, "dlq-replay");
  const replayed = await replayDeadLetters(kafka, config, groupId);
  log.info({ replayed, from: config.dlqTopic, to: config.topic }, "dead letters replayed");
  return 0;
}

if (require.main === module) {
  logProcessWarnings(log); // kafkajs's negative idle timer as a debug line, not text on stderr
  cli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      log.fatal({ err: error }, "command failed");
      process.exit(1);
    },
  );
}

/** `users delete|suppress|unsuppress`: prints the rows removed per table; 2 on a usage error. */
async function users(args: string[]): Promise<number> {
  const [action, workspaceId, userId, ...rest] = args;
  const flags = new Set(rest.filter((a) => a === "--suppress"));
  const by = rest.indexOf("--by");
  const config = privacyConfig(process.env);
  const requestedBy = by >= 0 ? rest[by + 1] : config.operator;
  const known = rest.every((a, i) => a === "--suppress" || a === "--by" || (i === by + 1 && by >= 0));
  if ((action !== "delete" && action !== "suppress" && action !== "unsuppress") || !workspaceId || !userId || !requestedBy || !known) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const kafka = createKafka(config.kafka, "cli");
  const client = createClickHouse(config.clickhouse);
  try {
    const request = { action, workspaceId, userId, suppress: flags.has("--suppress"), requestedBy } as const;
    const timing = { sinkWaitMs: config.sinkWaitMs, mutationWaitMs: 600_000 };
    const report = await runPrivacyRequest(clientSql(client), kafka, config, request, log, timing);
    for (const { table, rows } of report.removed) process.stdout.write(`${table}\t${rows}\n`);
    log.info({ ...report, action, workspaceId, userId }, `users ${action} done`);
    return 0;
  } finally {
    await client.close();
  }
}

/** `destinations ...` (deploy/commands/destinations.ts) with the settings of the environment. */
async function destinations(args: string[]): Promise<number> {
  const { kafka } = setupConfig(process.env);
  const settings = {
    kafka,
    allowLinkLocal: process.env.DESTINATIONS_ALLOW_LINK_LOCAL === "true",
    env: process.env,
    ...(process.env.DESTINATIONS_SECRET_KEY ? { secretKey: process.env.DESTINATIONS_SECRET_KEY } : {}),
  };
  const io = { out: (t: string) => process.stdout.write(t), err: (t: string) => process.stderr.write(t) };
  const [action, destinationId, ...rest] = args;
  const replay = action === "replay" && destinationId !== undefined;
  if (((action === "test" || action === "replay-failures") && destinationId && rest.length === 0) || replay) {
    const { clickhouse } = setupConfig(process.env);
    const client = createClickHouse(clickhouse, { requestTimeoutMs: 300_000 });
    const post = { timeoutMs: 10_000, maxAnswerBytes: 65_536, allowLinkLocal: settings.allowLinkLocal };
    const full = { ...settings, post, database: clickhouse.database, table: clickhouse.table };
    try {
      if (replay) return await replayCommand(destinationId, rest, full, { kafka: createKafka(kafka, "cli"), client, log, io });
      return await deliveriesCommand(
        action as "test" | "replay-failures",
        destinationId!,
        full,
        createKafka(kafka, "cli"),
        client,
        log,
        io,
      );
    } finally {
      await client.close();
    }
  }
  return destinationsCommand(args, settings, createKafka(kafka, "cli"), log, io);
}

/** `plans ...` (deploy/commands/plans.ts) with the settings of the environment. */
async function plans(args: string[]): Promise<number> {
  const { kafka, clickhouse } = setupConfig(process.env);
  const client = createClickHouse(clickhouse, { requestTimeoutMs: 300_000 });
  const io = { out: (t: string) => process.stdout.write(t), err: (t: string) => process.stderr.write(t) };
  try {
    return await plansCommand(args, {
      kafka: createKafka(kafka, "cli"),
      topic: kafka.plansTopic,
      clientId: kafka.clientId,
      sql: async () => ({ sql: clientSql(client), database: clickhouse.database, table: clickhouse.table }),
      log,
      io,
      now: () => new Date(),
    });
  } finally {
    await client.close();
  }
}
