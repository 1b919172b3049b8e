/**
 * The events `npm run bench:queries` generates: one workspace over 60 days ending now, with the
 * type mix, anonymous share, JSON sizes, late events and retries described at insertSql. SQL
 * only, for ClickHouse 18.16 and current ClickHouse alike.
 */
import { quoteIdent, quoteString } from "../../schemas/clickhouse/sql";
import { EVENT_ROW_COLUMNS } from "../../schemas/row";

const DAY = 86_400;

/** The shape of the generated data; every figure derives from `rows`. */
export interface Plan {
  rows: number;
  /** Rows per INSERT, a multiple of 100 (the retry rule below needs it). */
  block: number;
  users: number;
  /** The newest timestamp, epoch seconds. */
  end: number;
  /**
   * "arrival": INSERTs follow receive time, as the sink writes them (each covers a few days of the
   * 60, plus its late events and retries); "shuffled": every INSERT spans all 60 days, as a
   * backfill of history in random order.
   */
  order: "arrival" | "shuffled";
}

/** The plan for `rows` events: blocks of at most 1M rows, about one user per 100 events (at most 200,000). */
export function plan(rows: number, order: Plan["order"] = "arrival"): Plan {
  const block = Math.min(1_000_000, Math.ceil(rows / 4 / 100) * 100);
  return { rows, block, users: Math.min(200_000, Math.max(2000, Math.floor(rows / 100))), end: Math.floor(Date.now() / 1000), order };
}

/** Share of events sent late (an app offline, a queue flushed at the next launch), in percent, and by at most how long. */
const LATE_PERCENT = 3;
const LATE_MAX = 2 * DAY;

const list = (items: readonly string[], index: string) => `[${items.map(quoteString).join(", ")}][1 + ${index} % ${items.length}]`;
const OTHER_EVENTS = (
  "Signed Up|Signed In|Signed Out|Products Searched|Product List Viewed|Product Clicked|Product Shared|Cart Viewed|Removed from cart|" +
  "Checkout Started|Checkout Step Viewed|Payment Info Entered|Coupon Applied|Coupon Denied|Order Refunded|Promotion Viewed|" +
  "Promotion Clicked|Wishlist Product Added|Review Submitted|Video Playback Started"
).split("|");
const PAGES = ["Home", "Pricing", "Product", "Category", "Search", "Cart", "Checkout", "Blog", "Docs", "About"];
const SCREENS = ["Home", "Product", "Cart", "Checkout", "Settings", "Profile"];
const CATEGORIES = ["Games", "Books", "Garden", "Kitchen", "Toys", "Music"];
const AGENTS = [
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
];

/**
 * One INSERT ... SELECT of rows [from, from + count) (functions of both 18.16 and current). Row n
 * is message k = n, except every hundredth row of the second block on: a retry of message
 * n - block - 1, from the previous INSERT (one INSERT collapses its own retries on current
 * ClickHouse, optimize_on_insert), with the same timestamps and a received_at 1-61 minutes later.
 * In arrival order message k is received at 60 days x k / rows after the start, and its
 * timestamp is that, less up to LATE_MAX for LATE_PERCENT of messages (those sent with one).
 */
