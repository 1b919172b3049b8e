/**
 * The charsets a JSON body may declare and how its bytes are then decoded (ingest/http/body.ts reads
 * them). Pure.
 */

/** How a body's bytes are decoded: UTF-8, or Windows-1252 for the Latin-1 labels. */
export type BodyCharset = "utf8" | "windows-1252";

/**
 * The decoding of a Content-Type `charset` label (case-insensitive), or undefined for a label not
 * read here (415 `unsupported_charset`, as koa-bodyparser answers a charset it cannot decode).
 * JSON is UTF-8 (RFC 8259), so no label, `utf-8` and `us-ascii` (a subset; high bytes then read as
 * UTF-8) are UTF-8. The Latin-1 labels are decoded as Windows-1252, as browsers do (WHATWG
 * Encoding: iso-8859-1, latin1 and cp1252 are labels of windows-1252): a server library that
 * declares ISO-8859-1 encoded its text so, and reading it as UTF-8 would store each accented
 * letter as U+FFFD. Other charsets (UTF-16 among them, whose raw surrogates the lone-surrogate
 * check does not look for) are refused rather than guessed.
 */
export function bodyCharset(label: string): BodyCharset | undefined {
  const name = label.trim().toLowerCase();
  if (name === "" || name === "utf-8" || name === "utf8" || ASCII_LABELS.has(name)) return "utf8";
  if (LATIN1_LABELS.has(name)) return "windows-1252";
  return undefined;
}

/** US-ASCII's labels: read as UTF-8, of which ASCII is a subset. */
const ASCII_LABELS = new Set(["ansi_x3.4-1968", "ascii", "us-ascii"]);

/** WHATWG Encoding's other labels of windows-1252 (https://encoding.spec.whatwg.org/#names-and-labels). */
const LATIN1_LABELS = new Set([
  "cp1252",
  "cp819",
  "csisolatin1",
  "ibm819",
  "iso-8859-1",
  "iso-ir-100",
  "iso8859-1",
  "iso88591",
  "iso_8859-1",
  "iso_8859-1:1987",
  "l1",
  "latin1",
  "windows-1252",
  "x-cp1252",
]);
