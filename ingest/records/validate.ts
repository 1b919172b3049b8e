/**
 * Request bodies -> typed messages or a list of issues, each naming one bad field. Pure; the
 * checks themselves are the typia guards of schemas/guards.ts, after Segment's coercions
 * (ingest/records/coerce.ts). A batch is checked item by item: a bad item is rejected on its own.
 */
import type { IValidation } from "typia";
import { isIdentified, validateBatchFrame, validateMessage, validateSingleBody } from "../../schemas/guards";
import { MESSAGE_TYPES, type BatchBody, type BatchFrame, type BodyWriteKey, type Message, type MessageType } from "../../schemas/messages";
import { coerceMessage } from "./coerce";
import { MAX_REASONS } from "./rejected";

/** One bad field: its path in the body (`batch[2].event`) and what was expected there. */
export interface ValidationIssue {
  path: string;
  expected: string;
}

/** A validated body, or every issue found in it. */
export type Validation<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

/**
 * Most issues kept for one refused item (the last one counting those left out): its record keeps
 * no more reasons (MAX_REASONS, ingest/records/rejected.ts), so more are not collected.
 */
export const MAX_ITEM_ISSUES = MAX_REASONS;

/** A batch item refused on its own: its position, the item as sent, and each bad field (at most MAX_ITEM_ISSUES). */
export interface RejectedItem {
  index: number;
  item: unknown;
  issues: ValidationIssue[];
}

/** A batch sorted into the items accepted (coerced, typed) and the items rejected. */
export interface SortedBatch {
  frame: BatchFrame;
  accepted: (Message & BodyWriteKey)[];
  rejected: RejectedItem[];
}

/**
 * Checks a batch body item by item. The frame (an object with a non-empty `batch` array, a
 * valid `sentAt` and `context`) must be right, or the whole body is refused; then each item is
 * coerced and checked alone (Segment: invalid items are dropped, the rest stored).
 */
export function sortBatch(body: unknown): Validation<SortedBatch> {
  const frame = validateBatchFrame(body);
  if (!frame.success) return { ok: false, issues: toIssues(frame) };
  // typia does not apply MinItems to an unknown[] (12.x), so the frame's rule is checked here.
  if (frame.data.batch.length === 0) return { ok: false, issues: [{ path: "batch", expected: "Array<Message> & MinItems<1>" }] };
  const accepted: (Message & BodyWriteKey)[] = [];
  const rejected: RejectedItem[] = [];
  frame.data.batch.forEach((item, index) => {
    const at = `batch[${index}]`;
    const unknownType = typeIssue(item, at);
    if (unknownType !== undefined) {
      rejected.push({ index, item, issues: [unknownType] });
      return;
    }
    const result = validateMessage(coerceMessage(item));
    const issues = result.success ? identityIssues(result.data, at) : toIssues(result, at);
    if (issues.length === 0 && result.success) accepted.push(result.data);
    else rejected.push({ index, item, issues });
  });
  return { ok: true, value: { frame: frame.data, accepted, rejected } };
}

/** Checks a batch body as a whole: valid only when every item is (the issues of all of them). */
export function validateBatch(body: unknown): Validation<BatchBody> {
  const sorted = sortBatch(body);
  if (!sorted.ok) return sorted;
  const { frame, accepted, rejected } = sorted.value;
  if (rejected.length > 0) return { ok: false, issues: rejected.flatMap((r) => r.issues) };
  return { ok: true, value: { ...frame, batch: accepted } as BatchBody };
}

/** Checks the body of a single-message route; its `type` is the route's when omitted. */
export function validateSingle(type: MessageType, body: unknown): Validation<Message & BodyWriteKey> {
  const result = validateSingleBody[type](coerceMessage(body));
  if (!result.success) return { ok: false, issues: toIssues(result) };
  const issues = identityIssues(result.data, "");
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: { ...result.data, type } as Message & BodyWriteKey };
}

/** The issues of refused items, in order, without copying them into one array. */
export function* issuesOf(rejected: readonly RejectedItem[]): Generator<ValidationIssue> {
  for (const item of rejected) yield* item.issues;
}

/** The `type` values a batch item may have, as an issue's `expected`. */
const TYPE_EXPECTED = MESSAGE_TYPES.map((type) => JSON.stringify(type)).join(" | ");

/**
 * The issue of a batch item (an object) whose `type` is missing or none of the six: typia's
 * union check would only say the item matches no message type, without naming the field.
 */
function typeIssue(item: unknown, at: string): ValidationIssue | undefined {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return undefined;
  const type = (item as { type?: unknown }).type;
  return typeof type === "string" && (MESSAGE_TYPES as readonly string[]).includes(type)
    ? undefined
    : { path: `${at}.type`, expected: `${TYPE_EXPECTED} (required)` };
}

