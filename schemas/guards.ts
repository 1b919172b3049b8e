/**
 * typia-generated validators of every contract that crosses a process boundary. Generated at
 * compile time from the types; no hand-written field checks.
 */
import typia from "typia";
import type { Envelope } from "./envelope";
import type { BatchBody, IdentifyBody, Identified } from "./messages";

/** Body of POST /api/public/apps/batch. */
export const validateBatchBody = typia.createValidate<BatchBody>();
/** Body of POST /api/public/apps/identify. */
export const validateIdentifyBody = typia.createValidate<IdentifyBody>();
/** The either-or identity rule of one message (Segment: userId or anonymousId). */
export const validateIdentified = typia.createValidate<Identified>();
/** A record value read back from the topic by the sink. */
export const validateEnvelope = typia.createValidate<Envelope>();
