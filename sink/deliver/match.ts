/**
 * Whether a destination receives a message, decided from the destination and the message alone.
 * Pure. The first reason that holds is the answer; undefined: send it.
 *
 * Rules, with their sources:
 * - `types` and `events` are the operator's filters; `events` names track events and page and
 *   screen names, so it leaves the other types to `types`;
 * - consent (Segment's Consent Management): a message with `context.consent.categoryPreferences`
 *   goes to a destination only if it grants every category the destination is mapped to; a
 *   message without one is not filtered ("events without the consent object continue to flow");
 *   consent is read before `integrations`, and a refusal by consent stands whatever
 *   `integrations` says;
 * - `integrations` (Segment): the destination's own name set to false, or `All: false` without
 *   the name set to true (or to an options object), keeps the message from it.
 */
import type { WebhookDestination } from "../../schemas/destinations";
import type { DeliveryMessage } from "./message";

/** Why a message is not sent to a destination. */
export type SkipReason = "type" | "event" | "consent" | "integrations";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The first rule that keeps `message` from `destination`, or undefined when it is sent. */
export function skipReason(destination: WebhookDestination, message: DeliveryMessage): SkipReason | undefined {
  if (destination.types !== undefined && !destination.types.includes(message.type as never)) return "type";
  if (destination.events !== undefined) {
    const named =
      message.type === "track" ? message.event : message.type === "page" || message.type === "screen" ? message.name : undefined;
    if (
      (message.type === "track" || message.type === "page" || message.type === "screen") &&
      !destination.events.includes(String(named ?? ""))
    )
      return "event";
  }
  if (!consented(destination.categories, message.context)) return "consent";
  if (!integrationAllows(destination.name, message.integrations)) return "integrations";
  return undefined;
}

/** Segment's consent: every category of the destination granted, when the message carries preferences. */
export function consented(categories: readonly string[] | undefined, context: unknown): boolean {
  if (categories === undefined || categories.length === 0) return true;
  const preferences = isObject(context) && isObject(context.consent) ? context.consent.categoryPreferences : undefined;
  if (!isObject(preferences)) return true;
  return categories.every((category) => preferences[category] === true);
}

/** Segment's integrations object for the destination named `name`. */
export function integrationAllows(name: string, integrations: unknown): boolean {
  if (!isObject(integrations)) return true;
  const own = Object.hasOwn(integrations, name) ? integrations[name] : undefined;
  if (own === false) return false;
  if (own === true || isObject(own)) return true;
  return integrations.All !== false;
}
