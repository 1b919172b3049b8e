/**
 * The events column `catalog_keys`: the top-level keys of a message's properties, traits and
 * context with their JSON types, which the catalog's materialized view reads
 * (schemas/clickhouse/catalog.ts). The ingest lists them because 18.16 cannot list a JSON
 * object's keys; a hostile message cannot make the list long (CATALOG_KEYS_PER_OBJECT).
 */
/** Most keys of one object the catalog records per message: a message of 10,000 keys adds 200. */
export const CATALOG_KEYS_PER_OBJECT = 200;
/** Longest key the catalog records, in UTF-16 units; longer keys are left out. */
export const CATALOG_KEY_CHARS = 200;

/**
 * The `catalog_keys` of a row: one `<source>:<type>:<key>` entry per top-level key of properties,
 * traits and context (source one of those three; type string, number, boolean, object, array or
 * null, as JSON names them), at most CATALOG_KEYS_PER_OBJECT per object and keys of at most
 * CATALOG_KEY_CHARS. The catalog's materialized view (schemas/clickhouse/catalog.ts) splits them.
 */
export function catalogKeys(properties: unknown, traits: unknown, context: unknown): string[] {
  const keys: string[] = [];
  addKeys(keys, "properties", properties);
  addKeys(keys, "traits", traits);
  addKeys(keys, "context", context);
  return keys;
}

function addKeys(keys: string[], source: string, value: unknown): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  let n = 0;
  for (const key in value) {
    if (key.length > CATALOG_KEY_CHARS) continue;
    if (++n > CATALOG_KEYS_PER_OBJECT) return;
    keys.push(`${source}:${jsonType((value as Record<string, unknown>)[key])}:${key}`);
  }
}

/** A JSON value's type as JSON names it. */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const t = typeof value;
  return t === "string" || t === "number" || t === "boolean" || t === "object" ? t : "null";
}
