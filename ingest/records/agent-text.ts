/**
 * The part of a user agent ua-parser-js is given to read (ingest/records/enrich.ts): repeats cut, then
 * its first 350 characters. Pure; never throws.
 */
import { cutText } from "../../schemas/wellformed";

/** Characters of a user agent parsed: ua-parser-js 1.x's own UA_MAX_LENGTH. */
const PARSED_USER_AGENT_CHARS = 350;

/** Copies of one character kept in a run of it (no real user agent has a longer run). */
const MAX_CHAR_RUN = 8;

/**
 * Copies of a token of 2 to MAX_TOKEN_CHARS characters kept where it repeats back to back: real
 * agents repeat one at most 3 times (".0" in "120.0.0.0"); test/fixtures/user-agents.txt.
 */
const MAX_TOKEN_RUN = 3;

/** Longest repeated token cut; a longer one fits fewer than 10 copies into what is parsed. */
const MAX_TOKEN_CHARS = 32;

/** A run of one character longer than MAX_CHAR_RUN. */
const LONG_RUN = /(.)\1{8,}/gs;

/** Characters between the places repeatedTokens looks for a repeat (see there). */
const PROBE_STEP = 16;

/**
 * The text of a user agent ua-parser-js reads: runs of one character cut to MAX_CHAR_RUN copies,
 * runs of a longer token (2 to MAX_TOKEN_CHARS characters) to MAX_TOKEN_RUN copies, then the
 * first PARSED_USER_AGENT_CHARS characters (isbot, 2-13 us on any agent, reads it whole: a long
 * run is one of its signs of a bot). ua-parser-js's patterns slow down on repeats: 350 spaces
 * cost 0.3-1 ms against 40-90 us for a real agent (820 padded agents held the event loop 287 ms),
 * and "Android" x 48 costs 0.5 ms (issue 46, row 3: 1,100 such agents, 600 ms); cut, 20-80 us.
 * What is stored is the agent as sent.
 */
export function parsedAgentText(userAgent: string): string {
  let text = userAgent.replace(LONG_RUN, (_run, c: string) => c.repeat(MAX_CHAR_RUN));
  for (const period of repeatedTokens(text)) text = cutRepeats(text, period);
  return cutText(text, PARSED_USER_AGENT_CHARS);
}

/**
 * The lengths (2 to MAX_TOKEN_CHARS, ascending) of the tokens seen repeated back to back at least
 * MAX_TOKEN_RUN times. A look every PROBE_STEP characters, with the engine's own indexOf, costs
 * 1-3 us where scanning every period at every character cost as much as the parse: it finds every
 * run of a token that spans its first MAX_TOKEN_RUN copies plus PROBE_STEP characters (a token of
 * 7 characters repeated 6 times or more; cut, 3 are kept), which is what slows the parser down.
 */
function repeatedTokens(text: string): number[] {
  const found = new Set<number>();
  for (let at = 0; at + 4 <= text.length; at += PROBE_STEP) {
    const probe = text.slice(at, at + 4);
    for (let next = text.indexOf(probe, at + 1); next !== -1 && next - at <= MAX_TOKEN_CHARS; next = text.indexOf(probe, next + 1)) {
      const period = next - at;
      if (period < 2 || found.has(period) || at + MAX_TOKEN_RUN * period > text.length) continue;
      const token = text.slice(at, next);
      let copies = 1;
      while (copies < MAX_TOKEN_RUN && text.startsWith(token, at + copies * period)) copies++;
      if (copies === MAX_TOKEN_RUN && !repeatsShorter(text, at, period)) found.add(period);
    }
  }
  return [...found].sort((x, y) => x - y);
}

/**
 * `text` with every run of more than MAX_TOKEN_RUN copies of a `period`-character token cut to
 * MAX_TOKEN_RUN copies. A token that is itself a shorter token repeated ("aaaa", "abab") is left to
 * that token's period. One pass comparing each character with the one `period` further: O(length).
 */
function cutRepeats(text: string, period: number): string {
  const keep = MAX_TOKEN_RUN;
  const cutFrom = (keep + 1) * period; // characters of a run that holds more than `keep` copies
  let out = "";
  let copiedTo = 0;
  let start = 0; // where the current run of text[i] === text[i + period] began
  const last = text.length - period;
  for (let i = 0; i <= last; i++) {
    if (i < last && text.charCodeAt(i) === text.charCodeAt(i + period)) continue;
    if (i + period - start < cutFrom) {
      start = i + 1;
      continue;
    }
    // text[start, i + period) repeats its first `period` characters; a run starts at most
    // period - 1 characters before the end of the last one, whose cut part is not read again.
    const from = Math.max(start, copiedTo);
    const copies = Math.floor((i + period - from) / period);
    if (copies * period >= cutFrom && !repeatsShorter(text, from, period)) {
      out += text.slice(copiedTo, from + keep * period);
      copiedTo = from + copies * period;
    }
    start = i + 1;
  }
  return copiedTo === 0 ? text : out + text.slice(copiedTo);
}

/** Whether text[start, start + period) is a shorter token repeated (its run is cut at that period). */
function repeatsShorter(text: string, start: number, period: number): boolean {
  for (let d = 1; d < period; d++) {
    if (period % d !== 0) continue;
    let same = true;
    for (let j = start + d; j < start + period && same; j++) same = text.charCodeAt(j) === text.charCodeAt(j - d);
    if (same) return true;
  }
  return false;
}
