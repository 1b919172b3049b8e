/**
 * How `users delete` finds a user's refused items (`rejected_messages.raw`, the item's JSON text),
 * for schemas/privacy/list.ts deletionTargets. Pure; plain string functions, the same on
 * ClickHouse 18.16 and current ClickHouse (18.16 has no JSON parser but visitParam*, which finds a
 * key at any depth).
 *
 * The ingest writes an item's string userId, anonymousId and previousId first, in that order
 * (ingest/rejected.ts idsFirstText), and JSON.stringify writes no key twice, so a text that begins
 * `{"userId":"` names its top-level userId there, whatever release stored it: such an item is
 * identified and goes by that userId only (a nested `"userId":"alice"` in bob's item is not
 * alice's). Every other item has no top-level string userId (or an empty one) if the ingest stored
 * it since ids-first; one stored by an earlier release may still have one, after other keys. Both
 * are matched by the ids anywhere in their text, so none of the user's own items is missed. What
 * that leaves (docs/API.md): such an item is also deleted when it names the user's userId as
 * `"userId"` (not for `{"userId":"",...}`), or a linked id as `"anonymousId"` or `"previousId"`,
 * only in nested data; and an item of an earlier release whose own userId, another user's, comes
 * after an anonymousId or previousId the deletion names.
 */
import { quoteString } from "../clickhouse/sql";

/** The text of a refused item that begins with a string userId (a non-empty one: identified). */
const USER_ID_FIRST = `startsWith(raw, ${quoteString('{"userId":"')})`;

/** Items without a non-empty top-level string userId, as far as the text tells (see the module). */
const NOT_IDENTIFIED = `(NOT ${USER_ID_FIRST} OR startsWith(raw, ${quoteString('{"userId":"",')}))`;

/** `"<key>":<id as JSON>` anywhere in the text (the id's closing quote included: a longer id does not match). */
function named(key: string, id: string): string {
  return `position(raw, ${quoteString(`"${key}":${JSON.stringify(id)}`)}) > 0`;
}

/**
 * The user's own items: the text begins with `userId` (then more keys, or the end), or, for a
 * text that does not begin with a string userId (a release before ids-first), names it anywhere.
 */
export function ownRefused(userId: string): string {
  const first = `{"userId":${JSON.stringify(userId)}`;
  return `(startsWith(raw, ${quoteString(`${first},`)}) OR raw = ${quoteString(`${first}}`)} OR (NOT ${USER_ID_FIRST} AND ${named("userId", userId)}))`;
}

/** The matches one id adds to anonymousRefused, for the statement's byte budget. */
export function anonymousMatches(id: string): string[] {
  return [named("anonymousId", id), named("previousId", id)];
}

/**
 * Items without a non-empty top-level string userId (NOT_IDENTIFIED) that name one of `ids` as
 * anonymousId or previousId, anywhere in their text (an earlier release's item may have them
 * after other keys). `ids` must not be empty.
 */
export function anonymousRefused(ids: readonly string[]): string {
  return `(${NOT_IDENTIFIED} AND (${ids.flatMap(anonymousMatches).join(" OR ")}))`;
}
