import { test } from "uvu";
import * as assert from "uvu/assert";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  Enricher,
  NO_ENRICHMENT,
  anonymizeIp,
  defaultCountryDbPath,
  openCountryDb,
  parsedAgentText,
} from "../../../../ingest/records/enrich";
import { cutText } from "../../../../schemas/wellformed";
import { buildRecords, type ContextPolicy, type Receipt } from "../../../../ingest/records/build";
import { buildRejected } from "../../../../ingest/records/rejected";
import type { EventRow } from "../../../../schemas/row";
import type { RejectedEnvelope } from "../../../../schemas/envelope";
import { ROOT } from "../../../support/paths";

// test/fixtures/geo-test.mmdb (test/support/test-mmdb.py): 81.2.69.0/24 GB, 198.51.100.0/24 FR,
// 203.0.113.0/24 JP (MaxMind's record shape), 2001:db8::/32 DE; nothing else.
const enricher = new Enricher(openCountryDb(join(ROOT, "test", "fixtures", "geo-test.mmdb")));
const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
const GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const IPAD =
  "Mozilla/5.0 (iPad; CPU OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1";
const ANDROID_APP = "Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/UQ1A.240205.004)";

test("a desktop Chrome page view: browser, version, OS, desktop, no bot, country of its address", () => {
  assert.equal(enricher.of({ userAgent: CHROME, ip: "81.2.69.160" }), {
    browser: "Chrome",
    browser_version: "156.0.0.0",
    os: "Linux",
    device_type: "desktop",
    is_bot: 0,
    country: "GB",
  });
});

test("Googlebot is a bot, flagged and typed bot", () => {
  const e = enricher.of({ userAgent: GOOGLEBOT, ip: "198.51.100.7" });
  assert.is(e.is_bot, 1);
  assert.is(e.device_type, "bot");
  assert.is(e.country, "FR");
});

test("tablets and an Android app's user agent", () => {
  const ipad = enricher.of({ userAgent: IPAD });
  assert.is(ipad.device_type, "tablet");
  assert.is(ipad.os, "iOS");
  const app = enricher.of({ userAgent: ANDROID_APP, ip: "2001:db8::1" });
  assert.is(app.device_type, "mobile");
  assert.is(app.os, "Android");
  assert.is(app.browser, "");
  assert.is(app.country, "DE");
});

test("a mobile SDK without a user agent: OS and device from context.os and context.device", () => {
  const e = enricher.of({ os: { name: "iOS", version: "17.1" }, device: { type: "ios", model: "iPhone15,2" }, ip: "203.0.113.9" });
  assert.equal(e, { ...NO_ENRICHMENT, os: "iOS", device_type: "mobile", country: "JP" });
});

test("missing, garbage and hostile values give the defaults, never an error", () => {
  assert.equal(NO_ENRICHMENT, { browser: "", browser_version: "", os: "", device_type: "other", is_bot: 0, country: "" });
  assert.equal(enricher.of(undefined), NO_ENRICHMENT);
  assert.equal(enricher.of(null), NO_ENRICHMENT);
  assert.equal(enricher.of({}), NO_ENRICHMENT);
  assert.equal(enricher.of({ userAgent: 42, ip: { a: 1 }, os: "x", device: [1] }), NO_ENRICHMENT);
  assert.equal(enricher.of({ userAgent: "", ip: "" }), NO_ENRICHMENT);
  const garbage = enricher.of({ userAgent: "\u0000\u00ff<script>" + "x".repeat(100_000), ip: "999.1.1.1" });
  assert.is(garbage.browser, "");
  assert.is(garbage.country, "");
  // isbot's rule: an agent no browser sends (no spaces, a tool's name) is a bot; stored, flagged.
  assert.is(garbage.is_bot, 1);
  assert.is(garbage.device_type, "bot");
  assert.is(enricher.country("not an address"), "");
  assert.is(enricher.country("10.0.0.1"), ""); // not in the database
});