/** Segment's rule: a message must name a userId or an anonymousId. */
function identityIssues(message: unknown, at: string): ValidationIssue[] {
  return isIdentified(message)
    ? []
    : [{ path: at === "" ? "userId" : `${at}.userId`, expected: "userId or anonymousId (one is required)" }];
}

/**
 * typia's errors as issues, under the item's path `at` (none: the body's own); past
 * MAX_ITEM_ISSUES, the first MAX_ITEM_ISSUES - 1 and one counting the rest.
 */
function toIssues(result: IValidation.IFailure, at?: string): ValidationIssue[] {
  const { errors } = result;
  const kept = errors.length > MAX_ITEM_ISSUES ? MAX_ITEM_ISSUES - 1 : errors.length;
  const issues: ValidationIssue[] = [];
  for (let i = 0; i < kept; i++) {
    const path = bodyPath(errors[i]!.path);
    issues.push({ path: at === undefined ? path : underPath(at, path), expected: errors[i]!.expected });
  }
  if (kept < errors.length) issues.push({ path: at ?? "$", expected: `and ${errors.length - kept} more issue(s)` });
  return issues;
}

/** An item's issue path under the item's own path: `$` -> `batch[2]`, `event` -> `batch[2].event`. */
function underPath(at: string, path: string): string {
  if (path === "$") return at;
  return path.startsWith("[") ? `${at}${path}` : `${at}.${path}`;
}

/** typia's `$input.batch[0].event` -> `batch[0].event`; the body itself is `$`. */
function bodyPath(path: string): string {
  if (path === "$input") return "$";
  return path.startsWith("$input.") ? path.slice("$input.".length) : path.replace(/^\$input/, "$");
}

/**
 * What one pass over a JSON text finds: too deep, or the counts parsing it depends on and whether
 * a number in it may be past ±Number.MAX_VALUE (`mayOverflow`).
 */
export type JsonShape = { tooDeep: true } | { tooDeep: false; chars: number; containers: number; separators: number; mayOverflow: boolean };

/**
 * Characters of a run outside strings without a bracket, comma or colon from which a number may
 * be past ±1.8e308 with an exponent under 100: it needs 309 - 99 = 210 digits before its point.
 */
const OVERFLOW_RUN_CHARS = 200;

/**
 * One pass over JSON text, looking only outside strings: whether arrays and objects nest deeper
 * than `maxDepth` (it stops there), else how many `{`/`[` and `,`/`:` it holds (the counts
 * ingest/http/parsed-size.ts estimates the parsed size from), and `mayOverflow`: whether a number may
 * be one JSON.parse reads as Infinity (JSON.stringify would write it as null, the value stored
 * altered). That takes an exponent of three digits or more (an `e`/`E` outside strings followed
 * by an optional `+` and three digits; `true` and `false` have no digits after theirs) or a run
 * of OVERFLOW_RUN_CHARS outside strings between two of `{}[],:`. A hex messageId's `9e301`
 * inside a string does not count. Pure; the text need not be valid JSON.
 */
export function jsonShape(text: string, maxDepth: number): JsonShape {
  let depth = 0;
  let containers = 0;
  let separators = 0;
  let mayOverflow = false;
  // Where the current run outside strings and structural characters began.
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = stringEnd(text, i);
      run = i + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      containers++;
      if (++depth > maxDepth) return { tooDeep: true };
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c || c === 0x3a) separators++;
    else {
      if ((c | 0x20) === 0x65 && !mayOverflow) mayOverflow = exponentDigits(text, i + 1) >= 3;
      continue;
    }
    if (i - run >= OVERFLOW_RUN_CHARS) mayOverflow = true;
    run = i + 1;
  }
  if (text.length - run >= OVERFLOW_RUN_CHARS) mayOverflow = true;
  return { tooDeep: false, chars: text.length, containers, separators, mayOverflow };
}

/** Digits of a positive exponent starting at `at` (after its `e`, an optional `+` first), counted up to 3; a negative one is 0. */
function exponentDigits(text: string, at: number): number {
  let i = text.charCodeAt(at) === 0x2b ? at + 1 : at;
  const end = i + 3;
  while (i < end && text.charCodeAt(i) >= 0x30 && text.charCodeAt(i) <= 0x39) i++;
  return i - (end - 3);
}

/** Whether arrays and objects in JSON text nest deeper than `max` (brackets in strings do not count). */
export function jsonDepthOver(text: string, max: number): boolean {
  return jsonShape(text, max).tooDeep;
}

/** Index of the quote closing the string opened at `open` (one not escaped by a backslash), or the text's length. */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return text.length;
    let before = at - 1;
    while (text.charCodeAt(before) === 0x5c) before--;
    if ((at - 1 - before) % 2 === 0) return at;
  }
}
