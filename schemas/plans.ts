/**
 * Tracking plans (issue 50): what a workspace's events should look like, as the plans topic holds
 * it (compacted, key = workspaceId, a tombstone removes it), the problems of a plan (`plans apply`
 * refuses a plan with any), and the check of one message against a compiled plan. Pure. Bad data
 * is a value: parsePlan and check never throw; a check that fails inside (a recursive schema on
 * data deep enough to exhaust the stack) is flagged, never blocked, so the plan's fault loses nothing.
 *
 * Rules, with their sources:
 * - one JSON Schema per rule, as Segment Protocols has one per event (track: `properties`;
 *   identify and group: `traits`; page and screen: `properties`); here draft 2020-12, compiled by
 *   Ajv (schemas/plan-check.ts: strict, RE2 patterns, no remote refs, five formats);
 * - unplanned events and violations are allowed, flagged or blocked as Segment Protocols' source
 *   settings do (allowUnplannedEvents, allowEventOnViolations); `omit` drops unplanned properties
 *   or traits and keeps the event (OMIT_PROPERTIES / OMIT_TRAITS), other violations flagged.
 */
import type { ValidateFunction } from "ajv/dist/2020";
import typia from "typia";
import { escapePointer, PLAN_LIMITS, toViolation } from "./plan-check";
import { compileRules, isRecord, lazyRules, TYPED, type Rule } from "./plan-rules";

export { PLAN_LIMITS } from "./plan-check";

/** What happens to a track event not in `plan.track`: kept, kept and flagged, or blocked. */
export type UnplannedMode = "allow" | "flag" | "block";
/** What happens to a message breaking its schema; omit: unplanned top-level properties/traits dropped (and reported), other violations flagged. */
export type ViolationMode = "flag" | "block" | "omit";

/** A workspace's tracking plan, as `plans apply` writes it to the plans topic. */
export interface TrackingPlan {
  workspaceId: string;
  /** Integer >= 1, set by `plans apply` (the previous version + 1). */
  version: number;
  /** ISO 8601. */
  createdAt: string;
  unplanned: UnplannedMode;
  violations: ViolationMode;
  /** Event name -> JSON Schema (draft 2020-12) of the event's `properties`. */
  track: Record<string, object>;
  /** Schema of identify's `traits`. */
  identify?: object;
  /** Schema of group's `traits`. */
  group?: object;
  /** Schema of page's `properties`. */
  page?: object;
  /** Schema of screen's `properties`. */
  screen?: object;
}

/**
 * One way a message breaks the plan. `path`: a JSON Pointer (RFC 6901) from the message root
 * ("/properties/total", "/traits/email", "/event" for an unplanned event); `keyword`: the JSON
 * Schema keyword that failed, or "unplanned" (an event or property not in the plan), or "error"
 * (the check itself failed); `message`: a sentence for a person ("must be number (got string)").
 */
export interface Violation {
  path: string;
  keyword: string;
  message: string;
}

/** A check's outcome; omit: `message` is a copy without the omitted keys, `omitted` their pointers. */
export type PlanVerdict =
  | { outcome: "ok" }
  | { outcome: "flag"; violations: Violation[] }
  | { outcome: "block"; violations: Violation[] }
  | { outcome: "omit"; violations: Violation[]; omitted: string[]; message: Record<string, unknown> };

/** The fields of a message a plan looks at. */
export interface PlanMessage {
  type: string;
  event?: unknown;
  name?: unknown;
  properties?: unknown;
  traits?: unknown;
}

const isPlan = typia.createIs<TrackingPlan>();

/**
 * A record of the plans topic -> a plan; undefined for a tombstone or a value that is not one
 * (not JSON, or not the shape, or a version that is not an integer >= 1). Its schemas are not
 * compiled here: CompiledPlan.compile does it.
 */
export function parsePlan(value: Buffer | string | null): TrackingPlan | undefined {
  if (value === null || value.length === 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString());
    return isPlan(parsed) && Number.isInteger(parsed.version) && parsed.version >= 1 ? parsed : undefined;
  } catch {
    return undefined;
  }
}

const FIELDS = new Set(["workspaceId", "version", "createdAt", "unplanned", "violations", "track", ...TYPED.map(([type]) => type)]);

/** Problems of the plan's shape, each "<pointer>: <what is wrong>". */
function shapeProblems(plan: unknown): string[] {
  if (!isRecord(plan)) return ["the plan must be a JSON object"];
  const out: string[] = [];
  const want = (ok: boolean, at: string, what: string) => void (ok || out.push(`${at}: ${what}`));
  const { workspaceId: ws, version, createdAt, track } = plan;
  want(typeof ws === "string" && ws.length > 0 && ws.length <= 200, "/workspaceId", "must be a string of 1 to 200 characters");
  want(typeof version === "number" && Number.isInteger(version) && version >= 1, "/version", "must be an integer >= 1");
  want(typeof createdAt === "string" && !Number.isNaN(Date.parse(createdAt)), "/createdAt", "must be an ISO 8601 time");
  want(["allow", "flag", "block"].includes(plan.unplanned as string), "/unplanned", 'must be "allow", "flag" or "block"');
  want(["flag", "block", "omit"].includes(plan.violations as string), "/violations", 'must be "flag", "block" or "omit"');
  want(isRecord(track), "/track", "must be an object: event name -> JSON Schema of its properties");
  if (isRecord(track))
    for (const [name, schema] of Object.entries(track))
      want(isRecord(schema), `/track/${escapePointer(name)}`, "must be a JSON Schema object");
  for (const [type] of TYPED) want(plan[type] === undefined || isRecord(plan[type]), `/${type}`, "must be a JSON Schema object");
  for (const key of Object.keys(plan)) want(FIELDS.has(key), `/${escapePointer(key)}`, "is not a field of a tracking plan");
  return out;
}