export function insertSql(database: string, p: Plan, from: number, count: number): string {
  const device = (owner: string, d: string) => `UUIDNumToString(sipHash128(concat('d', toString(${owner}), '.', toString(${d}))))`;
  const cents = "(100 + x * 37 % 20000)";
  const price = `concat(toString(intDiv(${cents}, 100)), '.', toString(intDiv(${cents} % 100, 10)), toString(${cents} % 10))`;
  const page = list(PAGES, "x");
  const columns: Record<(typeof EVENT_ROW_COLUMNS)[number], string> = {
    workspace_id: "'ws1'",
    message_id: "UUIDNumToString(sipHash128(concat('m', toString(k))))",
    type: "kind",
    event: `if(kind = 'track', multiIf(x < 200, 'Product Viewed', x < 280, 'Added to cart', x < 310, 'Order Completed', ${list(OTHER_EVENTS, "x")}), '')`,
    name: `multiIf(kind = 'page', ${page}, kind = 'screen', ${list(SCREENS, "x")}, '')`,
    category: `if(kind = 'page', if(x % 3 = 0, 'Docs', 'Shop'), '')`,
    user_id: "if(anon, '', toString(uix))",
    anonymous_id: device("owner", "dev"),
    group_id: "if(kind = 'group', concat('g', toString(uix % 5000)), '')",
    previous_id: `if(kind = 'alias', ${device("uix", "dev")}, '')`,
    timestamp: "toDateTime(ts)",
    original_timestamp: "if(clockless, NULL, toDateTime(ts))",
    sent_at: "if(clockless, NULL, toDateTime(arrived))",
    received_at: `toDateTime(arrived + if(clockless, 0, 1 + cityHash64(k, 8) % 4) + if(retry, 60 + n % 3600, 0))`,
    properties: `multiIf(
      kind = 'track', concat('{"product_id":"p', toString(x), '","sku":"SKU-', toString(x * 7), '","name":"Product ', toString(x), '","price":', ${price}, ',"currency":"USD","quantity":', toString(1 + x % 4), ',"category":"', ${list(CATEGORIES, "x")}, '","revenue":', ${price}, ',"plan":"', ${list(["free", "pro", "team"], "cityHash64(uix, 11)")}, '","utm_source":"', ${list(["google", "newsletter", "partner", "direct", "twitter"], "cityHash64(k, 12)")}, '"}'),
      kind = 'page', concat('{"path":"/', lower(${page}), '/', toString(x), '","url":"https://shop.example.com/', lower(${page}), '/', toString(x), '","title":"', ${page}, ' | Shop","referrer":"https://www.google.com/search?q=', toString(x), '","search":""}'),
      kind = 'screen', concat('{"screen_id":"s', toString(x), '","orientation":"portrait","build":"', toString(100 + x % 7), '"}'),
      '{}')`,
    traits: `multiIf(
      kind = 'identify', concat('{"email":"user', toString(uix), '@example.com","name":"User ', toString(uix), '","plan":"', ${list(["free", "pro", "team"], "cityHash64(k, 10)")}, '","company":"Company ', toString(uix % 5000), '","logins":', toString(k % 1000), ',"createdAt":"2025-0', toString(1 + uix % 9), '-15T10:00:00.000Z"}'),
      kind = 'group', concat('{"name":"Company ', toString(uix % 5000), '","industry":"', ${list(["Retail", "Software", "Finance", "Health"], "uix")}, '","employees":', toString(10 + uix % 990), ',"plan":"enterprise"}'),
      '{}')`,
    context: `concat('{"ip":"10.', toString(owner % 256), '.', toString(intDiv(owner, 256) % 256), '.', toString(dev), '","userAgent":"', ${list(AGENTS, "(owner + dev)")}, '","library":{"name":"analytics.js","version":"1.84.3"},"locale":"en-US","timezone":"Europe/Berlin"}')`,
    extra: `'{"channel":"client","integrations":{}}'`,
    browser: `${list(["Safari", "Chrome", "Mobile Safari"], "(owner + dev)")}`,
    browser_version: `${list(["17.1", "120.0.0.0", "17.1"], "(owner + dev)")}`,
    os: `${list(["Mac OS", "Windows", "iOS"], "(owner + dev)")}`,
    device_type: `${list(["desktop", "desktop", "mobile"], "(owner + dev)")}`,
    is_bot: "toUInt8(0)",
    country: `${list(["US", "DE", "GB", "FR", "JP", "BR"], "owner")}`,
    catalog_shape: "if(kind = 'track', toUInt64(1), toUInt64(2))",
    catalog_keys: `if(kind = 'track', ['psproduct_id', 'pssku', 'psname', 'pnprice', 'pscurrency', 'pnquantity', 'pscategory', 'pnrevenue', 'psplan', 'psutm_source', 'csip', 'csuserAgent', 'colibrary'], ['csip', 'csuserAgent', 'colibrary'])`,
    violations: "emptyArrayString()",
  };
  // 60% track, 25% page, 8% identify, 4% screen, 2% group, 1% alias; ~25% of rows anonymous
  // (track, page and screen only); the first 8 messages are identifies of user 1043.
  return `INSERT INTO ${quoteIdent(database)}.events (${EVENT_ROW_COLUMNS.join(", ")})
SELECT ${EVENT_ROW_COLUMNS.map((c) => `${columns[c]} AS ${c}`).join(",\n  ")}
FROM (
  SELECT n, k, retry,
    cityHash64(k, 1) % 100 AS roll,
    if(k < 8, 'identify', multiIf(roll < 60, 'track', roll < 85, 'page', roll < 93, 'identify', roll < 97, 'screen', roll < 99, 'group', 'alias')) AS kind,
    if(k < 8, 1043, cityHash64(k, 2) % ${p.users}) AS uix,
    cityHash64(k, 3) % 3 AS dev,
    kind IN ('track', 'page', 'screen') AND cityHash64(k, 4) % 1000 < 281 AS anon,
    if(anon, cityHash64(k, 5) % ${p.users * 2}, uix) AS owner,
    cityHash64(k, 7) % 50 = 0 AS clockless,
    ${
      p.order === "shuffled"
        ? `${p.end} - cityHash64(k, 6) % ${60 * DAY} AS arrived, arrived AS ts`
        : `${p.end - 60 * DAY + 1} + intDiv(k * ${60 * DAY}, ${p.rows}) AS arrived,
    arrived - if(NOT clockless AND cityHash64(k, 6) % 100 < ${LATE_PERCENT}, cityHash64(k, 13) % ${LATE_MAX}, 0) AS ts`
    },
    cityHash64(k, 9) % 1000 AS x
  FROM (
    SELECT number AS n, if(number % 100 = 99 AND number >= ${p.block}, toUInt64(number - ${p.block + 1}), number) AS k, k != n AS retry
    FROM numbers(${from}, ${count})
  )
)`;
}
