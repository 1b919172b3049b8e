/**
 * The message model of the Segment-compatible HTTP API (spec §2; Segment HTTP Tracking API).
 * Each message type is one object discriminated by `type`, so a validation error names the bad
 * field rather than a whole union. The cross-field rule "userId or anonymousId" is the separate
 * `Identified` type. Unknown extra fields are allowed and kept (SDKs send `_metadata`,
 * `integrations`, `version`, ...), as Segment does.
 * Segment HTTP Tracking API: https://segment.com/docs/connections/sources/catalog/libraries/server/http-api/
 * Segment spec of the common fields: https://segment.com/docs/connections/spec/common/
 */
import { tags } from "typia";

/** A free-form JSON object: traits, properties, context. */
export type JsonObject = Record<string, unknown>;

/**
 * A time every supported ClickHouse stores as sent: from 1970-01-01T00:00:00Z up to, not
 * including, 2106-01-01T00:00:00Z (STORABLE_TIME_END_MS). 18.16's DateTime is UInt32 seconds,
 * but its date tables end with 2105: it stores 2106-01-15 as 1970-01-01 and gives it the day
 * 0000-00-00 (measured). Current ClickHouse stores more (DateTime64 1900-2299, Date 1970-2149):
 * the common range is the rule, so a message lands the same on either. A message with a time
 * outside is refused and kept in rejected_messages (docs/API.md, Client times).
 */
export type StorableTime = tags.TagBase<{
  kind: "storable";
  target: "string";
  value: undefined;
  validate: `0 <= Date.parse($input) && Date.parse($input) < 4291747200000`;
}>;

/** End of the storable range, ms since the epoch (2106-01-01T00:00:00Z, excluded); StorableTime's bound. */
export const STORABLE_TIME_END_MS = 4_291_747_200_000;

/**
 * A time whose date exists in the calendar: its day (in the text's own offset) is at most the
 * days of its month. RFC 3339 (§5.7) calls 2026-02-29 or 2025-11-31 invalid, but the date-time
 * format check accepts days 29-31 in every month, and Date.parse rolls them over (2026-03-01,
 * 2025-12-01: another day, another month's partition); they are refused as a leap second
 * (`:60`) is, and the item kept in rejected_messages (docs/API.md, Client times). Days up to
 * 28 exist in every month and are not looked up (the check runs for every time of every message).
 */
export type CalendarDate = tags.TagBase<{
  kind: "calendarDate";
  target: "string";
  value: undefined;
  validate: `+$input.slice(8, 10) <= 28 || new Date(Date.UTC(+$input.slice(0, 4), +$input.slice(5, 7) - 1, +$input.slice(8, 10))).getUTCDate() === +$input.slice(8, 10)`;
}>;

/** RFC 3339 date-time with offset, e.g. `2026-01-02T03:04:05.678Z`, a day the calendar has, within the storable range. */
export type IsoDateTime = string & tags.Format<"date-time"> & CalendarDate & StorableTime;

/** Non-empty identifier (messageId, userId, ...). 200 chars max keeps keys index-friendly. */
export type Id = string & tags.MinLength<1> & tags.MaxLength<200>;

/**
 * The id a JSON number sent as an id stands for (ingest/records/coerce.ts: analytics-ruby and -python
 * send numeric ids), or undefined past 2^53 (Number.MAX_SAFE_INTEGER), where JSON.parse has
 * already lost digits (two ids would become one), and for NaN or infinities.
 */
