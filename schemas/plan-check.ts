/**
 * The schema side of tracking plans (schemas/plans.ts): an operator's JSON Schema checked and
 * compiled with Ajv (draft 2020-12, strict, every error), its regular expressions run by RE2, and
 * Ajv's errors turned into violations a person reads. Pure. A schema that does not compile is a
 * list of problems, each naming its place as a JSON Pointer, never an exception.
 *
 * Rules, with their sources:
 * - strict mode (Ajv's default): an unknown keyword is a typo, refused; union types are allowed
 *   (`["string", "null"]`, as Segment Protocols plans write them); Ajv's check of properties
 *   against patterns (`allowMatchingProperties`) is off, because it runs the operator's pattern
 *   with the native engine, which a pattern like `^(a|a)*$` stalls;
 * - patterns run on RE2 (re2js, linear time): a pattern RE2 cannot run (lookaround,
 *   backreferences) is refused; `\uXXXX`, which JSON Schema patterns (ECMA-262) use, is read as
 *   RE2's `\x{XXXX}`;
 * - no `$ref` outside the schema (Ajv never fetches one, and a missing one is refused here, with
 *   its place), no `$id` (Ajv keeps schemas by id: two events with one id would collide), no
 *   `$async`, and `$schema` only 2020-12;
 * - formats: date-time and date (RFC 3339; Segment Protocols writes dates as date-time), email,
 *   uri and uuid, written here with checks that cannot backtrack (ajv-formats' can); any other
 *   format is refused.
 */
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import { RE2JS } from "re2js";
import type { Violation } from "./plans";

/**
 * Bounds of a tracking plan. maxPlanBytes: its JSON, bytes; maxEvents: names in `track`;
 * maxSchemaDepth: nesting of objects and arrays in one schema, its root being 1; maxPatternLength:
 * characters of a `pattern` or a `patternProperties` name; maxViolations: reported per message.
 */
export const PLAN_LIMITS: Readonly<{
  maxPlanBytes: number;
  maxEvents: number;
  maxSchemaDepth: number;
  maxPatternLength: number;
  maxViolations: number;
}> = Object.freeze({ maxPlanBytes: 256 * 1024, maxEvents: 1_000, maxSchemaDepth: 32, maxPatternLength: 1_000, maxViolations: 20 });