/**
 * [] when `plan` is a good tracking plan; else its problems, each naming the place of the mistake
 * as a JSON Pointer into the plan ("/track/Order Completed/properties/total/type: must be equal
 * to one of the allowed values"): its shape, the limits (PLAN_LIMITS; a problem of the whole
 * plan has no pointer), and every schema compiled. `plans apply` sets version and createdAt
 * before asking.
 */
export function planProblems(plan: unknown): string[] {
  const shape = shapeProblems(plan);
  return isRecord(plan) ? [...shape, ...compileRules(plan).problems] : shape;
}

const OK: PlanVerdict = Object.freeze({ outcome: "ok" });
const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

const violationsOf = (validate: ValidateFunction, prefix: string): Violation[] =>
  (validate.errors ?? []).slice(0, PLAN_LIMITS.maxViolations).map((e) => toViolation(e, prefix));

const planned = (rule: Rule, key: string): boolean => rule.declared.has(key) || rule.patterns.some((p) => p.test(key));

/** A plan compiled once per version; check() is the ingest's hot path. */
export class CompiledPlan {
  private constructor(
    readonly plan: TrackingPlan,
    private readonly track: Pick<ReadonlyMap<string, Rule>, "get">,
    private readonly typed: Pick<ReadonlyMap<string, Rule>, "get">,
  ) {}

  /**
   * The ingest's form of a plan `plans apply` checked: its shape checked now, each schema compiled
   * the first time a message needs it (Ajv takes about 10 ms a schema: a 1,000-event plan compiled
   * whole would hold an ingest's event loop for seconds). A schema that fails then flags its
   * messages (keyword "error"). Throws for a badly shaped plan.
   */
  static lazy(plan: TrackingPlan): CompiledPlan {
    const shape = shapeProblems(plan);
    if (shape.length > 0)
      throw new Error(`tracking plan of ${String(plan?.workspaceId)} v${String(plan?.version)} refused: ${shape.slice(0, 3).join("; ")}`);
    const { track, typed } = lazyRules(plan);
    return new CompiledPlan(plan, track, typed);
  }

  /** Compiles every schema of `plan`; throws (naming its first problems) only for a plan planProblems refuses. */
  static compile(plan: TrackingPlan): CompiledPlan {
    const shape = shapeProblems(plan);
    const { problems, track, typed } =
      shape.length > 0 ? { problems: shape, track: new Map(), typed: new Map() } : compileRules({ ...plan });
    if (problems.length > 0) {
      const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : "";
      throw new Error(
        `tracking plan of ${String(plan?.workspaceId)} v${String(plan?.version)} refused: ${problems.slice(0, 3).join("; ")}${more}`,
      );
    }
    return new CompiledPlan(plan, track, typed);
  }

  /** The verdict on one message (see PlanVerdict). Never throws: a failure inside is flagged, keyword "error". */
  check(message: PlanMessage): PlanVerdict {
    try {
      return this.verdict(message);
    } catch (e) {
      return { outcome: "flag", violations: [{ path: "", keyword: "error", message: `could not be checked: ${String(e)}`.slice(0, 300) }] };
    }
  }

  private verdict(message: PlanMessage): PlanVerdict {
    let rule: Rule | undefined;
    if (message.type === "track") {
      rule = typeof message.event === "string" ? this.track.get(message.event) : undefined;
      if (rule === undefined) return this.unplannedEvent();
    } else rule = this.typed.get(message.type);
    if (rule === undefined) return OK;
    const data = message[rule.field] ?? EMPTY;
    if (this.plan.violations === "omit" && isRecord(data)) {
      for (const key in data) if (!planned(rule, key)) return this.omit(rule, data, message);
    }
    if (rule.validate(data)) return OK;
    return { outcome: this.plan.violations === "block" ? "block" : "flag", violations: violationsOf(rule.validate, rule.prefix) };
  }

  private unplannedEvent(): PlanVerdict {
    const mode = this.plan.unplanned;
    return mode === "allow" ? OK : { outcome: mode, violations: [{ path: "/event", keyword: "unplanned", message: "is not in the plan" }] };
  }

  /** Omit mode, `data` having a key the rule does not plan: a copy without them, reported, and the rest checked. */
  private omit(rule: Rule, data: Record<string, unknown>, message: PlanMessage): PlanVerdict {
    const kept: Record<string, unknown> = {};
    const omitted: string[] = [];
    for (const key of Object.keys(data))
      if (!planned(rule, key)) omitted.push(`${rule.prefix}/${escapePointer(key)}`);
      else if (key === "__proto__")
        Object.defineProperty(kept, key, { value: data[key], enumerable: true, writable: true, configurable: true });
      else kept[key] = data[key];
    const max = PLAN_LIMITS.maxViolations;
    const violations: Violation[] = omitted.slice(0, max).map((path) => ({ path, keyword: "unplanned", message: "is not in the plan" }));
    if (!rule.validate(kept)) violations.push(...violationsOf(rule.validate, rule.prefix).slice(0, max - violations.length));
    return { outcome: "omit", violations, omitted, message: { ...message, [rule.field]: kept } };
  }
}
