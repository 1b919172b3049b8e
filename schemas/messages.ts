/**
 * The message model of the Segment-compatible HTTP API (spec §2; Segment HTTP Tracking API).
 * Each message type is one object discriminated by `type`, so a validation error names the bad
 * field rather than a whole union. The cross-field rule "userId or anonymousId" is the separate
 * `Identified` type. Unknown extra fields are allowed and kept (SDKs send `_metadata`,
 * `integrations`, `version`, ...), as Segment does.
 */
import { tags } from "typia";

/** A free-form JSON object: traits, properties, context. */
export type JsonObject = Record<string, unknown>;

/** ISO 8601 date-time with offset, e.g. `2026-01-02T03:04:05.678Z`. */
export type IsoDateTime = string & tags.Format<"date-time">;

/** Non-empty identifier (messageId, userId, ...). 200 chars max keeps keys index-friendly. */
export type Id = string & tags.MinLength<1> & tags.MaxLength<200>;

/** Fields common to every message type. */
export interface MessageCommon {
  /** Idempotency key (spec §2.1): retries with the same messageId yield one stored row. */
  messageId: Id;
  /** The user in the caller's system. See `Identified` for the either-or rule. */
  userId?: Id | null;
  /** A device or browser id for a user not yet known. */
  anonymousId?: Id | null;
  /** When the event happened on the client; defaults to receivedAt when omitted (spec §2.1). */
  timestamp?: IsoDateTime;
  /** Metadata about the client and the circumstances (ip, userAgent, library, ...). */
  context?: JsonObject;
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

/** identify: who the user is and their traits. */
export interface IdentifyMessage extends MessageCommon {
  type: "identify";
  traits?: JsonObject;
}

/** track: a named event. Segment: `event` is required. */
export interface TrackMessage extends MessageCommon {
  type: "track";
  event: string & tags.MinLength<1>;
  properties?: JsonObject;
}

/** page: a web page view; name optional. */
export interface PageMessage extends MessageCommon {
  type: "page";
  name?: string | null;
  category?: string | null;
  properties?: JsonObject;
}

/** screen: a mobile screen view; name optional. */
export interface ScreenMessage extends MessageCommon {
  type: "screen";
  name?: string | null;
  category?: string | null;
  properties?: JsonObject;
}

/** group: associates the user with a group. Segment: `groupId` is required. */
export interface GroupMessage extends MessageCommon {
  type: "group";
  groupId: Id;
  traits?: JsonObject;
}

/** alias: merges two user identities. Segment: `previousId` and `userId` are both required. */
export interface AliasMessage extends MessageCommon {
  type: "alias";
  previousId: Id;
  userId: Id;
}

/** One item of a batch body: any message, discriminated by `type`. */
export type Message =
  | IdentifyMessage
  | TrackMessage
  | PageMessage
  | ScreenMessage
  | GroupMessage
  | AliasMessage;

/** The message types. */
export type MessageType = Message["type"];

/** Body of POST /api/public/apps/identify: an identify message whose `type` may be omitted. */
export interface IdentifyBody extends MessageCommon {
  type?: "identify";
  traits?: JsonObject;
  /** When the client sent the request (Segment). */
  sentAt?: IsoDateTime;
}

/** Body of POST /api/public/apps/batch (spec §2.3). */
export interface BatchBody {
  /** The messages; at least one. */
  batch: Message[] & tags.MinItems<1>;
  /** Merged under each item's own context; the item's keys win (Dittofeed). */
  context?: JsonObject;
  /** When the client sent the request (Segment). Kept on every envelope. */
  sentAt?: IsoDateTime;
}