export function numberAsId(value: number): string | undefined {
  return Number.isFinite(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER ? String(value) : undefined;
}

/** The ids an empty string stands for "absent" in. */
const OPTIONAL_IDS = new Set<string>(["userId", "anonymousId"]);

/**
 * Whether `value` of the id field `field` is absent as the ingest reads it (ingest/records/coerce.ts): ""
 * or only spaces in userId or anonymousId, so the other id decides.
 */
export function isBlankId(field: string, value: string): boolean {
  return OPTIONAL_IDS.has(field) && value.trim() === "";
}

/** Fields common to every message type. */
export interface MessageCommon {
  /** Idempotency key (spec §2.1): retries with the same messageId yield one stored row. */
  messageId: Id;
  /** The user in the caller's system. See `Identified` for the either-or rule. */
  userId?: Id | null;
  /** A device or browser id for a user not yet known. */
  anonymousId?: Id | null;
  /** When the event happened on the client; defaults to receivedAt when omitted (spec §2.1). */
  timestamp?: IsoDateTime | null;
  /** When the client sent it; with `timestamp`, corrects client clock skew (Segment). */
  sentAt?: IsoDateTime | null;
  /** RudderStack SDKs send the client's event time here (with sentAt) instead of `timestamp`. */
  originalTimestamp?: IsoDateTime | null;
  /** Metadata about the client and the circumstances (ip, userAgent, library, ...). */
  context?: JsonObject | null;
}

/** Segment: every message needs a userId or an anonymousId (or both). */
export type Identified = WithUserId | WithAnonymousId;
/** A message naming a known user. */
export interface WithUserId {
  userId: Id;
}
/** A message naming an anonymous visitor. */
export interface WithAnonymousId {
  anonymousId: Id;
}

/** identify fields: who the user is and their traits. */
export interface IdentifyFields extends MessageCommon {
  traits?: JsonObject | null;
}

/** track fields. Segment: `event` is required. */
export interface TrackFields extends MessageCommon {
  event: string & tags.MinLength<1> & tags.MaxLength<1000>;
  properties?: JsonObject | null;
}

/** page fields (a web page view); name optional. */
export interface PageFields extends MessageCommon {
  name?: string | null;
  category?: string | null;
  properties?: JsonObject | null;
}

/** screen fields (a mobile screen view); name optional. */
export interface ScreenFields extends MessageCommon {
  name?: string | null;
  category?: string | null;
  properties?: JsonObject | null;
}

/** group fields. Segment: `groupId` is required. */
export interface GroupFields extends MessageCommon {
  groupId: Id;
  traits?: JsonObject | null;
}

/** alias fields. Segment: `previousId` and `userId` are both required. */
export interface AliasFields extends MessageCommon {
  previousId: Id;
  userId: Id;
}

/** An identify message as a batch item. */
export interface IdentifyMessage extends IdentifyFields {
  type: "identify";
}
/** A track message as a batch item. */
export interface TrackMessage extends TrackFields {
  type: "track";
}
/** A page message as a batch item. */
export interface PageMessage extends PageFields {
  type: "page";
}
/** A screen message as a batch item. */
export interface ScreenMessage extends ScreenFields {
  type: "screen";
}
/** A group message as a batch item. */
export interface GroupMessage extends GroupFields {
  type: "group";
}
/** An alias message as a batch item. */
export interface AliasMessage extends AliasFields {
  type: "alias";
}

/** One item of a batch body: any message, discriminated by `type`. */
export type Message = IdentifyMessage | TrackMessage | PageMessage | ScreenMessage | GroupMessage | AliasMessage;

/** The message types. */
export type MessageType = Message["type"];

/** Every message type, in the spec's order (Segment's six calls). */
export const MESSAGE_TYPES: readonly MessageType[] = ["identify", "track", "page", "screen", "group", "alias"];

/** Segment: the writeKey may come in the body instead of the Authorization header. */
export interface BodyWriteKey {
  writeKey?: string;
}

/** Body of POST .../identify (spec §2.1): `type` may be omitted. */
export interface IdentifyBody extends IdentifyFields, BodyWriteKey {
  type?: "identify";
}
/** Body of POST .../track. */
export interface TrackBody extends TrackFields, BodyWriteKey {
  type?: "track";
}
/** Body of POST .../page. */
export interface PageBody extends PageFields, BodyWriteKey {
  type?: "page";
}
/** Body of POST .../screen. */
export interface ScreenBody extends ScreenFields, BodyWriteKey {
  type?: "screen";
}
/** Body of POST .../group. */
export interface GroupBody extends GroupFields, BodyWriteKey {
  type?: "group";
}
/** Body of POST .../alias. */
export interface AliasBody extends AliasFields, BodyWriteKey {
  type?: "alias";
}

/** Body of POST .../batch (spec §2.3). */
export interface BatchBody extends BodyWriteKey {
  /** The messages; at least one (the most per request is a runtime limit). */
  batch: Message[] & tags.MinItems<1>;
  /** Merged under each item's own context; the item's keys win (Dittofeed). */
  context?: JsonObject | null;
  /** When the client sent the request (Segment); an item's own sentAt wins. */
  sentAt?: IsoDateTime | null;
}

/**
 * A batch body before its items are checked one by one: the frame must be right for anything to
 * be accepted; each item is then accepted or rejected on its own (Segment drops invalid items
 * of a batch and stores the rest).
 */
export interface BatchFrame extends BodyWriteKey {
  /** The items, unchecked; at least one. */
  batch: unknown[] & tags.MinItems<1>;
  context?: JsonObject | null;
  sentAt?: IsoDateTime | null;
}
