/**
 * The rules of a tracking plan (schemas/plans.ts): each schema compiled by Ajv (schemas/plan-check.ts)
 * into a check of one message field, all at once for `plans apply` (compileRules: every problem
 * named) or each the first time a message needs it in the ingest (lazyRules). Pure.
 */
import type { ValidateFunction } from "ajv/dist/2020";
import { compileSchema, escapePointer, newAjv, PLAN_LIMITS, re2 } from "./plan-check";
import type { TrackingPlan } from "./plans";

/** Whether `v` is a JSON object (not null, not an array). */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/** The optional rules, with the field each checks. */
export const TYPED = [
  ["identify", "traits"],
  ["group", "traits"],
  ["page", "properties"],
  ["screen", "properties"],
] as const;

/** A compiled rule: its check, the message field it checks, and (for omit) what the schema plans at top level. */
export interface Rule {
  validate: ValidateFunction;
  field: "properties" | "traits";
  prefix: "/properties" | "/traits";
  declared: ReadonlySet<string>;
  patterns: readonly { test(s: string): boolean }[];
}

/** The rule of a compiled schema checking `field`. */
export function ruleOf(validate: ValidateFunction, schema: Record<string, unknown>, field: Rule["field"]): Rule {
  const properties = isRecord(schema.properties) ? Object.keys(schema.properties) : [];
  const patterns = isRecord(schema.patternProperties) ? Object.keys(schema.patternProperties).map(re2) : [];
  return { validate, field, prefix: field === "properties" ? "/properties" : "/traits", declared: new Set(properties), patterns };
}

/** Rules by name, each compiled the first time it is asked for (a failure throws, each time, without compiling again). */
export class LazyRules {
  private readonly done = new Map<string, Rule | Error>();
  constructor(
    private readonly schemas: ReadonlyMap<string, { schema: Record<string, unknown>; at: string; field: Rule["field"] }>,
    private readonly ajv = newAjv(),
  ) {}

  /** The rule of `name`, compiled now if it was not yet; undefined when the plan has none. Throws what compiling it found wrong. */
  get(name: string): Rule | undefined {
    let rule = this.done.get(name);
    if (rule === undefined) {
      const s = this.schemas.get(name);
      if (s === undefined) return undefined;
      const { problems, validate } = compileSchema(this.ajv, s.schema, s.at);
      rule = validate ? ruleOf(validate, s.schema, s.field) : new Error(`${s.at}: ${problems.join("; ")}`);
      this.done.set(name, rule);
    }
    if (rule instanceof Error) throw rule;
    return rule;
  }
}

/** The rules of a well-shaped plan, compiled lazily (see CompiledPlan.compile). */
export function lazyRules(plan: TrackingPlan): { track: LazyRules; typed: LazyRules } {
  const ajv = newAjv();
  const track = new Map(
    Object.entries(plan.track).map(([name, schema]) => [
      name,
      { schema: schema as Record<string, unknown>, at: `/track/${escapePointer(name)}`, field: "properties" as const },
    ]),
  );
  const typed = new Map(
    TYPED.filter(([type]) => isRecord(plan[type])).map(([type, field]) => [
      type as string,
      { schema: plan[type] as Record<string, unknown>, at: `/${type}`, field },
    ]),
  );
  return { track: new LazyRules(track, ajv), typed: new LazyRules(typed, ajv) };
}

/** Every rule of `plan` compiled, or the problems: limits first, then each schema's (the schemas of a badly shaped plan skipped). */
export function compileRules(plan: Record<string, unknown>): { problems: string[]; track: Map<string, Rule>; typed: Map<string, Rule> } {
  const result = { problems: [] as string[], track: new Map<string, Rule>(), typed: new Map<string, Rule>() };
  const track = isRecord(plan.track) ? plan.track : {};
  const bytes = Buffer.byteLength(JSON.stringify(plan));
  const names = Object.keys(track);
  if (bytes > PLAN_LIMITS.maxPlanBytes) result.problems.push(`the plan is ${bytes} bytes of JSON, more than ${PLAN_LIMITS.maxPlanBytes}`);
  if (names.length > PLAN_LIMITS.maxEvents) result.problems.push(`/track: ${names.length} events, more than ${PLAN_LIMITS.maxEvents}`);
  if (result.problems.length > 0) return result;
  const ajv = newAjv();
  const add = (schema: unknown, at: string, field: Rule["field"]): Rule | undefined => {
    if (!isRecord(schema)) return undefined;
    const { problems, validate } = compileSchema(ajv, schema, at);
    result.problems.push(...problems);
    return validate && ruleOf(validate, schema, field);
  };
  for (const name of names) {
    const rule = add(track[name], `/track/${escapePointer(name)}`, "properties");
    if (rule) result.track.set(name, rule);
  }
  for (const [type, field] of TYPED) {
    const rule = add(plan[type], `/${type}`, field);
    if (rule) result.typed.set(type, rule);
  }
  return result;
}
