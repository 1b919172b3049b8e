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
 * `screen`; `apply` adds the workspaceId, the next version and the time. Each action is also a
 * function answering a value (draftPlanOf, showPlan, applyPlan, diffPlan, removePlan, checkPlan;
 * schemas/admin/result.ts) that the admin API calls too, with the plan's body parsed. The command
 * resolves with the exit code: 0 done, 1 no plan where one is needed (or `check` found
 * violations), 2 a usage error or a refused plan. Throws what Kafka or ClickHouse throw.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { done, refuse, type OpResult } from "../../schemas/admin/result";
import type { Sql } from "../../schemas/clickhouse/client";
import { followCompacted } from "../../schemas/kafka/follow";
import { publishRecords } from "../../schemas/kafka/producer";
import { parsePlan, planProblems, type TrackingPlan } from "../../schemas/plans";
import type { Output } from "./destinations";
import { readCatalog } from "./catalog";
import { checkRange, checkStored, draftPlan, planDiff, planRefusal, type CheckReport, type PlanBody } from "./plan-draft";

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

/** What the operations need: the context but its output (the admin API has none). */
export type PlansOpContext = Pick<PlansContext, "kafka" | "topic" | "clientId" | "sql" | "log" | "now">;

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
function publish(c: Pick<PlansContext, "kafka" | "topic">, workspaceId: string, plan: TrackingPlan | null): Promise<void> {
  return publishRecords(c.kafka, c.topic, [{ key: workspaceId, value: plan === null ? null : JSON.stringify(plan) }]);
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

/** A body that is not a JSON object, refused (field `field`, when it is under one), or undefined. */
function notObject(body: unknown, field?: string): OpResult<never> | undefined {
  if (body !== null && typeof body === "object" && !Array.isArray(body)) return undefined;
  return refuse(400, `${field ?? "the plan"}: not a JSON object`, field);
}

/** `body` as `workspaceId`'s next plan (the version after the one in force), or the 400 naming its problems; and the plan in force. */
async function nextPlan(
  c: PlansOpContext,
  workspaceId: string,
  body: unknown,
): Promise<OpResult<{ current: TrackingPlan | undefined; next: TrackingPlan }>> {
  const refused = notObject(body);
  if (refused !== undefined) return refused;
  const current = await readPlan(c, workspaceId);
  const next = planOf(workspaceId, body as PlanBody, (current?.version ?? 0) + 1, c.now());
  const problems = planProblems(next);
  if (problems.length > 0) return planRefusal("the plan is refused, nothing applied", problems, next);
  return done({ current, next });
}

/** A plan drafted from `workspaceId`'s catalog (plan-draft.ts draftPlan). Throws what ClickHouse throws. */
export async function draftPlanOf(c: PlansOpContext, workspaceId: string): Promise<PlanBody> {
  const { sql, database } = await c.sql();
  return draftPlan(await readCatalog(sql, database, workspaceId));
}

/** The plan in force for `workspaceId`, with its version; 404 none. Throws what Kafka throws. */
export async function showPlan(c: PlansOpContext, workspaceId: string): Promise<OpResult<TrackingPlan>> {
  const plan = await readPlan(c, workspaceId);
  return plan === undefined ? refuse(404, `${workspaceId} has no plan`) : done(plan);
}

/**
 * Applies `body` (a plan body, parsed JSON) as `workspaceId`'s next version, acknowledged by every
 * in-sync replica: the version and the plan. 400 it is not an object, or the plan's problems (the
 * field the first one's JSON Pointer into the plan), nothing applied. Throws what Kafka throws.
 */
export async function applyPlan(
  c: PlansOpContext,
  workspaceId: string,
  body: unknown,
): Promise<OpResult<{ version: number; plan: TrackingPlan }>> {
  const made = await nextPlan(c, workspaceId, body);
  if (!made.ok) return made;
  await publish(c, workspaceId, made.value.next);
  return done({ version: made.value.next.version, plan: made.value.next });
}

/** What applying `body` would change against the plan in force, one line each (none: no change); 400 as applyPlan. Throws what Kafka throws. */
export async function diffPlan(c: PlansOpContext, workspaceId: string, body: unknown): Promise<OpResult<{ lines: string[] }>> {
  const made = await nextPlan(c, workspaceId, body);
  return made.ok ? done({ lines: planDiff(made.value.current, made.value.next) }) : made;
}

/** No plan for `workspaceId` (a tombstone, whether it had one or not), acknowledged by every in-sync replica. Throws what Kafka throws. */
export async function removePlan(c: PlansOpContext, workspaceId: string): Promise<OpResult<{ removed: string }>> {
  await publish(c, workspaceId, null);
  return done({ removed: workspaceId });
}

/**
 * How the stored events of `workspaceId` received in [from, to) (ISO 8601) fare against `plan`
 * (a plan body, parsed JSON) or, without one, the plan in force. 400 the range (field `from` or
 * `to`), `plan` not an object or its problems (field `plan` and the first one's pointer); 404 no
 * plan given and none in force. Throws what Kafka or ClickHouse throw.
 */
export async function checkPlan(
  c: PlansOpContext,
  workspaceId: string,
  input: { from: string; to: string; plan?: unknown },
): Promise<OpResult<CheckReport>> {
  const range = checkRange(input.from, input.to);
  if (!range.ok) return range;
  let plan: TrackingPlan | undefined;
  if (input.plan !== undefined) {
    const refused = notObject(input.plan, "plan");
    if (refused !== undefined) return refused;
    plan = planOf(workspaceId, input.plan as PlanBody, 1, c.now());
    const problems = planProblems(plan);
    if (problems.length > 0) return planRefusal("the plan is refused", problems, plan, "plan");
  } else plan = await readPlan(c, workspaceId);
  if (plan === undefined) return refuse(404, `${workspaceId} has no plan`);
  const { sql, database, table } = await c.sql();
  return done(await checkStored(sql, { database, table }, { workspaceId, ...range.value }, plan));
}

/** Runs `plans <action> ...` (see the module comment): the functions above, their answers printed. */
export async function plansCommand(args: string[], c: PlansContext): Promise<number> {
  const [action, workspaceId, file] = args;
  const usage = (text: string) => (c.io.err(`plans: ${text}\n`), 2);
  if (!workspaceId) return usage("plans draft|apply|show|diff|check|remove <workspaceId> ...");
  switch (action) {
    case "draft":
      c.io.out(`${JSON.stringify(await draftPlanOf(c, workspaceId), null, 2)}\n`);
      return 0;
    case "show": {
      const shown = await showPlan(c, workspaceId);
      if (!shown.ok) return (c.io.err(`plans: ${shown.error}\n`), 1);
      c.io.out(`${JSON.stringify(shown.value, null, 2)}\n`);
      return 0;
    }
    case "remove":
      await removePlan(c, workspaceId);
      c.io.out(`removed\n`);
      return 0;
    case "apply":
    case "diff": {
      if (!file || args.length !== 3) return usage(`${action} <workspaceId> FILE`);
      const read = readBody(file);
      if (!read.ok) return usage(read.error);
      if (action === "diff") {
        const diff = await diffPlan(c, workspaceId, read.body);
        if (!diff.ok) return usage(diff.error);
        c.io.out(`${diff.value.lines.join("\n") || "no change"}\n`);
        return 0;
      }
      const applied = await applyPlan(c, workspaceId, read.body);
      if (!applied.ok) return usage(applied.error);
      c.io.out(`applied version ${applied.value.version}\n`);
      return 0;
    }
    case "check":
      return check(workspaceId, args.slice(2), c);
    default:
      return usage(`unknown action ${JSON.stringify(action)}`);
  }
}

/** `check <workspaceId> --from --to [--plan FILE]`: checkPlan, FILE read first. */
async function check(workspaceId: string, args: string[], c: PlansContext): Promise<number> {
  const fail = (text: string, code = 2) => (c.io.err(`plans check: ${text}\n`), code);
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: { from: { type: "string" }, to: { type: "string" }, plan: { type: "string" } },
    }));
  } catch (e) {
    return fail((e as Error).message);
  }
  const RANGE = "--from and --to: ISO 8601 times, from before to";
  if (!checkRange(values.from, values.to).ok) return fail(RANGE);
  let plan: unknown;
  if (values.plan !== undefined) {
    const read = readBody(values.plan);
    if (!read.ok) return fail(read.error);
    plan = read.body;
  }
  const checked = await checkPlan(c, workspaceId, { from: values.from!, to: values.to!, ...(plan === undefined ? {} : { plan }) });
  if (checked.ok) {
    c.io.out(checked.value.text);
    return checked.value.violating === 0 ? 0 : 1;
  }
  if (checked.status === 404) return (c.io.err(`plans: ${checked.error} (give one with --plan FILE)\n`), 1);
  return fail(checked.field === "from" || checked.field === "to" ? RANGE : checked.error);
}
