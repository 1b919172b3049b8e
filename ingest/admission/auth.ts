/**
 * writeKey -> workspaceId. Pure: reads header values, never the network. A missing, malformed,
 * conflicting or unknown key is a value (`AuthResult`), which the app answers with 401.
 */
import { sha256, type WriteKeyEntry } from "./keys";

/** The header values a key may come in (lower-case names, as Node gives them). */
export interface AuthHeaders {
  authorization?: string | string[];
  publicwritekey?: string | string[];
}

/** Outcome of reading the writeKey from a request. */
export type WriteKeyResult = { ok: true; writeKey: string } | { ok: false; reason: "missing" | "malformed" | "conflict" };

/** Outcome of authenticating a request. */
export type AuthResult = { ok: true; workspaceId: string } | { ok: false; reason: "missing" | "malformed" | "conflict" | "unknown" };

/**
 * Reads the writeKey from `Authorization: Basic <base64>` (the decoded text with one trailing ':'
 * removed: Segment's `key:` and Dittofeed's `keyId:secret` forms), `Authorization: Bearer <key>`,
 * or `PublicWriteKey: <key>` (the spec's header; a Basic/Bearer scheme word there is read the same
 * way). When several are sent they must name the same key, else `conflict`.
 */
export function writeKeyFromHeaders(headers: AuthHeaders): WriteKeyResult {
  const found: string[] = [];
  for (const raw of [headers.authorization, headers.publicwritekey]) {
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (value === undefined || value.trim() === "") continue;
    const key = keyFromHeaderValue(value.trim());
    if (key === undefined) return { ok: false, reason: "malformed" };
    found.push(key);
  }
  if (found.length === 0) return { ok: false, reason: "missing" };
  if (found.some((k) => k !== found[0])) return { ok: false, reason: "conflict" };
  return { ok: true, writeKey: found[0]! };
}

/** `Basic <b64>` | `Bearer <key>` | `<key>` -> the key, or undefined when malformed. */
function keyFromHeaderValue(value: string): string | undefined {
  const space = value.indexOf(" ");
  const scheme = space < 0 ? "" : value.slice(0, space).toLowerCase();
  if (scheme === "basic") return decodeBasic(value.slice(space + 1).trim());
  if (scheme === "bearer") return nonEmpty(value.slice(space + 1).trim());
  if (space >= 0 || /^(basic|bearer)$/i.test(value)) return undefined; // unknown scheme, or no credentials
  return value;
}

/** Strict base64 (RFC 4648, padding optional) to UTF-8 text, one trailing ':' removed. */
function decodeBasic(b64: string): string | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.replace(/=+$/, "").length % 4 === 1) {
    return undefined;
  }
  const text = Buffer.from(b64, "base64").toString("utf8");
  if (text.includes("\uFFFD")) return undefined; // not UTF-8
  return nonEmpty(text.endsWith(":") ? text.slice(0, -1) : text);
}

function nonEmpty(text: string): string | undefined {
  return text.length > 0 ? text : undefined;
}

/**
 * The configured keys, held as SHA-256 digests: a lookup hashes the presented key, so no
 * comparison leaks how much of a key matched and the plain keys are never in memory.
 */
export class WriteKeys {
  private byDigest = new Map<string, string>();
  private readonly used = new Set<string>();

  constructor(entries: readonly WriteKeyEntry[]) {
    this.replace(entries);
  }

  /** Swaps in a new set of keys (a reloaded keys file); requests in flight keep the old set. */
  replace(entries: readonly WriteKeyEntry[]): void {
    this.byDigest = new Map(entries.map((e) => [e.sha256, e.workspaceId]));
  }

  /** How many keys are configured. */
  get size(): number {
    return this.byDigest.size;
  }

  /** The workspaceId of a key, or undefined when it is not configured. Notes when a known key was used (takeUsed). */
  workspaceOf(writeKey: string): string | undefined {
    const digest = sha256(writeKey);
    const workspaceId = this.byDigest.get(digest);
    if (workspaceId !== undefined) this.used.add(digest);
    return workspaceId;
  }

  /** The digests of the keys used since the last call (the admin topic's `key-used` records: ingest/admission/key-usage.ts). */
  takeUsed(): string[] {
    const used = [...this.used];
    this.used.clear();
    return used;
  }

  /**
   * Reads the key from the headers and, when given, the body's `writeKey` (Segment), and looks
   * it up. Header and body must agree when both are present.
   */
  authenticate(headers: AuthHeaders, bodyWriteKey?: unknown): AuthResult {
    const key = withBodyKey(writeKeyFromHeaders(headers), bodyWriteKey);
    if (!key.ok) return key;
    const workspaceId = this.workspaceOf(key.writeKey);
    return workspaceId === undefined ? { ok: false, reason: "unknown" } : { ok: true, workspaceId };
  }
}

/** True when a body names no writeKey (absent or null: Segment's SDKs send it only in the body form). */
export function namesNoKey(bodyWriteKey: unknown): boolean {
  return bodyWriteKey === undefined || bodyWriteKey === null;
}

/** Combines the header's key with the body's: either alone, or both naming the same key. */
export function withBodyKey(header: WriteKeyResult, bodyWriteKey: unknown): WriteKeyResult {
  if (namesNoKey(bodyWriteKey)) return header;
  if (typeof bodyWriteKey !== "string" || bodyWriteKey === "") return { ok: false, reason: "malformed" };
  if (!header.ok) return header.reason === "missing" ? { ok: true, writeKey: bodyWriteKey } : header;
  return header.writeKey === bodyWriteKey ? header : { ok: false, reason: "conflict" };
}

/** Most `"writeKey"` members scanWriteKeys reads before it leaves the question to the parse. */
const MAX_SCANNED_KEYS = 16;

/** What a JSON text's members named `writeKey` hold, read without parsing it. */
export interface ScannedKeys {
  /** The plain string values of every `"writeKey": "..."` member found, at any depth. */
  keys: string[];
  /**
   * True when the body's top-level writeKey, if it has one, is among `keys`: the text holds no
   * `\u` escape (which could spell the member's name), every `"writeKey"` followed by `:` holds
   * a plain string, and there are at most MAX_SCANNED_KEYS of them. False: only parsing tells.
   */
  complete: boolean;
}

/**
 * Finds the writeKeys a body could name before it is parsed: a native search for the member
 * name, then a look at what follows each. A body of an unknown key is refused on this (no
 * JSON.parse of a whole batch for a 401), wherever in the body the key sits; a body the scan
 * cannot settle is parsed as before. Pure.
 */
export function scanWriteKeys(text: string): ScannedKeys {
  const keys: string[] = [];
  let complete = !text.includes("\\u");
  const name = '"writeKey"';
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + name.length)) {
    let i = at + name.length;
    while (isJsonSpace(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) !== 0x3a) continue; // a value, not a member name
    i++;
    while (isJsonSpace(text.charCodeAt(i))) i++;
    const end = text.charCodeAt(i) === 0x22 ? text.indexOf('"', i + 1) : -1;
    const value = end < 0 ? undefined : text.slice(i + 1, end);
    if (value === undefined || value.includes("\\") || keys.length === MAX_SCANNED_KEYS) {
      complete = false;
      break;
    }
    keys.push(value);
  }
  return { keys, complete };
}

/** JSON's whitespace: space, tab, line feed, carriage return. */
function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