/** RFC 6901: one reference token, `~` and `/` escaped. */
export const escapePointer = (token: string): string => token.replace(/~/g, "~0").replace(/\//g, "~1");

/** `pattern` (ECMA-262, as JSON Schema writes it) in RE2's syntax: `\uXXXX` becomes `\x{XXXX}`; `\\` stays. */
const re2Source = (pattern: string): string =>
  pattern.replace(/\\(\\|u([0-9a-fA-F]{4}))/g, (all, _c, hex?: string) => (hex ? `\\x{${hex}}` : all));

/** A pattern compiled by RE2, shaped as Ajv's RegExpLike; its text keeps Ajv's de-duplication (by toString) apart. Throws if RE2 refuses it. */
export function re2(pattern: string): { test(s: string): boolean; toString(): string } {
  const compiled = RE2JS.compile(re2Source(pattern));
  return { test: (s: string) => compiled.test(s), toString: () => `re2:${pattern}` };
}
/** Ajv's `code.regExp`: called without `new`, with flags Ajv's way (`u`; RE2 reads Unicode anyway). */
const engine = Object.assign((pattern: string) => re2(pattern), { code: 'require("re2js").RE2JS.compile' });

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const dayExists = (y: number, m: number, d: number): boolean =>
  m >= 1 && m <= 12 && d >= 1 && d <= (m === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : DAYS[m - 1]!);
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;
const ofDate = (m: RegExpExecArray | null): boolean => m !== null && dayExists(+m[1]!, +m[2]!, +m[3]!);
const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;
const UUID = /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i;

/** The formats a plan may use, each a check of a string (Ajv applies formats to strings only). */
export const FORMATS: Readonly<Record<string, (s: string) => boolean>> = {
  "date-time": (s) => ofDate(DATE_TIME.exec(s)),
  date: (s) => ofDate(DATE.exec(s)),
  email: (s) => s.length <= 254 && EMAIL.test(s),
  uri: (s) => /^[A-Za-z][A-Za-z0-9+.-]*:/.test(s) && URL.canParse(s),
  uuid: (s) => UUID.test(s),
};

/**
 * An Ajv for one plan (Ajv keeps what it compiled: a plan's instance goes with it). It does not
 * check schemas against the meta-schema: compileSchema does it with one shared instance, which
 * compiles the meta-schema once (about 200 ms), not once per plan.
 */
export function newAjv(): Ajv2020 {
  return new Ajv2020({
    validateSchema: false,
    strict: true,
    allowUnionTypes: true,
    allowMatchingProperties: true,
    allErrors: true,
    verbose: true, // errors carry the data: "(got string)"
    logger: false,
    formats: FORMATS,
    code: { regExp: engine },
  });
}

const DRAFT = "https://json-schema.org/draft/2020-12/schema";
const REFUSED: Readonly<Record<string, string>> = {
  $id: '$id is not supported: name a part of the schema with $defs and $ref "#/$defs/..."',
  id: "id is not supported",
  $async: "$async is not supported",
};
/** The shared instance: the meta-schema's check, and the keywords Ajv knows. */
const META = newAjv();
const KNOWN = new Set(Object.keys(META.RULES.keywords));
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"]);
const SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf", "prefixItems", "items"]);
const SCHEMA_ONE = new Set(["not", "if", "then", "else", "contains", "items", "additionalProperties", "unevaluatedProperties"]);
["unevaluatedItems", "propertyNames", "contentSchema", "additionalItems"].forEach((k) => SCHEMA_ONE.add(k));

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The first place in `value` nested deeper than maxSchemaDepth, as a pointer, or undefined. */
function tooDeep(value: unknown, at: string, depth: number): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  if (depth > PLAN_LIMITS.maxSchemaDepth) return at;
  for (const [key, sub] of Object.entries(value)) {
    const found = tooDeep(sub, `${at}/${escapePointer(key)}`, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

function patternProblem(pattern: string, at: string, out: string[]): void {
  const max = PLAN_LIMITS.maxPatternLength;
  if (pattern.length > max) out.push(`${at}: the pattern has ${pattern.length} characters, more than ${max}`);
  else
    try {
      re2(pattern);
    } catch (e) {
      out.push(`${at}: RE2 cannot run this pattern (no lookahead, lookbehind or backreferences): ${(e as Error).message}`);
    }
}

/** The value at `pointer` (RFC 6901, as a URI fragment: percent-encoded) in `root`, or undefined. */
function resolve(root: unknown, fragment: string): unknown {
  let pointer: string;
  try {
    pointer = decodeURIComponent(fragment);
  } catch {
    return undefined;
  }
  if (pointer === "") return root;
  if (!pointer.startsWith("/")) return undefined;
  let node = root;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, token)) return undefined;
    node = (node as Record<string, unknown>)[token];
  }
  return node;
}

function refProblem(ref: string, at: string, root: unknown, out: string[]): void {
  if (!ref.startsWith("#"))
    out.push(`${at}: ${JSON.stringify(ref)} is outside the schema; only refs within it ("#/$defs/...") are allowed`);
  else if ((ref === "#" || ref.startsWith("#/")) && resolve(root, ref.slice(1)) === undefined)
    out.push(`${at}: ${JSON.stringify(ref)} is not in this schema`);
}

/** A keyword's own rule, beyond the meta-schema: refused keywords, `$schema`, refs, patterns, formats. */
function keywordProblem(key: string, value: unknown, here: string, root: unknown, out: string[]): void {
  if (REFUSED[key] !== undefined) out.push(`${here}: ${REFUSED[key]}`);
  else if (key === "$schema" && value !== DRAFT && value !== `${DRAFT}#`)
    out.push(`${here}: only draft 2020-12 (${JSON.stringify(DRAFT)}) is supported`);
  else if ((key === "$ref" || key === "$dynamicRef") && typeof value === "string") refProblem(value, here, root, out);
  else if (key === "pattern" && typeof value === "string") patternProblem(value, here, out);
  else if (key === "format" && typeof value === "string" && !Object.hasOwn(FORMATS, value))
    out.push(`${here}: format ${JSON.stringify(value)} is not supported (${Object.keys(FORMATS).join(", ")} are)`);
}

/** Problems of `node`, a schema at `at`, and of the schemas within it (what the meta-schema does not say). */
function walk(node: unknown, at: string, root: unknown, out: string[]): void {
  if (!isRecord(node)) return; // true/false are schemas; anything else is the meta-schema's to name
  for (const [key, value] of Object.entries(node)) {
    const here = `${at}/${escapePointer(key)}`;
    if (!KNOWN.has(key)) out.push(`${at}: unknown keyword ${JSON.stringify(key)}`);
    else keywordProblem(key, value, here, root, out);
    if (SCHEMA_MAPS.has(key) && isRecord(value))
      for (const [name, sub] of Object.entries(value)) {
        if (key === "patternProperties") patternProblem(name, `${here}/${escapePointer(name)}`, out);
        walk(sub, `${here}/${escapePointer(name)}`, root, out);
      }
    else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) value.forEach((sub, i) => walk(sub, `${here}/${i}`, root, out));
    else if (SCHEMA_ONE.has(key)) walk(value, here, root, out);
  }
}

