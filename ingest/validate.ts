/**
 * Request bodies -> typed messages or a list of issues, each naming one bad field. Pure; the
 * checks themselves are the typia guards of schemas/guards.ts.
 */
import type { IValidation } from "typia";
import { validateBatchBody, validateIdentified, validateSingleBody } from "../schemas/guards";
import type { BatchBody, BodyWriteKey, Message, MessageType } from "../schemas/messages";

/** One bad field: its path in the body (`batch[2].event`) and what was expected there. */
export interface ValidationIssue {
  path: string;
  expected: string;
}

/** A validated body, or every issue found in it. */
export type Validation<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

/** Checks a batch body; every item must pass, or the whole body is refused. */
export function validateBatch(body: unknown): Validation<BatchBody> {
  const result = validateBatchBody(body);
  if (!result.success) return { ok: false, issues: toIssues(result) };
  const issues = result.data.batch.flatMap((item, i) => identityIssues(item, `batch[${i}]`));
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: result.data };
}

/** Checks the body of a single-message route; its `type` is the route's when omitted. */
export function validateSingle(type: MessageType, body: unknown): Validation<Message & BodyWriteKey> {
  const result = validateSingleBody[type](body);
  if (!result.success) return { ok: false, issues: toIssues(result) };
  const issues = identityIssues(result.data, "");
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: { ...result.data, type } as Message & BodyWriteKey };
}

/** Segment's rule: a message must name a userId or an anonymousId. */
function identityIssues(message: unknown, at: string): ValidationIssue[] {
  return validateIdentified(message).success
    ? []
    : [{ path: at === "" ? "userId" : `${at}.userId`, expected: "userId or anonymousId (one is required)" }];
}

function toIssues(result: IValidation.IFailure): ValidationIssue[] {
  return result.errors.map((e) => ({ path: bodyPath(e.path), expected: e.expected }));
}

/** typia's `$input.batch[0].event` -> `batch[0].event`; the body itself is `$`. */
function bodyPath(path: string): string {
  if (path === "$input") return "$";
  return path.startsWith("$input.") ? path.slice("$input.".length) : path.replace(/^\$input/, "$");
}

/**
 * The deepest nesting of arrays and objects in JSON text, counting only brackets outside
 * strings; stops counting once past `max`. Pure, one pass over the text.
 */
export function jsonDepthOver(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
