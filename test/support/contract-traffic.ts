/**
 * The traffic the events topic's contract is checked with (test/live/record-contract.test.ts, and
 * test/unit/schemas/events-record.test.ts against the app in process): every message type, on the
 * batch route and single routes of both prefixes, with batch context and integrations, SDK-shaped
 * context (a browser, a crawler, a mobile app), and odd but valid values: ids sent as numbers, a
 * blank userId, times with an offset and a lowercase `t`, a time 51 years back, a track's `name`
 * and `traits`, `__proto__` keys, U+2028 and emoji, a 1,000-character event name, one shape
 * twice in a batch. One batch item is invalid: it must not reach the events topic.
 */
import { basic } from "./harness";

/** One request: its path and JSON body. */
export interface ContractRequest {
  path: string;
  body: Record<string, unknown>;
}

/** The requests, and the messageIds each accepted message and each refused item carries. */
export interface ContractTraffic {
  requests: ContractRequest[];
  accepted: string[];
  refused: string[];
}

/** User agents as browsers and crawlers send them. */
export const AGENTS = {
  chrome: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
  googlebot: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
} as const;

/** `ms` (epoch) as RFC 3339 text in the offset `+05:30`, lowercase `t`, one fraction digit: valid, not canonical. */
export function offsetTime(ms: number): string {
  const local = new Date(Math.floor(ms / 100) * 100 + 330 * 60_000).toISOString();
  return `${local.slice(0, 10)}t${local.slice(11, 21)}+05:30`;
}

/** The batch of every type (one item refused), ids `${tag}-b<n>`; `numericId` a messageId sent as a number. */
function everyTypeBatch(tag: string, now: number, numericId: number): Record<string, unknown> {
  const id = (n: number) => `${tag}-b${n}`;
  return {
    sentAt: new Date(now - 1_500).toISOString(),
    context: { library: { name: "analytics-node", version: "3.1.0" }, userAgent: AGENTS.chrome, ip: "8.8.8.8" },
    integrations: { All: true, Mixpanel: false },
    batch: [
      {
        type: "identify",
        messageId: id(1),
        userId: "u-contract",
        timestamp: new Date(now - 3_000).toISOString(),
        context: { locale: "pt-PT" },
        traits: {
          email: "zoe@example.com",
          name: "Zoë 🐎",
          note: "line\u2028break",
          ["__proto__"]: { admin: true },
          address: { city: "Porto" },
        },
      },
      {
        type: "track",
        messageId: id(2),
        userId: 42,
        anonymousId: "anon-contract",
        event: "Order Completed",
        timestamp: offsetTime(now - 60_000),
        name: "kept in extra",
        traits: "a track's traits as a string",
        integrations: { Mixpanel: true },
        properties: { revenue: 12.5, big: 1e300, list: [1, "a", null, { x: [] }], empty: {}, nothing: null },
      },
      { type: "page", messageId: id(3), anonymousId: "anon-contract", name: "", category: null, timestamp: "1975-03-02T00:00:00.000Z" },
      {
        type: "screen",
        messageId: id(4),
        userId: "u-contract",
        name: "Settings",
        category: "Preferences",
        properties: {},
        context: { os: { name: "iOS", version: "18.1" }, device: { type: "ios" }, userAgent: "" },
      },
      { type: "group", messageId: id(5), userId: "u-contract", groupId: 12345, traits: { name: "Acme", employees: 100 } },
      { type: "alias", messageId: id(6), userId: "u-contract", previousId: "anon-contract" },
      { type: "identify", messageId: id(7), userId: "   ", anonymousId: "anon-blank", context: null },
      { type: "track", messageId: numericId, userId: "u-contract", event: "E".repeat(1_000), properties: null },
      { type: "track", messageId: id(9), userId: "u-contract", event: "Same Shape", properties: { plan: "pro", seats: 3 } },
      { type: "track", messageId: id(10), userId: "u-contract", event: "Same Shape", properties: { plan: "free", seats: 1 } },
      { type: "track", messageId: id(11), userId: "u-contract", properties: { refused: "no event" } },
    ],
  };
}

/**
 * The contract traffic for a writeKey (sent as Basic auth, and in one body as Segment allows).
 * `tag` makes the messageIds unique; `now` (epoch ms) dates the client times.
 */
export function contractTraffic(tag: string, writeKey: string, now = Date.now()): ContractTraffic {
  const numericId = Number(`${now}7`);
  const single = (n: number) => `${tag}-s${n}`;
  const requests: ContractRequest[] = [
    { path: "/v1/batch", body: everyTypeBatch(tag, now, numericId) },
    {
      path: "/v1/identify",
      body: { writeKey, messageId: single(1), anonymousId: "crawler", context: { userAgent: AGENTS.googlebot, ip: "66.249.66.1" } },
    },
    {
      path: "/api/public/apps/track",
      body: { messageId: single(2), userId: "u-contract", event: "Signed Up", properties: { source: "ad" } },
    },
    {
      path: "/v1/p",
      body: { type: "page", messageId: single(3), userId: "u-contract", name: "Pricing", category: "Docs", channel: "web" },
    },
    { path: "/v1/screen", body: { messageId: single(4), anonymousId: "app-device", name: "Home", sentAt: new Date(now).toISOString() } },
    { path: "/api/public/apps/group", body: { messageId: single(5), userId: "u-contract", groupId: "g-1", traits: {} } },
    { path: "/v1/alias", body: { messageId: single(6), userId: "u-contract", previousId: "crawler" } },
  ];
  const accepted = [...[1, 2, 3, 4, 5, 6, 7, 9, 10].map((n) => `${tag}-b${n}`), String(numericId), ...[1, 2, 3, 4, 5, 6].map(single)];
  return { requests, accepted, refused: [`${tag}-b11`] };
}

/** Posts every request of `traffic` to the ingest at `base` with `writeKey`; throws on an answer other than 200. */
export async function postTraffic(base: string, writeKey: string, traffic: ContractTraffic): Promise<void> {
  for (const { path, body } of traffic.requests) {
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(writeKey) },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${text}`);
  }
}
