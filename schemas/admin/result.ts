/**
 * The answer of an admin operation (deploy/commands/*: the CLI and the admin API call the same
 * functions): a value, or a refusal naming why, which the CLI prints and exits 1 or 2 on and the
 * API answers with the status given. Only infrastructure failures throw. Pure.
 */
import type { IValidation } from "typia";

/** One bad input field: its path (`subjectIds[3]`, `headers.X-Foo`) and what was expected there. */
export interface FieldIssue {
  field: string;
  expected: string;
}

/** Why an operation refused: 400 bad input (naming the field), 404 no such thing (or not the caller's workspace's), 409 a conflict. */
export interface Refusal {
  ok: false;
  status: 400 | 404 | 409;
  /** A sentence for a person. */
  error: string;
  /** The input field at fault, when one is (`url`, `subjectIds[3]`). */
  field?: string;
  /** Every bad field, when the input had several (a typia check). */
  issues?: FieldIssue[];
}

/** An operation's outcome. */
export type OpResult<T> = { ok: true; value: T } | Refusal;

/** A refusal. */
export function refuse(status: Refusal["status"], error: string, field?: string): Refusal {
  return field === undefined ? { ok: false, status, error } : { ok: false, status, error, field };
}

/** A success. */
export function done<T>(value: T): OpResult<T> {
  return { ok: true, value };
}

/** typia's errors as fields (`$input.a[0].b` -> `a[0].b`; the whole input -> `body`). */
export function issuesOf(errors: readonly IValidation.IError[]): FieldIssue[] {
  return errors.map((e) => ({ field: e.path.replace(/^\$input\.?/, "") || "body", expected: e.expected }));
}

/** A 400 naming every bad field of a typia check (the first in `error` and `field`). */
export function invalid(what: string, errors: readonly IValidation.IError[]): Refusal {
  const issues = issuesOf(errors);
  const [first] = issues;
  return {
    ok: false,
    status: 400,
    error: `invalid ${what}: ${first?.field ?? "body"} should be ${first?.expected ?? "valid"}`,
    field: first?.field ?? "body",
    issues,
  };
}
