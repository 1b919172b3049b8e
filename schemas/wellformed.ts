/**
 * Well-formed strings on the topic: a lone UTF-16 surrogate (what `"🐎".slice(0, 1)` gives in
 * any JavaScript client) becomes U+FFFD, as a browser's UTF-8 decoder would make it, in values
 * and in object keys at any depth. ClickHouse refuses the `\ud83d` escape JSON.stringify writes
 * for one (Code: 25, "missing second part of surrogate pair"), so one such string would
 * otherwise stop the sink. Pure; never throws.
 */

/** `\uD800`-`\uDFFF` written as a JSON escape, in any letter case. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * Whether JSON text may hold a lone surrogate. Raw (unescaped) surrogates cannot come from
 * UTF-8 bytes, so only the escape form needs looking at: a text without one is left alone
 * without walking its parsed value (the common case costs one regex scan).
 */
export function mayHoldLoneSurrogate(jsonText: string): boolean {
  return SURROGATE_ESCAPE.test(jsonText);
}

/**
 * The value with every lone surrogate of every string and object key replaced by U+FFFD.
 * Objects and arrays holding one are rebuilt (own data properties, no prototype setters);
 * the rest are returned as they are. Input is a JSON.parse result (no cycles).
 */
export function wellFormed<T>(value: T): T {
  return fix(value) as T;
}

function fix(value: unknown): unknown {
  if (typeof value === "string") return value.isWellFormed() ? value : value.toWellFormed();
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const fixed = fix(value[i]);
      if (fixed !== value[i]) (copy ??= value.slice())[i] = fixed;
    }
    return copy ?? value;
  }
  let changed = false;
  const entries: [string, unknown][] = [];
  for (const [key, item] of Object.entries(value)) {
    const fixedKey = key.isWellFormed() ? key : key.toWellFormed();
    const fixed = fix(item);
    if (fixedKey !== key || fixed !== item) changed = true;
    entries.push([fixedKey, fixed]);
  }
  // Object.fromEntries defines own properties, so a "__proto__" key stays data.
  return changed ? Object.fromEntries(entries) : value;
}

/**
 * `text` cut to at most `maxChars` UTF-16 code units without splitting a surrogate pair (the
 * pair's first half is dropped with its second): a plain slice of "…🐎" can end in a lone
 * surrogate, which the ingest's rows carry to ClickHouse unparsed and ClickHouse refuses.
 */
export function cutText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const last = text.charCodeAt(maxChars - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? maxChars - 1 : maxChars);
}

/**
 * The path (`properties.amount`, `items[2].price`) of the first number of a parsed JSON value that
 * is not finite, or undefined. `at` is the value's own path ('' for the top).
 */
export function nonFinitePath(value: unknown, at = ""): string | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? undefined : at || "$";
  if (value === null || typeof value !== "object") return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nonFinitePath(value[i], `${at}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(value)) {
    const found = nonFinitePath(child, at === "" ? key : `${at}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}
