/**
 * How `users delete` finds a user's refused items (`rejected_messages.raw`, the item's JSON text),
 * for schemas/privacy/deletion.ts deletionTargets. Pure; plain string functions, the same on
 * ClickHouse 18.16 and current ClickHouse (18.16 has no JSON parser but visitParam*, which finds a
 * key at any depth).
 *
 * The ingest writes an item's userId, anonymousId and previousId first, in that order, when they
 * hold ids as it reads them (ingest/records/rejected.ts idsFirstText: a string, not blank for userId and
 * anonymousId, or a number as analytics-ruby sends it), and JSON.stringify writes no key twice,
 * so a text that begins `{"userId":"` or `{"userId":<digit or ->` names its top-level userId
 * there, whatever release stored it: such an item is identified and goes by that userId only (a
 * nested `"userId":"alice"` in bob's item is not alice's; a userId 42 is user "42"'s). Every other
 * item has no top-level userId (or a blank one) if the ingest stored it since ids-first; one
 * stored by an earlier release may still have one, after other keys. Both are matched by the ids
 * anywhere in their text, quoted or, for ids that are numbers' text, as those numbers, so none of
 * the user's own items is missed, but for an earlier release's item that begins with a blank
 * userId other than "" (it reads as identified by it). What that leaves (docs/PRIVACY.md): such an
 * item is also deleted when it names the user's userId as `"userId"` (not for
 * an earlier release's `{"userId":"",...}`), or a linked id as `"anonymousId"` or `"previousId"`, only in nested data;
 * and an item of an earlier release whose own userId, another user's, comes after an anonymousId
 * or previousId the deletion names.
 */
import { quoteString } from "../clickhouse/sql";
import { numberAsId } from "../messages";

/**
 * The text of a refused item that begins with a userId: a string (a non-empty one: identified) or
 * a number (analytics-ruby sends numeric ids; the ingest reads them as their text).
 */
const USER_ID_FIRST = `(${['"', "-", ..."0123456789"].map((c) => `startsWith(raw, ${quoteString(`{"userId":${c}`)})`).join(" OR ")})`;

/**
 * The JSON texts an id may stand as in a refused item, each with what must follow it: quoted, and
 * for an id the ingest could have made from a number (ingest/records/coerce.ts), that number as sent,
 * followed by `,` or `}` (so 42 does not match 420).
 */
function idTexts(id: string): string[] {
  const numeric = numberAsId(Number(id)) === id;
  return [JSON.stringify(id), ...(numeric ? [`${id},`, `${id}}`] : [])];
}

/** Items without a non-empty top-level string userId, as far as the text tells (see the module). */
const NOT_IDENTIFIED = `(NOT ${USER_ID_FIRST} OR startsWith(raw, ${quoteString('{"userId":"",')}))`;

/** `"<key>":<id>` anywhere in the text, in each of idTexts's forms (what ends the id included: a longer id does not match). */
function named(key: string, id: string): string[] {
  return idTexts(id).map((text) => `position(raw, ${quoteString(`"${key}":${text}`)}) > 0`);
}

/**
 * The user's own items: the text begins with `userId` (then more keys, or the end), or, for a
 * text that does not begin with a userId (a release before ids-first), names it anywhere.
 */
export function ownRefused(userId: string): string {
  const first = JSON.stringify(userId);
  const starts = [`startsWith(raw, ${quoteString(`{"userId":${first},`)})`, `raw = ${quoteString(`{"userId":${first}}`)}`];
  for (const text of idTexts(userId).slice(1)) starts.push(`startsWith(raw, ${quoteString(`{"userId":${text}`)})`);
  return `(${starts.join(" OR ")} OR (NOT ${USER_ID_FIRST} AND (${named("userId", userId).join(" OR ")})))`;
}

/** The matches one id adds to anonymousRefused, for the statement's byte budget. */
export function anonymousMatches(id: string): string[] {
  return [...named("anonymousId", id), ...named("previousId", id)];
}

/**
 * Items without a non-empty top-level string userId (NOT_IDENTIFIED) that name one of `ids` as
 * anonymousId or previousId, anywhere in their text (an earlier release's item may have them
 * after other keys). `ids` must not be empty.
 */
export function anonymousRefused(ids: readonly string[]): string {
  return `(${NOT_IDENTIFIED} AND (${ids.flatMap(anonymousMatches).join(" OR ")}))`;
}
