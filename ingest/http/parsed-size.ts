/**
 * What JSON.parse makes of a body, estimated from counts of its text before it is parsed: the
 * in-flight budget (ingest/admission/budget.ts) is charged this much, and a body whose estimate passes
 * MAX_PARSED_FACTOR times MAX_REQUEST_BYTES is refused 413 unparsed. Pure.
 */

/**
 * Bytes JSON.parse allocates for one object or array, beyond its text: an empty object in an
 * array measured 64 bytes on Node 20 (64-bit V8), an empty array 40.
 */
export const CONTAINER_BYTES = 64;

/**
 * Bytes per value after the first in an object or array (one per `,` or `:` outside strings):
 * a slot plus a small value. Measured on Node 20: 8 per small-number element, 20 per property of
 * typical Segment events, 34 per property of a 50,000-key object; 16 is between.
 */
export const VALUE_BYTES = 16;

/** Counts of a JSON text that drive what parsing it allocates (see `jsonShape` in validate.ts). */
export interface JsonCounts {
  /** UTF-16 code units of the text. */
  chars: number;
  /** `{` and `[` outside strings. */
  containers: number;
  /** `,` and `:` outside strings. */
  separators: number;
}

/**
 * Estimated bytes of the value JSON.parse makes of a text, from its counts: the text's length
 * (strings are copied out of it) plus CONTAINER_BYTES per object or array plus VALUE_BYTES per
 * separator. `{"batch":[{},{},...]}` (3 bytes per object) comes to about 28 times its length;
 * measured, V8 allocates 21 times. A body of typical Segment events comes to about 4 times;
 * measured 1.8.
 */
export function parsedBytes(counts: JsonCounts): number {
  return counts.chars + CONTAINER_BYTES * counts.containers + VALUE_BYTES * counts.separators;
}

/**
 * The most a body may cost parsed (`parsedBytes`), as a multiple of MAX_REQUEST_BYTES: 16 times
 * (8 MB at Segment's 500 KB). Segment events come to 2-8 times their length by `parsedBytes`;
 * bodies made mostly of empty objects or arrays, 28 times. Past it the body is refused (413)
 * before JSON.parse spends the time and memory on it.
 */
export const MAX_PARSED_FACTOR = 16;

/** The most bytes one body may cost parsed (see MAX_PARSED_FACTOR). */
export function parsedLimit(maxRequestBytes: number): number {
  return MAX_PARSED_FACTOR * maxRequestBytes;
}
