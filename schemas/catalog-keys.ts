/**
 * The events column `catalog_keys`: the top-level keys of a message's properties, traits and
 * context with their JSON types, which the catalog reads (schemas/clickhouse/catalog.ts). The
 * ingest lists them because 18.16 cannot list a JSON object's keys; a hostile message cannot
 * make the list long (CATALOG_KEYS_PER_OBJECT). Each entry is two code letters and the key
 * (`psplan`: properties, string, `plan`), a few bytes more than the key on the topic.
 */

/** The code letter of each source (an entry's first letter). */
export const SOURCE_CODES = { properties: "p", traits: "t", context: "c" } as const;

/** The code letter of each JSON type (an entry's second letter). */
export const TYPE_CODES = { string: "s", number: "n", boolean: "b", object: "o", array: "a", null: "z" } as const;
/** Most keys of one object the catalog records per message: a message of 10,000 keys adds 200. */
export const CATALOG_KEYS_PER_OBJECT = 200;
/** Longest key the catalog records, in UTF-16 units; longer keys are left out. */
export const CATALOG_KEY_CHARS = 200;

/**
 * The `catalog_keys` of a row: one entry per top-level key of properties, traits and context,
 * its source's code letter (SOURCE_CODES), its JSON type's (TYPE_CODES) and the key; at most
 * CATALOG_KEYS_PER_OBJECT per object and keys of at most CATALOG_KEY_CHARS.
 */
export function catalogKeys(properties: unknown, traits: unknown, context: unknown): string[] {
  const keys: string[] = [];
  addKeys(keys, SOURCE_CODES.properties, properties);
  addKeys(keys, SOURCE_CODES.traits, traits);
  addKeys(keys, SOURCE_CODES.context, context);
  return keys;
}

function addKeys(keys: string[], source: string, value: unknown): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  let n = 0;
  for (const key in value) {
    if (key.length > CATALOG_KEY_CHARS) continue;
    if (++n > CATALOG_KEYS_PER_OBJECT) return;
    keys.push(source + typeCode((value as Record<string, unknown>)[key]) + key);
  }
}

/**
 * A 53-bit hash of what catalogKeys lists (the same keys, caps and codes), without making the
 * list: two FNV-1a lanes over each entry's codes and key. The ingest sends the list of a shape
 * once in a while and this hash always (schemas/clickhouse/catalog.ts). 0: no keys.
 */
export function catalogShape(properties: unknown, traits: unknown, context: unknown): number {
  const lanes = { a: 0x811c9dc5, b: 0x01000193 ^ 0x5bd1e995, n: 0 };
  foldKeys(lanes, SOURCE_CODES.properties, properties);
  foldKeys(lanes, SOURCE_CODES.traits, traits);
  foldKeys(lanes, SOURCE_CODES.context, context);
  return lanes.n === 0 ? 0 : (lanes.b >>> 11) * 0x100000000 + (lanes.a >>> 0);
}

function foldKeys(lanes: { a: number; b: number; n: number }, source: string, value: unknown): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  let n = 0;
  for (const key in value) {
    if (key.length > CATALOG_KEY_CHARS) continue;
    if (++n > CATALOG_KEYS_PER_OBJECT) return;
    lanes.n++;
    fold(lanes, source.charCodeAt(0));
    fold(lanes, typeCode((value as Record<string, unknown>)[key]).charCodeAt(0));
    for (let i = 0; i < key.length; i++) fold(lanes, key.charCodeAt(i));
    fold(lanes, 0x10000); // a separator no UTF-16 unit equals: no two lists hash alike by concatenation
  }
}

function fold(lanes: { a: number; b: number }, c: number): void {
  lanes.a = Math.imul(lanes.a ^ c, 0x01000193);
  lanes.b = Math.imul(lanes.b ^ c, 0x01000193) ^ (lanes.b >>> 15);
}

/** The code letter of a JSON value's type. */
function typeCode(value: unknown): string {
  if (value === null) return TYPE_CODES.null;
  if (Array.isArray(value)) return TYPE_CODES.array;
  const t = typeof value;
  return t === "string" || t === "number" || t === "boolean" || t === "object" ? TYPE_CODES[t] : TYPE_CODES.null;
}