test("padded user agents are parsed with their runs cut to 8 and at most 350 characters; a real agent reads the same", () => {
  const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
  assert.is(parsedAgentText(chrome), chrome, "nothing of a real agent changes");
  assert.is(parsedAgentText("x" + " ".repeat(500) + "y"), "x" + " ".repeat(8) + "y");
  assert.is(parsedAgentText("a".repeat(9)), "a".repeat(8));
  assert.is(parsedAgentText("a".repeat(8)), "a".repeat(8));
  assert.is(parsedAgentText(Array.from({ length: 200 }, (_, i) => i).join("; ")).length, 350);
  // Padded inside, it still reads as Chrome on Windows; the stored context keeps the agent as sent.
  const padded = chrome.replace("(Windows", `(${" ".repeat(300)}Windows`);
  const facts = new Enricher(undefined).agent(padded);
  assert.equal([facts.browser, facts.os, facts.device_type, facts.is_bot], ["Chrome", "Windows", "desktop", 0]);
});

/** Real agents, one a line (test/fixtures/README.md). */
const REAL_AGENTS = readFileSync(join(ROOT, "test", "fixtures", "user-agents.txt"), "utf8")
  .split("\n")
  .filter(Boolean);

test("agents made of a repeated token are cut to 3 copies of it before parsing; real agents are read as before", () => {
  // issue 46, row 3: "Android" x 48 cost ua-parser-js 0.5 ms, a real agent 35-90 us
  assert.is(parsedAgentText("Android".repeat(48) + "1061"), "Android".repeat(3) + "1061");
  assert.is(parsedAgentText("Android ".repeat(43) + "7"), "Android ".repeat(3) + "7");
  assert.is(parsedAgentText("Mozilla/5.0 (".repeat(26) + "x"), "Mozilla/5.0 (".repeat(3) + "x");
  assert.is(parsedAgentText(`Mozilla/5.0 (${"Windows NT; ".repeat(20)}) Chrome/1`), `Mozilla/5.0 (${"Windows NT; ".repeat(3)}) Chrome/1`);
  assert.is(parsedAgentText("ab".repeat(100)), "ababab", "a token of two characters");
  assert.is(parsedAgentText("x".repeat(20) + "yz".repeat(20)), "x".repeat(8) + "yzyzyz", "runs side by side, each cut");
  assert.is(parsedAgentText("1.1.1.1.1.1.1.1.1"), "1.1.1.1", "0.0.0.0 in a version is 3 copies, kept; more are cut");
  // Before this cut, what was parsed was the agent with runs of one character cut to 8, and its
  // first 350 characters: every real agent of the fixtures is that same text, so parses the same.
  const oneCharacterCut = (agent: string) =>
    cutText(
      agent.replace(/(.)\1{8,}/gs, (_run, c: string) => c.repeat(8)),
      350,
    );
  assert.ok(REAL_AGENTS.length >= 50);
  for (const agent of REAL_AGENTS) assert.is(parsedAgentText(agent), oneCharacterCut(agent), agent);
  const facts = new Enricher(undefined).agent("Android".repeat(48) + "1061");
  assert.equal([facts.browser, facts.device_type], ["", "bot"], "isbot still reads the agent whole: a long run is a bot's sign");
});

/** An enricher whose requests parse one uncached agent each (the second finds the budget spent), and its count of unparsed ones. */
function oneParsePerRequest(): { enricher: Enricher; unparsed: () => number } {
  let unparsed = 0;
  const enricher = new Enricher(undefined, { parseBudgetMs: 0.001, onUnparsed: () => unparsed++ });
  return { enricher, unparsed: () => unparsed };
}

test("a request's parse budget: past it, uncached agents are stored without browser or OS, counted, not cached; cached ones still read", () => {
  const { enricher, unparsed } = oneParsePerRequest();
  const agents = REAL_AGENTS.slice(0, 10).map((agent, i) => `${agent} build/${i}`);
  const first = enricher.forRequest();
  const facts = agents.map((agent) => first.agent(agent));
  assert.is(facts[0]!.browser, "Chrome", "the first agent is parsed");
  for (const f of facts.slice(1)) assert.equal(f, { browser: "", browser_version: "", os: "", device_type: "other", is_bot: 0 });
  assert.is(unparsed(), 9);
  const second = enricher.forRequest();
  assert.is(second.agent(agents[0]!).browser, "Chrome", "cached: read whatever the budget");
  assert.is(second.agent(agents[1]!).browser, "Edge", "not cached when left unparsed: the next request parses it");
  assert.is(second.agent(agents[2]!).browser, "");
  assert.is(unparsed(), 10);
  // the enricher itself (not a request's) parses every agent
  assert.is(enricher.agent(agents[2]!).browser, "Firefox");
  assert.is(unparsed(), 10);
});

