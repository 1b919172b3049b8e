/**
 * Whether a destination receives a message (sink/deliver/match.ts): the operator's `types` and
 * `events` filters, Segment's consent (categoryPreferences, read before `integrations` and
 * standing whatever it says), and Segment's `integrations` object.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { WebhookDestination } from "../../../../schemas/destinations";
import type { DeliveryMessage } from "../../../../sink/deliver/message";
import { consented, integrationAllows, skipReason } from "../../../../sink/deliver/match";
import { webhookDestination } from "../../../support/admin-fixtures";

const MADE = "2026-01-01T00:00:00.000Z";
const destination = (over: Partial<WebhookDestination> = {}) =>
  webhookDestination("d1", "w1", { url: "https://hooks.example.com/", createdAt: MADE, updatedAt: MADE, ...over });

const message = (over: Record<string, unknown> = {}): DeliveryMessage => ({
  messageId: "m1",
  type: "track",
  event: "Order Completed",
  userId: "u1",
  timestamp: "2026-01-01T00:00:00.000Z",
  receivedAt: "2026-01-01T00:00:00.000Z",
  context: {},
  properties: {},
  ...over,
});

const withConsent = (categoryPreferences: unknown, over: Record<string, unknown> = {}): DeliveryMessage =>
  message({ context: { consent: { categoryPreferences } }, ...over });

test("a destination without filters receives every message", () => {
  for (const type of ["track", "identify", "page", "screen", "group", "alias"])
    assert.is(skipReason(destination(), message({ type })), undefined, type);
});

test("types: a message of a type not listed is skipped for its type", () => {
  const d = destination({ types: ["track", "identify"] });
  assert.is(skipReason(d, message({ type: "track" })), undefined);
  assert.is(skipReason(d, message({ type: "identify", event: undefined })), undefined);
  assert.is(skipReason(d, message({ type: "page", name: "Home" })), "type");
  assert.is(skipReason(d, message({ type: "alias" })), "type");
  assert.is(skipReason(destination({ types: [] }), message()), "type", "an empty list sends no type");
});

test("events filters track messages by their event", () => {
  const d = destination({ events: ["Order Completed", "Signed Up"] });
  assert.is(skipReason(d, message({ event: "Order Completed" })), undefined);
  assert.is(skipReason(d, message({ event: "Signed Up" })), undefined);
  assert.is(skipReason(d, message({ event: "Product Viewed" })), "event");
  assert.is(skipReason(d, message({ event: "order completed" })), "event", "names match exactly");
  assert.is(skipReason(d, message({ event: undefined })), "event", "a track without an event name");
});

test("events filters page and screen messages by their name, not their event", () => {
  const d = destination({ events: ["Home"] });
  for (const type of ["page", "screen"]) {
    assert.is(skipReason(d, message({ type, event: undefined, name: "Home" })), undefined, type);
    assert.is(skipReason(d, message({ type, event: undefined, name: "Pricing" })), "event", type);
    assert.is(skipReason(d, message({ type, event: "Home", name: "Pricing" })), "event", `${type}: a stray event field is not its name`);
    assert.is(skipReason(d, message({ type, event: undefined })), "event", `${type} without a name`);
  }
  assert.is(
    skipReason(d, message({ type: "track", event: "Pricing", name: "Home" })),
    "event",
    "a track is named by its event, not a stray name",
  );
});

test("events leaves identify, group and alias to types", () => {
  const d = destination({ events: ["Order Completed"] });
  for (const type of ["identify", "group", "alias"]) assert.is(skipReason(d, message({ type, event: undefined })), undefined, type);
  assert.is(skipReason(destination({ events: [] }), message({ type: "identify", event: undefined })), undefined);
  assert.is(skipReason(destination({ events: [] }), message()), "event", "but an empty list sends no track");
});

test("types is checked before events", () => {
  assert.is(skipReason(destination({ types: ["identify"], events: ["Other"] }), message()), "type");
});

test("consent: a destination mapped to no category is sent whatever the preferences", () => {
  assert.is(skipReason(destination(), withConsent({ Advertising: false })), undefined);
  assert.is(skipReason(destination({ categories: [] }), withConsent({ Advertising: false })), undefined);
});

test("consent: a message without context.consent is sent (events without the consent object continue to flow)", () => {
  const d = destination({ categories: ["Advertising"] });
  assert.is(skipReason(d, message({ context: {} })), undefined);
  assert.is(skipReason(d, message({ context: undefined })), undefined);
  assert.is(skipReason(d, message({ context: { consent: {} } })), undefined, "a consent object without categoryPreferences");
  assert.is(
    skipReason(d, message({ context: { consent: { categoryPreferences: "all" } } })),
    undefined,
    "preferences that are not an object",
  );
});

test("consent: preferences granting every category of the destination send the message", () => {
  const d = destination({ categories: ["Advertising", "Analytics"] });
  assert.is(skipReason(d, withConsent({ Advertising: true, Analytics: true })), undefined);
  assert.is(
    skipReason(d, withConsent({ Advertising: true, Analytics: true, Functional: false })),
    undefined,
    "other categories do not matter",
  );
});

test('consent: one category refused or missing skips the message for "consent"', () => {
  const d = destination({ categories: ["Advertising", "Analytics"] });
  assert.is(skipReason(d, withConsent({ Advertising: true, Analytics: false })), "consent");
  assert.is(skipReason(d, withConsent({ Advertising: true })), "consent", "a category not granted is not consented");
  assert.is(skipReason(d, withConsent({})), "consent");
  assert.is(skipReason(d, withConsent({ Advertising: true, Analytics: "true" })), "consent", "only true grants");
  assert.is(skipReason(d, withConsent({ Advertising: true, Analytics: 1 })), "consent");
});

test("consent: a refusal stands even when integrations names the destination true", () => {
  const d = destination({ categories: ["Advertising"] });
  assert.is(skipReason(d, withConsent({ Advertising: false }, { integrations: { Webhooks: true } })), "consent");
  assert.is(skipReason(d, withConsent({ Advertising: false }, { integrations: { All: true, Webhooks: { opt: 1 } } })), "consent");
  assert.is(skipReason(d, withConsent({ Advertising: false }, { integrations: { Webhooks: false } })), "consent", "consent is read first");
});

test("consent: a category named like an Object.prototype member is not granted by the prototype", () => {
  assert.not.ok(consented(["constructor"], { consent: { categoryPreferences: {} } }));
  assert.not.ok(consented(["toString"], { consent: { categoryPreferences: {} } }));
  assert.ok(consented(["constructor"], { consent: { categoryPreferences: { constructor: true } } }));
});

test('integrations: the destination\'s own name set to false skips the message for "integrations"', () => {
  assert.is(skipReason(destination(), message({ integrations: { Webhooks: false } })), "integrations");
  assert.is(
    skipReason(destination(), message({ integrations: { All: true, Webhooks: false } })),
    "integrations",
    "its own name wins over All",
  );
  assert.is(skipReason(destination(), message({ integrations: { Webhooks: true } })), undefined);
  assert.is(skipReason(destination(), message({ integrations: { Mixpanel: false } })), undefined, "another destination's name");
  assert.is(skipReason(destination(), message({ integrations: {} })), undefined);
});

test("integrations: All false keeps the message unless the destination's name is true or an options object", () => {
  assert.is(skipReason(destination(), message({ integrations: { All: false } })), "integrations");
  assert.is(skipReason(destination(), message({ integrations: { All: false, Mixpanel: true } })), "integrations");
  assert.is(skipReason(destination(), message({ integrations: { All: false, Webhooks: true } })), undefined);
  assert.is(skipReason(destination(), message({ integrations: { All: false, Webhooks: { opt: 1 } } })), undefined);
  assert.is(skipReason(destination(), message({ integrations: { All: false, Webhooks: {} } })), undefined, "an empty options object");
  assert.is(
    skipReason(destination(), message({ integrations: { All: false, Webhooks: [] } })),
    "integrations",
    "an array is not an options object",
  );
  assert.is(
    skipReason(destination(), message({ integrations: { All: false, Webhooks: "yes" } })),
    "integrations",
    "only true or an object",
  );
  assert.is(skipReason(destination(), message({ integrations: { All: "false" } })), undefined, "only the boolean false");
});

test("integrations: the destination's name is matched exactly, case included", () => {
  const d = destination({ name: "Orders Hook" });
  assert.is(skipReason(d, message({ integrations: { "Orders Hook": false } })), "integrations");
  assert.is(skipReason(d, message({ integrations: { Webhooks: false } })), undefined, "the default name does not stand for another");
  assert.is(skipReason(d, message({ integrations: { "orders hook": false } })), undefined, "another case is another name");
  assert.is(skipReason(d, message({ integrations: { All: false, "orders hook": true } })), "integrations");
  assert.is(skipReason(d, message({ integrations: { All: false, "Orders Hook": true } })), undefined);
  assert.is(skipReason(destination(), message({ integrations: { webhooks: false } })), undefined);
});

test("integrations that is not an object sends the message", () => {
  for (const integrations of [null, "none", false, 0, ["Webhooks"], undefined])
    assert.is(skipReason(destination(), message({ integrations })), undefined, JSON.stringify(integrations));
});

test("a destination named like an inherited key does not read Object.prototype", () => {
  for (const name of ["constructor", "toString", "hasOwnProperty", "__proto__"]) {
    const d = destination({ name });
    assert.is(skipReason(d, message({ integrations: { All: false } })), "integrations", `${name}: inherited, not set`);
    assert.ok(integrationAllows(name, {}), `${name} with an empty object`);
    assert.not.ok(integrationAllows(name, { All: false }), name);
  }
  assert.is(
    skipReason(destination({ name: "constructor" }), message({ integrations: JSON.parse('{"All":false,"constructor":true}') as unknown })),
    undefined,
  );
  assert.is(skipReason(destination({ name: "toString" }), message({ integrations: { toString: false } })), "integrations");
});

test.run();
