/**
 * `cli plans ...`: each workspace's tracking plan (schemas/plans.ts), kept on the plans topic
 * (compacted, key = workspaceId) that every ingest follows.
 *   draft <workspaceId>          a plan drafted from the catalog (JSON, standard output; plan-draft.ts)
 *   apply <workspaceId> FILE     check FILE (every mistake named by its path, nothing applied) and publish it
 *   show <workspaceId>           the plan in force, with its version
 *   diff <workspaceId> FILE      what FILE would change against the plan in force
 *   check <workspaceId> --from <time> --to <time> [--plan FILE]
 *                                how the stored events received in [from, to) fare against FILE or the plan in force
 *   remove <workspaceId>         no plan for the workspace
 * FILE holds `unplanned`, `violations`, `track` and optionally `identify`, `group`, `page`,
 * `screen`; `apply` adds the workspaceId, the next version and the time. Resolves with the exit
 * code: 0 done, 1 no plan where one is needed (or `check` found violations), 2 a usage error or a
 * refused plan. Throws what Kafka or ClickHouse throw.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import type { Sql } from "../../schemas/clickhouse/client";
import { followCompacted } from "../../schemas/kafka/follow";
import { createProducer, sendWhole } from "../../schemas/kafka/producer";
import { parsePlan, planProblems, type TrackingPlan } from "../../schemas/plans";
import type { Output } from "./destinations";
import { readCatalog } from "./catalog";
import { checkStored, draftPlan, planDiff, type PlanBody } from "./plan-draft";

const PUBLISH_DEADLINE_MS = 30_000;

/** What the command needs beside its arguments. */
export interface PlansContext {
  kafka: Kafka;
  topic: string;
  clientId: string;
  /** ClickHouse (draft reads the catalog, check the events) and where the events are. */
  sql: () => Promise<{ sql: Sql; database: string; table: string }>;
  log: Logger;
  io: Output;
  now: () => Date;
}

/** The plan in force for `workspaceId`, or undefined. Throws what Kafka throws. */
export async function readPlan(
  c: Pick<PlansContext, "kafka" | "topic" | "clientId" | "log">,
  workspaceId: string,
): Promise<TrackingPlan | undefined> {
  let found: TrackingPlan | undefined;
  const following = await followCompacted(
    c.kafka,
    { topic: c.topic, groupPrefix: `${c.clientId}-plans-cli`, label: "plans", log: c.log },
    (key, value) => {
      if (key !== workspaceId) return;
      const plan = parsePlan(value);
      found = plan?.workspaceId === key ? plan : undefined;
    },
  );
  await following.stop();
  return found;
}

/** Writes `plan` (or null: removed) under its workspace, acknowledged by every in-sync replica. */
async function publish(c: PlansContext, workspaceId: string, plan: TrackingPlan | null): Promise<void> {
  const producer = createProducer(c.kafka);
  await producer.connect();
  try {
    const messages = [{ key: workspaceId, value: plan === null ? null : JSON.stringify(plan) }];
    await sendWhole(producer, { acks: -1, topicMessages: [{ topic: c.topic, messages }] }, PUBLISH_DEADLINE_MS);
  } finally {
    await producer.disconnect();
  }
}

/** FILE's plan body, or the problem reading it. */
function readBody(file: string): { ok: true; body: PlanBody } | { ok: false; error: string } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    return { ok: false, error: `${file}: ${(e as Error).message}` };
  }
  try {
    const body: unknown = JSON.parse(text);
    if (body === null || typeof body !== "object" || Array.isArray(body)) return { ok: false, error: `${file}: not a JSON object` };
    return { ok: true, body: body as PlanBody };
  } catch (e) {
    return { ok: false, error: `${file}: not JSON (${(e as Error).message})` };
  }
}

/** The full plan of a body for a workspace, at a version and time. */
export function planOf(workspaceId: string, body: PlanBody, version: number, now: Date): TrackingPlan {
  const { workspaceId: _w, version: _v, createdAt: _c, ...rest } = body as PlanBody & Partial<TrackingPlan>;
  return { ...rest, workspaceId, version, createdAt: now.toISOString() } as TrackingPlan;
}

/** Runs `plans <action> ...` (see the module comment). */
export async function plansCommand(args: string[], c: PlansContext): Promise<number> {
  const [action, workspaceId, file] = args;
  const usage = (text: string) => (c.io.err(`plans: ${text}\n`), 2);
  if (!workspaceId) return usage("plans draft|apply|show|diff|check|remove <workspaceId> ...");
  switch (action) {
    case "draft": {
      const { sql, database } = await c.sql();
      c.io.out(`${JSON.stringify(draftPlan(await readCatalog(sql, database, workspaceId)), null, 2)}\n`);
      return 0;
    }
    case "show": {
      const plan = await readPlan(c, workspaceId);
      if (plan === undefined) return (c.io.err(`plans: ${workspaceId} has no plan\n`), 1);
      c.io.out(`${JSON.stringify(plan, null, 2)}\n`);
      return 0;
    }
    case "remove":
      await publish(c, workspaceId, null);
      c.io.out(`removed\n`);
      return 0;
    case "apply":
    case "diff": {
      if (!file || args.length !== 3) return usage(`${action} <workspaceId> FILE`);
      const read = readBody(file);
      if (!read.ok) return usage(read.error);
      const current = await readPlan(c, workspaceId);
      const next = planOf(workspaceId, read.body, (current?.version ?? 0) + 1, c.now());
      const problems = planProblems(next);
      if (problems.length > 0) return usage(`the plan is refused, nothing applied:\n${problems.map((p) => `  ${p}`).join("\n")}`);
      if (action === "diff") {
        c.io.out(`${planDiff(current, next).join("\n") || "no change"}\n`);
        return 0;
      }
      await publish(c, workspaceId, next);
      c.io.out(`applied version ${next.version}\n`);
      return 0;
    }
    case "check":
      return check(workspaceId, args.slice(2), c);
    default:
      return usage(`unknown action ${JSON.stringify(action)}`);
  }
}

/** `check <workspaceId> --from --to [--plan FILE]`. */
async function check(workspaceId: string, args: string[], c: PlansContext): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: { from: { type: "string" }, to: { type: "string" }, plan: { type: "string" } },
    }));
  } catch (e) {
    return (c.io.err(`plans check: ${(e as Error).message}\n`), 2);
  }
  const fromMs = Date.parse(values.from ?? "");
  const toMs = Date.parse(values.to ?? "");
  if (Number.isNaN(fromMs) || Number.isNaN(toMs) || fromMs >= toMs)
    return (c.io.err("plans check: --from and --to: ISO 8601 times, from before to\n"), 2);
  let plan: TrackingPlan | undefined;
  if (values.plan !== undefined) {
    const read = readBody(values.plan);
    if (!read.ok) return (c.io.err(`plans check: ${read.error}\n`), 2);
    plan = planOf(workspaceId, read.body, 1, c.now());
    const problems = planProblems(plan);
    if (problems.length > 0) return (c.io.err(`plans check: the plan is refused:\n${problems.map((p) => `  ${p}`).join("\n")}\n`), 2);
  } else plan = await readPlan(c, workspaceId);
  if (plan === undefined) return (c.io.err(`plans: ${workspaceId} has no plan (give one with --plan FILE)\n`), 1);
  const { sql, database, table } = await c.sql();
  const report = await checkStored(sql, { database, table }, { workspaceId, fromMs, toMs }, plan);
  c.io.out(report.text);
  return report.violating === 0 ? 0 : 1;
}
