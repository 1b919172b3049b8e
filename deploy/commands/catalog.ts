/**
 * `cli catalog [workspaceId] [--json]`: what has arrived, from the event_catalog and property_catalog views
 * (schemas/clickhouse/catalog.ts): each event with its messages and first and last receipt, then
 * each top-level key of properties, traits and context per event with the JSON types seen. Text
 * tables (each cell cut to CELL_WIDTH characters), or with --json one JSON object
 * `{events, properties}` holding the full values (catalogJson: escaped, like the text, so that no
 * name a sender chose acts on the operator's terminal).
 */
import type { Sql } from "../../schemas/clickhouse/client";
import { eventCatalogQuery, propertyCatalogQuery, type EventCatalogRow, type PropertyCatalogRow } from "../../schemas/clickhouse/catalog";

/** Both catalogs of one workspace (or all when `workspaceId` is undefined). Throws on ClickHouse errors. */
export async function readCatalog(
  sql: Sql,
  database: string,
  workspaceId?: string,
): Promise<{ events: EventCatalogRow[]; properties: PropertyCatalogRow[] }> {
  // UInt64 arrives as a number or a string, by engine and settings: always a string here.
  const counted = <T extends EventCatalogRow>(rows: T[]) => rows.map((r) => ({ ...r, count: String(r.count) }));
  const events = counted(await sql.rows<EventCatalogRow>(eventCatalogQuery(database, workspaceId))).map((r) => ({
    ...r,
    over_cap: Number(r.over_cap),
  }));
  const properties = counted(await sql.rows<PropertyCatalogRow>(propertyCatalogQuery(database, workspaceId)));
  return { events, properties };
}

/**
 * The catalog as aligned text: an events table, then a properties table, one line a row. A cell
 * shows its value escaped (cellText) and cut to CELL_WIDTH characters ending in `…`: names and
 * keys come from any writeKey holder, unbounded; `--json` has the full values. Pure.
 */
export function catalogText(catalog: { events: EventCatalogRow[]; properties: PropertyCatalogRow[] }): string {
  // An over-cap row's name is its day (schemas/clickhouse/catalog.ts eventCatalogSelect).
  const label = (r: EventCatalogRow) => (r.over_cap === 1 ? `(over the daily cap) ${r.name}` : r.event || r.name);
  const events = table(
    ["workspace", "type", "event", "messages", "first seen", "last seen"],
    catalog.events.map((r) => [r.workspace_id, r.type, label(r), r.count, r.first_seen, r.last_seen]),
  );
  const properties = table(
    ["workspace", "type", "event", "source", "key", "types", "messages", "first seen", "last seen"],
    catalog.properties.map((r) => [
      r.workspace_id,
      r.type,
      label(r),
      r.source,
      r.key,
      r.types.join("|"),
      r.count,
      r.first_seen,
      r.last_seen,
    ]),
  );
  return `Events\n${events}\n\nProperties\n${properties}\n`;
}

/** Widest a text cell is shown, in UTF-16 units: a longer value ends in `…` at this width. */
export const CELL_WIDTH = 60;

/**
 * Code points a terminal would act on, or that hide or reorder text, which JSON.stringify leaves
 * as they are: DEL and the C1 controls (U+007F-U+009F; U+009B is an 8-bit CSI, U+0085 a line
 * break), the Arabic letter mark U+061C, zero-width U+200B-U+200D, the marks U+200E-U+200F, line
 * and paragraph separators U+2028-U+2029, bidi embeddings and overrides U+202A-U+202E, the word
 * joiner and invisible operators U+2060-U+2064, bidi isolates U+2066-U+2069 (Unicode UAX #9), the
 * deprecated format controls U+206A-U+206F and the zero-width no-break space U+FEFF.
 */
const HIDDEN = /[\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u206f\ufeff]/;

/** HIDDEN, every occurrence. */
const ALL_HIDDEN = new RegExp(HIDDEN.source, "g");

/** A code unit as a JSON \uXXXX escape (lower-case hex, as JSON.stringify writes its own). */
const unicodeEscape = (ch: string): string => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;

/**
 * `value` as JSON text that is safe to print: JSON.stringify's, whose C0 controls, quotes and lone
 * surrogates are escaped already, with every HIDDEN code point written as \uXXXX too. Still valid
 * JSON that parses back to `value`: those code points occur only inside strings, where the
 * escape means the same character. The output of `cli catalog --json` (issue 46, row 7). Pure.
 */
export function safeJson(value: unknown): string {
  return JSON.stringify(value).replace(ALL_HIDDEN, unicodeEscape);
}

/**
 * One cell's text, escaped so a row stays one line, read left to right, and two values that differ
 * look different: C0 controls, `"`, `\` and lone surrogates as JSON.stringify writes them, HIDDEN
 * code points as \uXXXX (lower-case hex, as JSON.stringify's). At most CELL_WIDTH UTF-16 units: a
 * longer text keeps the whole escapes and code points that fit in CELL_WIDTH - 1, then `…`. Pure.
 */
export function cellText(value: string): string {
  const pieces: string[] = [];
  let width = 0;
  for (const ch of value) {
    const piece = HIDDEN.test(ch) ? unicodeEscape(ch) : JSON.stringify(ch).slice(1, -1);
    pieces.push(piece);
    width += piece.length;
    if (width > CELL_WIDTH) break; // too wide already: the rest is not shown
  }
  if (width <= CELL_WIDTH) return pieces.join("");
  let shown = "";
  for (const piece of pieces) {
    if (shown.length + piece.length > CELL_WIDTH - 1) break;
    shown += piece;
  }
  return `${shown}…`;
}

function table(header: string[], rows: string[][]): string {
  const cells = [header, ...rows.map((row) => row.map(cellText))];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
