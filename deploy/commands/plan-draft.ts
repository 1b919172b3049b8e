/**
 * The thinking of `cli plans draft | diff | check` (deploy/commands/plans.ts): a plan drafted from
 * a workspace's catalog, the difference between two plans, how stored events fare against a
 * plan, and a refused plan's problems as one refusal naming the place of the first. The draft's rules: each track event seen, and identify and group traits, page and screen
 * properties each as one schema; every top-level key seen with the JSON types seen (one type, or
 * the list); a key is `required` when it arrived on at least REQUIRED_SHARE of its event's
 * messages; both modes `flag`, so a new plan reports before it refuses. Pure but checkStored.
 */
import { done, refuse, type OpResult, type Refusal } from "../../schemas/admin/result";
import type { EventCatalogRow, PropertyCatalogRow } from "../../schemas/clickhouse/catalog";
import { serverVersion, type Sql } from "../../schemas/clickhouse/client";
import type { ReplayPosition, ReplayRange } from "../../schemas/clickhouse/replay";
import { dialectFor } from "../../schemas/clickhouse/sql";
import { CompiledPlan, type TrackingPlan, type Violation } from "../../schemas/plans";
import { rowMessage } from "../../sink/deliver/message";
import { readReplayPage } from "./replay-range";

/** A plan as its file holds it: what `apply` completes with the workspace, version and time. */
export type PlanBody = Omit<TrackingPlan, "workspaceId" | "version" | "createdAt">;

/** The share of an event's messages a key must have arrived on to be drafted `required`. */
export const REQUIRED_SHARE = 0.95;

/** Which catalog source a type's schema covers. */
const SOURCE_OF: Record<string, "properties" | "traits"> = {
  track: "properties",
  page: "properties",
  screen: "properties",
  identify: "traits",
  group: "traits",
};

/** The schema of the keys seen on `count` messages. */
function schemaOf(keys: PropertyCatalogRow[], count: number): object {
  const properties: Record<string, object> = {};
  const required: string[] = [];
  for (const k of keys) {
    const types = [...new Set(k.types)].sort();
    properties[k.key] = { type: types.length === 1 ? types[0] : types };
    if (count > 0 && Number(k.count) >= REQUIRED_SHARE * count) required.push(k.key);
  }
  return { type: "object", properties, ...(required.length > 0 ? { required: required.sort() } : {}) };
}

/** A plan drafted from a workspace's catalog (see the module comment). */
export function draftPlan(catalog: { events: EventCatalogRow[]; properties: PropertyCatalogRow[] }): PlanBody {
  const events = catalog.events.filter((e) => e.over_cap !== 1);
  const plan: PlanBody = { unplanned: "flag", violations: "flag", track: {} };
  const keysOf = (type: string, event?: string) =>
    catalog.properties.filter((p) => p.type === type && p.source === SOURCE_OF[type] && (event === undefined || p.event === event));
  for (const e of events.filter((e) => e.type === "track")) plan.track[e.event] = schemaOf(keysOf("track", e.event), Number(e.count));
  for (const type of ["identify", "group", "page", "screen"] as const) {
    const count = events.filter((e) => e.type === type).reduce((n, e) => n + Number(e.count), 0);
    if (count === 0) continue;
    // Several names (pages, screens) share one schema: a key's messages summed over them.
    const merged = new Map<string, PropertyCatalogRow>();
    for (const k of keysOf(type)) {
      const seen = merged.get(k.key);
      merged.set(
        k.key,
        seen === undefined ? k : { ...seen, types: [...seen.types, ...k.types], count: String(Number(seen.count) + Number(k.count)) },
      );
    }
    plan[type] = schemaOf([...merged.values()], count);
  }
  return plan;
}

/** What `next` changes against `current`, one line each: modes, events added, removed and changed, the other types' schemas. */
export function planDiff(current: TrackingPlan | undefined, next: PlanBody): string[] {
  if (current === undefined) return [`new plan: ${Object.keys(next.track).length} track events`];
  const lines: string[] = [];
  if (current.unplanned !== next.unplanned) lines.push(`unplanned: ${current.unplanned} -> ${next.unplanned}`);
  if (current.violations !== next.violations) lines.push(`violations: ${current.violations} -> ${next.violations}`);
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (const name of Object.keys(next.track).sort()) {
    if (!(name in current.track)) lines.push(`+ track ${JSON.stringify(name)}`);
    else if (!same(current.track[name], next.track[name])) lines.push(`~ track ${JSON.stringify(name)}`);
  }
  for (const name of Object.keys(current.track).sort()) if (!(name in next.track)) lines.push(`- track ${JSON.stringify(name)}`);
  for (const type of ["identify", "group", "page", "screen"] as const) {
    const [a, b] = [current[type], next[type]];
    if (a === undefined && b !== undefined) lines.push(`+ ${type}`);
    else if (a !== undefined && b === undefined) lines.push(`- ${type}`);
    else if (!same(a, b)) lines.push(`~ ${type}`);
  }
  return lines;
}

