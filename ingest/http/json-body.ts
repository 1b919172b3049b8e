/**
 * A request's body as JSON (readJson): the content types and encodings accepted, then the body
 * read as text (ingest/http/body.ts readBody), the nesting limit, the parsed size charged before
 * parsing, the parse, and what JSON.parse cannot keep as sent (lone surrogates, numbers past
 * ±1.8e308). Every refusal is a named HttpError of errors.ts.
 */
import type Koa from "koa";
import {
  HttpError,
  invalidJson,
  noBody,
  tooCostly,
  tooDeep,
  unsupportedCharset,
  unsupportedEncoding,
  unsupportedMediaType,
} from "./errors";
import { jsonShape } from "../records/validate";
import { parsedBytes, parsedLimit } from "./parsed-size";
import { bodyCharset } from "./charset";
import { mayHoldLoneSurrogate, nonFinitePath, wellFormed } from "../../schemas/wellformed";
import type { Limits } from "../admission/limits";
import type { Evictable } from "../admission/budget";
import { readBody } from "./body";

/**
 * Content-Types whose body is read as JSON: sendBeacon can only send text/plain, and
 * RudderStack's Node SDK labels its (gzipped) JSON application/x-www-form-urlencoded.
 */
const JSON_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"] as const;

/**
 * Body encodings accepted (RFC 9110 content codings, case-insensitive; x-gzip is gzip:
 * https://www.rfc-editor.org/rfc/rfc9110#section-8.4.1.3), each mapped to the name
 * ingest/http/body.ts reads; limits count decoded bytes.
 */
const ENCODINGS = new Map<string, "identity" | "gzip" | "deflate">([
  ["identity", "identity"],
  ["gzip", "gzip"],
  ["x-gzip", "gzip"],
  ["deflate", "deflate"],
]);

/** How readJson reads one body, beside the request limits. */
export interface JsonReadOptions {
  /** The whole body must arrive within this many ms (INGEST_BODY_TIMEOUT_MS); else 408. */
  bodyTimeoutMs: number;
  /** Charges bytes before they are kept (BodyOptions), then the parsed size's estimate. */
  charge: (bytes: number) => HttpError | undefined;
  /** Told of each decoded chunk (BodyOptions). */
  decoded?: (bytes: number) => void;
  /** Called once the whole body has been read, before the parsed size is charged. */
  arrived?: () => void;
  /** Told when the budget evicts the body (BodyOptions): 408. */
  eviction?: Evictable;
  /**
   * Looks at the text before it is scanned and parsed; an HttpError refuses the body there (a
   * body whose writeKey is surely unknown: ingest/admission/auth.ts scanWriteKeys).
   */
  beforeParse?: (text: string) => HttpError | undefined;
}

/**
 * Checks Content-Type and Content-Encoding, reads the body (ingest/http/body.ts: each decoded chunk
 * goes through `charge` as it arrives; 408 past `bodyTimeoutMs` or when evicted), lets
 * `beforeParse` refuse the text, refuses nesting over the limit, charges the estimated size of
 * the parsed value (ingest/http/parsed-size.ts) before parsing, parses it (failures are 400), and replaces
 * lone surrogates with U+FFFD (as a browser decodes them; ClickHouse refuses them); a body holding
 * a number JSON.parse read as Infinity sets `ctx.state.nonFinite` (routes.ts withoutNonFinite).
 */
export async function readJson(ctx: Koa.Context, limits: Limits, options: JsonReadOptions): Promise<Record<string, unknown> | undefined> {
  const { charge } = options;
  // Analytics-CSharp posts its gzipped JSON with no Content-Type at all: read it as JSON.
  if (ctx.get("Content-Type") === "" && ctx.request.length !== 0) ctx.req.headers["content-type"] = "application/json";
  const media = mediaOf(ctx);
  if (media === undefined) throw noBody();
  if (media.type === false) throw unsupportedMediaType();
  const charset = bodyCharset(media.charset);
  if (charset === undefined) throw unsupportedCharset(media.charset);
  const encoding = (ctx.get("Content-Encoding") || "identity").trim().toLowerCase();
  const known = ENCODINGS.get(encoding);
  if (known === undefined) throw unsupportedEncoding(encoding);
  const text = await readBody(ctx.req, {
    encoding: known,
    charset,
    maxBytes: limits.maxRequestBytes,
    timeoutMs: options.bodyTimeoutMs,
    charge,
    ...(options.decoded ? { decoded: options.decoded } : {}),
    ...(options.eviction ? { eviction: options.eviction } : {}),
  });
  options.arrived?.();
  const early = options.beforeParse?.(text);
  if (early) throw early;
  const shape = jsonShape(text, limits.maxJsonDepth);
  if (shape.tooDeep) throw tooDeep(limits);
  const cost = parsedBytes(shape);
  const most = parsedLimit(limits.maxRequestBytes);
  if (cost > most) throw tooCostly(cost, most);
  const refused = charge(cost);
  if (refused) throw refused;
  const body = parseTopLevel(text, limits);
  // A number past ±1.8e308 parsed as Infinity: ctx.state.nonFinite tells the route to refuse its item.
  if (shape.mayOverflow && nonFinitePath(body) !== undefined) ctx.state.nonFinite = true;
  return mayHoldLoneSurrogate(text) ? wellFormed(body) : body;
}

/** What a Content-Type header says of a body: the JSON_TYPES entry it matches (false: none), and its charset parameter ('' without one). */
interface Media {
  type: string | false;
  charset: string;
}

/** Content-Type headers seen lately and what they said: most clients send one of a few, on every request. */
const recentMedia = new Map<string, Media>();
const RECENT_MEDIA = 64;

/**
 * The request's Media, undefined when it has no body (no Content-Length, no Transfer-Encoding:
 * type-is's rule, which Koa's `request.is` applies). Parsed by Koa (type-is, content-type) the
 * first time a header is seen, then remembered.
 */
function mediaOf(ctx: Koa.Context): Media | undefined {
  const { headers } = ctx.req;
  if (headers["transfer-encoding"] === undefined && Number.isNaN(Number(headers["content-length"] ?? Number.NaN))) return undefined;
  const header = headers["content-type"] ?? "";
  let media = recentMedia.get(header);
  if (media === undefined) {
    const type = ctx.request.is(...JSON_TYPES);
    if (type === null) return undefined;
    media = { type, charset: ctx.request.charset };
    if (recentMedia.size >= RECENT_MEDIA) recentMedia.clear();
    recentMedia.set(header, media);
  }
  return media;
}

/** JSON whitespace, then the `{` or `[` a body must start with. */
const OBJECT_OR_ARRAY = /^[ \t\n\r]*[{[]/;
const BLANK = /^[ \t\n\r]*$/;

/**
 * The parsed body; its top level must be an object or an array (as co-body's strict mode had
 * it). A blank body is 400 `invalid_json` ("no body"), a parse failure 400 naming the reason.
 * JSON.parse keeps `__proto__` keys as plain own data, which is what the client sent; nothing
 * here copies input keys onto a prototype-bearing object by assignment (spreads define own
 * properties), so they stay data end to end.
 */
function parseTopLevel(text: string, limits: Limits): Record<string, unknown> {
  if (!OBJECT_OR_ARRAY.test(text)) throw BLANK.test(text) ? noBody() : invalidJson("the top level must be an object or an array");
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    // Nesting is checked before parsing; a stack overflow here would still be nesting.
    if (error instanceof RangeError) throw tooDeep(limits);
    throw invalidJson((error as Error).message);
  }
}
