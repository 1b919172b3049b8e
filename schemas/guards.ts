/**
 * typia-generated validators of every contract that crosses a process boundary. Generated at
 * compile time from the types; no hand-written field checks.
 */
import typia from "typia";
import type { Envelope, RejectedEnvelope } from "./envelope";
import type {
  AliasBody,
  BatchFrame,
  GroupBody,
  IdentifyBody,
  Message,
  MessageType,
  PageBody,
  ScreenBody,
  TrackBody,
  WithAnonymousId,
  WithUserId,
} from "./messages";

/** A batch body's frame: everything but the items. */
export const validateBatchFrame = typia.createValidate<BatchFrame>();

/** One batch item, checked on its own. */
export const validateMessage = typia.createValidate<Message>();

/** Bodies of the single-message routes, by message type. */
export const validateSingleBody = {
  identify: typia.createValidate<IdentifyBody>(),
  track: typia.createValidate<TrackBody>(),
  page: typia.createValidate<PageBody>(),
  screen: typia.createValidate<ScreenBody>(),
  group: typia.createValidate<GroupBody>(),
  alias: typia.createValidate<AliasBody>(),
} satisfies Record<MessageType, unknown>;

const isWithUserId = typia.createIs<WithUserId>();
const isWithAnonymousId = typia.createIs<WithAnonymousId>();

/**
 * The either-or identity rule of one message (Segment: userId or anonymousId, `Identified`), each
 * side checked on its own: analytics.js sends `"userId": null` beside the anonymousId of a
 * visitor not yet identified, and typia's check of the union `Identified` takes an object with
 * both keys for the userId side and refuses it (every anonymous page and track was refused so).
 */
export function isIdentified(message: unknown): boolean {
  return isWithUserId(message) || isWithAnonymousId(message);
}

/** A record value read back from the topic by the sink. */
export const validateEnvelope = typia.createValidate<Envelope>();

/** A record value of the rejected topic, read back by the sink. */
export const validateRejectedEnvelope = typia.createValidate<RejectedEnvelope>();
