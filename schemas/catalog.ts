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
 * The `catalog_shape` of a message over its workspace's daily catalog caps (ingest/records/catalog.ts
 * CatalogCaps): 2^53, above every catalogShape (< 2^53) and exact as a JSON number. The catalog's
 * view counts such messages in one row per workspace, type and day instead of a row per name and
 * shape (schemas/clickhouse/catalog.ts); their row in events keeps its name and properties.
 */
export const OVER_CAP_SHAPE = 2 ** 53;

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
 * list: two 32-bit lanes, each folding every entry's source, type and key hash in order. The
 * ingest sends the list of a shape once in a while and this hash always
 * (schemas/clickhouse/catalog.ts). 0: no keys.
 */
export function catalogShape(properties: unknown, traits: unknown, context: unknown): number {
  const lanes = { a: 0x811c9dc5, b: 0x5bd1e995, n: 0 };
  foldKeys(lanes, 1, properties);
  foldKeys(lanes, 2, traits);
  foldKeys(lanes, 3, context);
  return lanes.n === 0 ? 0 : (lanes.b >>> 11) * 0x100000000 + (lanes.a >>> 0);
}

function foldKeys(lanes: { a: number; b: number; n: number }, source: number, value: unknown): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  let n = 0;
  for (const key in value) {
    if (key.length > CATALOG_KEY_CHARS) continue;
    if (++n > CATALOG_KEYS_PER_OBJECT) return;
    lanes.n++;
    const h = keyHash(key);
    const tag = (source << 4) | typeNumber((value as Record<string, unknown>)[key]);
    lanes.a = Math.imul(Math.imul(lanes.a ^ tag, 0x01000193) ^ h.a, 0x01000193);
    lanes.b = Math.imul(Math.imul(lanes.b ^ tag, 0x5bd1e995) ^ h.b, 0x5bd1e995) ^ (lanes.b >>> 15);
  }
}

/** Hashes of keys seen, kept because the same keys come again and again; cleared when full (hostile keys stay bounded). */
const KEY_HASHES = new Map<string, { a: number; b: number }>();
const KEY_HASHES_MAX = 20_000;

/** Two 32-bit FNV-1a-style hashes of a key (with different primes), from KEY_HASHES when seen. */
function keyHash(key: string): { a: number; b: number } {
  let h = KEY_HASHES.get(key);
  if (h === undefined) {
    let a = 0x811c9dc5;
    let b = 0x01000193;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 13);
    }
    if (KEY_HASHES.size >= KEY_HASHES_MAX) KEY_HASHES.clear();
    h = { a, b: Math.imul(b ^ key.length, 0x5bd1e995) };
    KEY_HASHES.set(key, h);
  }
  return h;
}

/** A JSON value's type as a small number (1 string ... 6 null). */
function typeNumber(value: unknown): number {
  if (value === null) return 6;
  switch (typeof value) {
    case "string":
      return 1;
    case "number":
      return 2;
    case "boolean":
      return 3;
    case "object":
      return Array.isArray(value) ? 5 : 4;
    default:
      return 6;
  }
}

/** The code letter of a JSON value's type. */
function typeCode(value: unknown): string {
  if (value === null) return TYPE_CODES.null;
  if (Array.isArray(value)) return TYPE_CODES.array;
  const t = typeof value;
  return t === "string" || t === "number" || t === "boolean" || t === "object" ? TYPE_CODES[t] : TYPE_CODES.null;
}
