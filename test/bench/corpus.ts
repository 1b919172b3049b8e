/**
 * The benchmark's fixed corpus: realistic Segment messages (identify, track, page, screen,
 * group), 400-600 bytes of JSON each, with properties and traits nested a few levels. Generated
 * from a seeded PRNG, so every run and every machine sends the same bytes. messageIds are
 * placeholders (`__ID__`) that the load generator makes unique per request.
 */

/** mulberry32: a small, well-known 32-bit PRNG; same seed, same sequence. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const EVENTS = [
  "Product Viewed",
  "Product Added",
  "Checkout Started",
  "Order Completed",
  "Signed Up",
  "Video Played",
  "Search Performed",
];
const PAGES = ["Home", "Pricing", "Docs", "Blog", "Checkout", "Product"];
const PLANS = ["free", "pro", "team", "enterprise"];
const CITIES = ["Lisbon", "Berlin", "Austin", "Osaka", "Lagos", "Lima"];

/** `n` messages, each with `messageId: "__ID__"`. */
export function corpus(n: number, seed = 20261122): Record<string, unknown>[] {
  const random = prng(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const id = (prefix: string) => `${prefix}-${Math.floor(random() * 1e9).toString(36)}`;
  const context = () => ({
    ip: `203.0.113.${Math.floor(random() * 250)}`,
    library: { name: "analytics-node", version: "3.1.0" },
    userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/130.0 Safari/537.36",
    locale: pick(["en-US", "pt-PT", "de-DE", "ja-JP"]),
    campaign: {
      source: pick(["newsletter", "search", "partner"]),
      medium: pick(["email", "cpc", "referral"]),
      name: `spring-${Math.floor(random() * 40)}`,
    },
  });
  const messages: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const userId = id("user");
    const common = {
      messageId: "__ID__",
      userId,
      anonymousId: id("anon"),
      timestamp: new Date(Date.UTC(2026, 10, 22, 8, 0, i % 60)).toISOString(),
      context: context(),
    };
    const kind = i % 10;
    if (kind < 5) {
      messages.push({
        ...common,
        type: "track",
        event: pick(EVENTS),
        properties: {
          product: { id: id("sku"), price: Math.round(random() * 10000) / 100, category: pick(["books", "games", "tools"]) },
          quantity: 1 + Math.floor(random() * 4),
          currency: "EUR",
        },
      });
    } else if (kind < 7) {
      const name = pick(PAGES);
      messages.push({
        ...common,
        type: "page",
        name,
        properties: {
          path: `/${name.toLowerCase()}`,
          url: `https://shop.example/${name.toLowerCase()}`,
          referrer: "https://search.example/",
          title: `${name} - Shop`,
        },
      });
    } else if (kind < 9) {
      messages.push({
        ...common,
        type: "identify",
        traits: {
          email: `${userId}@mail.example`,
          plan: pick(PLANS),
          address: { city: pick(CITIES), country: "PT" },
          logins: Math.floor(random() * 500),
        },
      });
    } else {
      messages.push(
        i % 20 === 9
          ? { ...common, type: "group", groupId: id("org"), traits: { name: "Acme", employees: 50, plan: pick(PLANS) } }
          : { ...common, type: "screen", name: "Settings", properties: { section: "billing" } },
      );
    }
  }
  return messages;
}

/**
 * The bodies the benches send, from `messages`: 10 batch bodies of 100 messages each, and 50
 * single identify bodies (the type left to the endpoint, as analytics.js sends them).
 */
export function benchBodies(messages: Record<string, unknown>[]): { batch: string[]; identify: string[] } {
  return {
    batch: Array.from({ length: 10 }, (_, i) => JSON.stringify({ batch: messages.slice(i * 100, (i + 1) * 100) })),
    identify: messages
      .filter((m) => m.type === "identify")
      .slice(0, 50)
      .map((m) => JSON.stringify({ ...m, type: undefined })),
  };
}

/** The stack settings of the benches that start their own ingests: no rate limit, warn logs, a 10 s produce deadline, a sink session that outlasts a pause. */
export const LOAD_STACK_ENV: Readonly<Record<string, string>> = {
  RATE_LIMIT_PER_SECOND: "0",
  LOG_LEVEL: "warn",
  PRODUCE_TIMEOUT_MS: "10000",
  SINK_SESSION_TIMEOUT_MS: "30000",
};