test("the default budget (AGENT_PARSE_BUDGET_MS) cuts a request of 2,000 agents never seen before short, and only that request", () => {
  let unparsed = 0;
  const enricher = new Enricher(undefined, { onUnparsed: () => unparsed++ });
  const request = enricher.forRequest();
  const agents = Array.from({ length: 2_000 }, (_, i) => `${REAL_AGENTS[i % REAL_AGENTS.length]!} build/${i}`);
  for (const agent of agents) request.agent(agent);
  // 5 ms at 20-90 us a parse: a few hundred at most are parsed
  assert.ok(unparsed > 1_000, `${unparsed} unparsed of 2,000`);
  assert.ok(unparsed < 2_000);
  const before = unparsed;
  assert.is(enricher.forRequest().agent(`${REAL_AGENTS[0]!} build/new`).browser, "Chrome", "the next request has its own budget");
  assert.is(unparsed, before);
});

test("a parsed user agent is cached, and the cache is bounded", () => {
  const small = new Enricher(undefined, { cacheSize: 2 });
  const first = small.agent(CHROME);
  assert.ok(small.agent(CHROME) === first);
  small.agent(GOOGLEBOT);
  small.agent(IPAD);
  assert.ok(small.agent(CHROME) !== first); // evicted, parsed again
  assert.equal(small.agent(CHROME), first);
});

test("the bundled country database answers for public addresses", () => {
  const bundled = new Enricher(openCountryDb(defaultCountryDbPath()));
  assert.match(bundled.country("8.8.8.8"), /^[A-Z]{2}$/);
  assert.is(bundled.country("127.0.0.1"), "");
  assert.is(openCountryDb("off"), undefined);
  assert.throws(() => openCountryDb(join(ROOT, "package.json")));
});

test("anonymizeIp zeroes IPv4's last octet and IPv6's last 80 bits", () => {
  assert.is(anonymizeIp("81.2.69.160"), "81.2.69.0");
  assert.is(anonymizeIp("2001:db8:85a3:8d3:1319:8a2e:370:7348"), "2001:db8:85a3::");
  assert.is(anonymizeIp("::ffff:81.2.69.160"), "81.2.69.0");
  assert.is(anonymizeIp("1.2.3.4 or something"), undefined);
  assert.is(anonymizeIp(""), undefined);
});

test("an IPv6 address that carries an IPv4 one is anonymized as that IPv4 (issue 46, row 8)", () => {
  assert.is(anonymizeIp("2002:cb00:714d::1"), "203.0.113.0", "6to4: its /48 is the whole IPv4");
  assert.is(anonymizeIp("2002:cb00:714d:abcd:1:2:3:4"), "203.0.113.0");
  assert.is(anonymizeIp("2001:0:4136:e378:8000:63bf:3fff:fdd2"), "192.0.2.0", "Teredo (RFC 4380's example): the client's, inverted");
  assert.is(anonymizeIp("64:ff9b::203.0.113.77"), "203.0.113.0", "NAT64's well-known prefix");
  assert.is(anonymizeIp("64:ff9b::cb00:714d"), "203.0.113.0");
  assert.is(anonymizeIp("64:ff9b:1::cb00:714d"), "203.0.113.0", "NAT64's local-use prefix, a /96");
  assert.is(anonymizeIp("64:ff9b:1:cb00:71:4d00::"), "64:ff9b:1::", "a longer prefix than /48 holds the IPv4 past bit 48: none kept");
  assert.is(anonymizeIp("::ffff:203.0.113.77"), "203.0.113.0", "IPv4-mapped");
  assert.is(anonymizeIp("::ffff:cb00:714d"), "203.0.113.0");
  assert.is(anonymizeIp("::203.0.113.77"), "203.0.113.0", "IPv4-compatible (deprecated)");
  assert.is(anonymizeIp("::1"), "::");
  assert.is(anonymizeIp("::"), "::");
  assert.is(anonymizeIp("2001:db8:85a3::1"), "2001:db8:85a3::", "documentation space: a plain IPv6 address");
  assert.is(anonymizeIp("2001:4860:4860::8888"), "2001:4860:4860::", "2001:4860::/32 is not Teredo");
});