/** Ajv's own compile error, its `at "#/..."` turned into a pointer under `at`. */
function compileProblem(error: unknown, at: string): string {
  const text = error instanceof Error ? error.message : String(error);
  const place = / at (?:path )?"#([^"]*)"/.exec(text);
  return place ? `${at}${resolvePlace(place[1]!)}: ${text.replace(place[0], "")}` : `${at}: ${text}`;
}
const resolvePlace = (fragment: string): string => {
  try {
    return decodeURIComponent(fragment);
  } catch {
    return fragment;
  }
};

/** The 2020-12 meta-schema's errors of `schema`, the first of each place. */
function metaProblems(schema: object, at: string, out: string[]): void {
  try {
    if (META.validateSchema(schema) === true) return;
    const places = new Set<string>();
    for (const e of META.errors ?? []) {
      if (places.has(e.instancePath)) continue;
      places.add(e.instancePath);
      out.push(`${at}${e.instancePath}: ${e.message ?? "is invalid"}`);
    }
  } catch (e) {
    if (out.length === 0) out.push(compileProblem(e, at)); // an unknown $schema, which walk has named
  }
}

/**
 * `schema`, found at `at` in the plan, compiled for checking; or its problems, each
 * "<pointer>: <what is wrong>": depth (alone: nothing deeper is looked at), then keywords (unknown,
 * refused, refs, patterns, formats) and the 2020-12 meta-schema (the first error of each place),
 * then, when they find none, Ajv's compilation.
 */
export function compileSchema(ajv: Ajv2020, schema: object, at: string): { problems: string[]; validate?: ValidateFunction } {
  const deep = tooDeep(schema, at, 1);
  if (deep !== undefined) return { problems: [`${deep}: nested deeper than ${PLAN_LIMITS.maxSchemaDepth} levels`] };
  const problems: string[] = [];
  walk(schema, at, schema, problems);
  metaProblems(schema, at, problems);
  if (problems.length > 0) return { problems };
  try {
    return { problems, validate: ajv.compile(schema) };
  } catch (e) {
    return { problems: [compileProblem(e, at)] };
  }
}

/** The JSON type of a value, as a message names it. */
const jsonType = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
const clip = (text: string): string => (text.length > 300 ? `${text.slice(0, 299)}…` : text);
/** The param naming the property an error is about, for the keywords that point at one. */
const CHILD: Readonly<Record<string, string>> = {
  required: "missingProperty",
  dependentRequired: "missingProperty",
  additionalProperties: "additionalProperty",
  unevaluatedProperties: "unevaluatedProperty",
  propertyNames: "propertyName",
};

function readable(e: ErrorObject, p: Record<string, unknown>): string {
  switch (e.keyword) {
    case "type":
      return `must be ${String(p.type).split(",").join(" or ")} (got ${jsonType(e.data)})`;
    case "required":
      return "is required";
    case "dependentRequired":
      return `is required when ${JSON.stringify(p.property)} is present`;
    case "additionalProperties":
    case "unevaluatedProperties":
      return "is not allowed by the plan";
    case "enum":
      return `must be one of ${(p.allowedValues as unknown[])
        .slice(0, 50)
        .map((v) => JSON.stringify(v))
        .join(", ")}`; // clipped anyway: not all of a long list
    case "const":
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case "propertyNames":
      return "has a name the plan does not allow";
    default:
      return e.propertyName === undefined ? (e.message ?? "is invalid") : `its name ${e.message ?? "is invalid"}`;
  }
}

/** An Ajv error as a violation: its path from the message root (`prefix`: "/properties" or "/traits"). */
export function toViolation(e: ErrorObject, prefix: string): Violation {
  const p = e.params as Record<string, unknown>;
  let path = prefix + e.instancePath;
  if (e.propertyName !== undefined) path += `/${escapePointer(e.propertyName)}`;
  const child = CHILD[e.keyword];
  if (child !== undefined && typeof p[child] === "string") path += `/${escapePointer(p[child])}`;
  return { path, keyword: e.keyword, message: clip(readable(e, p)) };
}
