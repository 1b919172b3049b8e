/**
 * `cli catalog [workspaceId] [--json]`: what has arrived, from the event_catalog and property_catalog views
 * (schemas/clickhouse/catalog.ts): each event with its messages and first and last receipt, then
 * each top-level key of properties, traits and context per event with the JSON types seen. Text
 * tables, or with --json one JSON object `{events, properties}`.
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
  const events = counted(await sql.rows<EventCatalogRow>(eventCatalogQuery(database, workspaceId)));
  const properties = counted(await sql.rows<PropertyCatalogRow>(propertyCatalogQuery(database, workspaceId)));
  return { events, properties };
}

/** The catalog as aligned text: an events table, then a properties table. Pure. */
export function catalogText(catalog: { events: EventCatalogRow[]; properties: PropertyCatalogRow[] }): string {
  const label = (r: EventCatalogRow) => r.event || r.name;
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

function table(header: string[], rows: string[][]): string {
  // A name may hold any character: show control characters escaped, so a row stays one line.
  const cells = [header, ...rows.map((row) => row.map((cell) => JSON.stringify(cell).slice(1, -1)))];
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