const receipt: Receipt = { workspaceId: "ws1", receivedAt: "2026-11-22T10:00:00.123Z", clientIp: "81.2.69.160" };
const policy: ContextPolicy = { enricher, anonymizeIp: true };

test("buildRecords: enrichment columns from the stored context; IP_ANONYMIZE after the country lookup", () => {
  const built = buildRecords(
    [
      { type: "page", messageId: "a", anonymousId: "x", context: { userAgent: CHROME } },
      { type: "track", messageId: "b", userId: "u", event: "E", context: { ip: "not-an-ip", userAgent: GOOGLEBOT } },
    ],
    {},
    receipt,
    32 * 1024,
    policy,
  );
  assert.equal(built.oversized, []);
  const [page, track] = built.records.map((r) => JSON.parse(r.value) as EventRow);
  assert.is(page!.country, "GB");
  assert.is(page!.browser, "Chrome");
  assert.is((JSON.parse(page!.context) as { ip: string }).ip, "81.2.69.0");
  assert.is(track!.is_bot, 1);
  assert.equal(JSON.parse(track!.context), { userAgent: GOOGLEBOT }); // not an address: not kept
  const plain = buildRecords([{ type: "page", messageId: "a", anonymousId: "x" }], {}, receipt, 32 * 1024);
  assert.ok((JSON.parse(JSON.parse(plain.records[0]!.value).context) as { ip: string }).ip === "81.2.69.160");
  assert.ok((JSON.parse(plain.records[0]!.value) as EventRow).device_type === "other");
});

test("buildRecords gives each request its own parse budget: every message stored, the unparsed ones counted", () => {
  const { enricher: budgeted, unparsed } = oneParsePerRequest();
  const messages = REAL_AGENTS.slice(0, 6).map((userAgent, i) => ({
    type: "track" as const,
    messageId: `m${i}`,
    userId: "u",
    event: "E",
    context: { userAgent: `${userAgent} build/${i}`, os: { name: "FromSdk" } },
  }));
  const rows = (built: ReturnType<typeof buildRecords>) => built.records.map((r) => JSON.parse(r.value) as EventRow);
  const first = rows(buildRecords(messages, {}, receipt, 32 * 1024, { enricher: budgeted, anonymizeIp: false }));
  assert.is(first.length, 6, "never a refusal");
  assert.equal(
    first.map((r) => [r.browser ?? "", r.os]),
    [["Chrome", "Windows"], ...Array.from({ length: 5 }, () => ["", "FromSdk"])],
    "past the budget the SDK's context.os still fills the OS",
  );
  assert.is(unparsed(), 5);
  const second = rows(buildRecords(messages, {}, receipt, 32 * 1024, { enricher: budgeted, anonymizeIp: false }));
  assert.equal(
    second.map((r) => r.browser ?? ""),
    ["Chrome", "Edge", "", "", "", ""],
  );
  assert.is(unparsed(), 9);
});

test("names cut at 100 characters keep surrogate pairs whole: the row holds no lone surrogate, which ClickHouse refuses", () => {
  const name = "a".repeat(99) + "\u{1F40E}"; // the pair sits on characters 100 and 101
  assert.is(enricher.of({ os: { name } }).os, "a".repeat(99));
  const built = buildRecords(
    [{ type: "track", messageId: "s", userId: "u", event: "E", context: { os: { name } } }],
    {},
    receipt,
    32 * 1024,
    policy,
  );
  assert.equal(built.oversized, []);
  const value = built.records[0]!.value;
  assert.not.ok(/\\ud[89a-f]/i.test(value), value.slice(0, 300));
  assert.is((JSON.parse(value) as EventRow).os, "a".repeat(99));
});

test("buildRejected: with IP_ANONYMIZE the refused item's context.ip is anonymized in raw", () => {
  const item = { type: "track", messageId: "m", context: { ip: "198.51.100.77", locale: "fr" } };
  const [kept] = buildRejected([{ item, reasons: ["event: required"] }], receipt, 32 * 1024, true);
  const raw = JSON.parse((JSON.parse(kept!.value) as RejectedEnvelope).raw) as typeof item;
  assert.equal(raw.context, { ip: "198.51.100.0", locale: "fr" });
  const [plain] = buildRejected([{ item, reasons: ["event: required"] }], receipt, 32 * 1024);
  assert.match((JSON.parse(plain!.value) as RejectedEnvelope).raw, /198\.51\.100\.77/);
});

test.run();