/** Whether the JSON Pointer `pointer` (RFC 6901) names a value of `root`. */
function resolves(root: unknown, pointer: string): boolean {
  let at = root;
  for (const token of pointer.slice(1).split("/")) {
    const key = token.replace(/~1/g, "/").replace(/~0/g, "~");
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, key)) return false;
    at = (at as Record<string, unknown>)[key];
  }
  return true;
}

/**
 * The pointer a plan problem ("<pointer>: <what is wrong>", schemas/plans.ts planProblems) names,
 * or undefined for a problem of the whole plan. A name may hold ": " itself, so of the readings the
 * longest that names a value of `plan` is taken (else the shortest).
 */
export function problemPointer(problem: string, plan: unknown): string | undefined {
  if (!problem.startsWith("/")) return undefined;
  const readings = [...problem.matchAll(/: /g)].map((m) => problem.slice(0, m.index));
  return [...readings].reverse().find((pointer) => resolves(plan, pointer)) ?? readings[0];
}

/**
 * A refused plan's answer: a 400 whose sentence is `lead` and the problems, one an indented line,
 * and whose field is the first problem's pointer after `fieldPrefix` (the plan's place in the input), when it names one.
 */
export function planRefusal(lead: string, problems: string[], plan: unknown, fieldPrefix = ""): Refusal {
  const pointer = problems[0] === undefined ? undefined : problemPointer(problems[0], plan);
  return refuse(400, `${lead}:\n${problems.map((p) => `  ${p}`).join("\n")}`, pointer === undefined ? undefined : fieldPrefix + pointer);
}

/** `from` and `to` (ISO 8601) as a range of ms, from before to; or the 400 naming the one at fault. Pure. */
export function checkRange(from: string | undefined, to: string | undefined): OpResult<{ fromMs: number; toMs: number }> {
  const [fromMs, toMs] = [Date.parse(from ?? ""), Date.parse(to ?? "")];
  if (Number.isNaN(fromMs)) return refuse(400, "from: an ISO 8601 time", "from");
  if (Number.isNaN(toMs)) return refuse(400, "to: an ISO 8601 time", "to");
  return fromMs < toMs ? done({ fromMs, toMs }) : refuse(400, "to: after from", "to");
}

/** How many stored messages each outcome had, and the most frequent violations. */
export interface CheckReport {
  checked: number;
  /** Messages with at least one violation (flagged, blocked or trimmed). */
  violating: number;
  outcomes: Record<string, number>;
  text: string;
}

/** The report's text: the counts, then the 20 most frequent violations (path, keyword, messages). */
export function checkText(checked: number, outcomes: Record<string, number>, violations: Map<string, number>): string {
  const lines = [
    `${checked} messages checked: ${
      Object.entries(outcomes)
        .map(([o, n]) => `${n} ${o}`)
        .join(", ") || "none"
    }`,
  ];
  const top = [...violations.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 20);
  for (const [what, n] of top) lines.push(`  ${n}\t${what}`);
  return `${lines.join("\n")}\n`;
}

/** Checks the stored events of `range` (one per messageId under FINAL) against `plan`. Throws what ClickHouse throws. */
export async function checkStored(
  sql: Sql,
  where: { database: string; table: string },
  range: ReplayRange,
  plan: TrackingPlan,
): Promise<CheckReport> {
  const compiled = CompiledPlan.compile(plan);
  const dialect = dialectFor(await serverVersion(sql));
  const outcomes: Record<string, number> = {};
  const violations = new Map<string, number>();
  const count = (v: Violation) => {
    const key = `${v.path} ${v.keyword}: ${v.message}`;
    violations.set(key, (violations.get(key) ?? 0) + 1);
  };
  let checked = 0;
  let after: ReplayPosition | undefined;
  for (;;) {
    const page = await readReplayPage(sql, dialect, where, range, after);
    if (page.length === 0) break;
    for (const { row } of page) {
      const verdict = compiled.check(rowMessage(row));
      checked++;
      outcomes[verdict.outcome] = (outcomes[verdict.outcome] ?? 0) + 1;
      if (verdict.outcome !== "ok") verdict.violations.forEach(count);
    }
    after = page.at(-1)!.position;
  }
  const violating = checked - (outcomes.ok ?? 0);
  return { checked, violating, outcomes, text: checkText(checked, outcomes, violations) };
}
