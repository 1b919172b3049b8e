/**
 * The `extra` column of an events row: every field the client sent that has no column of its own
 * in the message's type, and the batch body's own fields, as JSON text.
 */
import type { Message } from "./messages";

/** Fields with a column of their own in every type (or the envelope's), never copied to `extra`. */
const MAPPED_ALWAYS = new Set([
  "type",
  "messageId",
  "userId",
  "anonymousId",
  "timestamp",
  "sentAt",
  "originalTimestamp",
  "context",
  "properties",
  "traits",
  "writeKey",
]);

/**
 * Fields with a column only in some types: `event` is track's, `name` and `category` page's and
 * screen's, `groupId` group's, `previousId` alias's. Sent with another type (a track's `name`, an
 * identify's `event`), they are kept in `extra` like any field without a column.
 */
const MAPPED_BY_TYPE: Readonly<Record<string, ReadonlySet<string>>> = {
  identify: new Set(),
  track: new Set(["event"]),
  page: new Set(["name", "category"]),
  screen: new Set(["name", "category"]),
  group: new Set(["groupId"]),
  alias: new Set(["previousId"]),
};

/**
 * Every field without a column in the message's type (integrations, channel, _metadata, a track's
 * `name`, a client time that did not place the event, ...) as JSON text, '{}' when none. `batchFields` are the batch body's own fields other
 * than batch, context, sentAt and writeKey (its `integrations`, ...): each applies to the item
 * unless the item has it, and where both are objects they merge one level deep, the item's keys
 * winning (as context does, Dittofeed/Segment).
 */
export function extraText(message: Message, clientTimeInExtra: boolean, batchFields?: Readonly<Record<string, unknown>>): string {
  const byType = MAPPED_BY_TYPE[message.type];
  let extra: Record<string, unknown> | undefined;
  const fields = message as unknown as Record<string, unknown>;
  for (const key in message) {
    // RudderStack's originalTimestamp has its column only when the message has no timestamp.
    const mapped =
      key === "originalTimestamp"
        ? fields.timestamp == null && !clientTimeInExtra
        : key === "timestamp"
          ? !clientTimeInExtra
          : MAPPED_ALWAYS.has(key) || byType?.has(key) === true;
    if (mapped) continue;
    (extra ??= Object.create(null) as Record<string, unknown>)[key] = fields[key]; // no prototype: "__proto__" stays data
  }
  if (batchFields !== undefined)
    for (const key in batchFields) {
      const batchValue = batchFields[key];
      extra ??= Object.create(null) as Record<string, unknown>;
      if (!Object.hasOwn(extra, key)) extra[key] = batchValue;
      else if (isPlainObject(extra[key]) && isPlainObject(batchValue)) extra[key] = { ...batchValue, ...extra[key] };
    }
  return extra === undefined ? "{}" : JSON.stringify(extra);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
