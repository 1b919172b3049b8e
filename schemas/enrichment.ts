/**
 * The columns the ingest derives from a message's context (ingest/records/enrich.ts): part of every events
 * row and of every per-type view.
 */

/** desktop, mobile, tablet, bot, or other (a console, TV, wearable, an app, or nothing known). */
export type DeviceType = "desktop" | "mobile" | "tablet" | "bot" | "other";

/** The enrichment of one message; '' (0, other) where its source is missing or unreadable. */
export interface Enrichment {
  /** From context.userAgent: the browser (Chrome), its version (131.0.0.0), the OS (Windows; else context.os.name). */
  browser: string;
  browser_version: string;
  os: string;
  device_type: DeviceType;
  /** 1 for a crawler or tool (isbot): stored and flagged, never dropped. */
  is_bot: 0 | 1;
  /** ISO 3166-1 alpha-2 of context.ip (GB), looked up before IP_ANONYMIZE. */
  country: string;
}

/** The enrichment columns, in the events table's order. */
export const ENRICHMENT_COLUMNS = [
  "browser",
  "browser_version",
  "os",
  "device_type",
  "is_bot",
  "country",
] as const satisfies readonly (keyof Enrichment)[];

/** The values when nothing is known (no user agent, no address, no database). */
export const NO_ENRICHMENT: Enrichment = Object.freeze({
  browser: "",
  browser_version: "",
  os: "",
  device_type: "other",
  is_bot: 0,
  country: "",
});
