/**
 * What Segment-compatible clients send that the contract types would refuse, made valid before
 * validation. Pure; returns the input itself when nothing changes, a shallow copy otherwise.
 * Rules, with their sources:
 * - ids sent as JSON numbers become strings: analytics-python stringifies userId/anonymousId/
 *   messageId but sends groupId/previousId as numbers, analytics-ruby sends numeric ids as they
 *   are (its commit "Dont coerce ids to strings", issue segmentio/analytics-ruby#48);
 *   RudderStack's gateway and PostHog's capture stringify ids too;
 * - a userId or anonymousId that is "" or only spaces is absent: Segment refuses an event whose
 *   only id is "" (segmentio/analytics-ruby#243), analytics-java and -ruby treat it as blank,
 *   RudderStack's gateway as missing; the other id then decides.
 * Not coerced (the spec requires it): a missing messageId is refused, not generated. Nor a
 * number past 2^53 (Number.MAX_SAFE_INTEGER): parsed, it has already lost digits, so it is
 * refused; such an id must be sent as a string.
 * Sources: https://github.com/segmentio/analytics-ruby/issues/48,
 * https://github.com/segmentio/analytics-ruby/issues/243,
 * https://github.com/segmentio/analytics-python/blob/master/segment/analytics/client.py (stringify_id)
 */

import { isBlankId, numberAsId } from "../../schemas/messages";

/** The id fields that may arrive as numbers. */
const ID_FIELDS = ["messageId", "userId", "anonymousId", "groupId", "previousId"] as const;

/** One message (a single route's body or a batch item) with Segment's coercions applied. */
export function coerceMessage(input: unknown): unknown {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return input;
  const message = input as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const field of ID_FIELDS) {
    if (!Object.hasOwn(message, field)) continue;
    const value = message[field];
    // Past 2^53 JSON.parse has already rounded the number: two ids would become one (and two
    // messages one row). Left a number, the guard refuses it naming the field.
    const id = typeof value === "number" ? numberAsId(value) : undefined;
    if (id !== undefined) {
      (copy ??= { ...message })[field] = id;
    } else if (typeof value === "string" && isBlankId(field, value)) {
      delete (copy ??= { ...message })[field];
    }
  }
  return copy ?? input;
}
