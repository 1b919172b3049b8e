/**
 * The JSON body of a request (readJson): the content types and encodings accepted, the nesting
 * limit, the parsed size charged before parsing, the parse. Underneath, it reads the body as
 * text: a gzip or deflate body is kept compressed until all of it has arrived (each chunk charged
 * as it comes), then decompressed by node:zlib (createUnzip tells them apart by their header, as
 * co-body's `inflation` does); each decoded chunk is charged before it is kept (so what a request
 * holds follows the bytes that arrived, whatever Content-Length announced), collected, limited and
 * decoded as UTF-8 by raw-body (invalid bytes become U+FFFD), and cut off when the whole body has
 * not arrived by a deadline. Every failure is a named HttpError of errors.ts; the request stream
 * itself is never destroyed, so each refusal can still be answered.
 */
import type { IncomingMessage } from "node:http";
import { Transform } from "node:stream";
import { createUnzip } from "node:zlib";
import getRawBody from "raw-body";
import type Koa from "koa";
import {
  bodyAborted,
  bodyTimeout,
  bodyTooSlow,
  HttpError,
  invalidEncoding,
  invalidJson,
  noBody,
  payloadTooLarge,
  tooCostly,
  tooDeep,
  unsupportedCharset,
  unsupportedEncoding,
  unsupportedMediaType,
} from "./errors";
import { jsonShape } from "./validate";
import { parsedBytes, parsedLimit } from "./parsed-size";
import { bodyCharset, type BodyCharset } from "./charset";
import { mayHoldHugeNumber, mayHoldLoneSurrogate, nonFinitePath, wellFormed } from "../schemas/wellformed";
import type { Limits } from "./limits";
import type { Evictable } from "./budget";

/** How one body is read. */
export interface BodyOptions {
  /** The request's content coding, lower case: `identity`, `gzip` or `deflate`. */
  encoding: "identity" | "gzip" | "deflate";
  /** How the bytes become text (bodyCharset); default UTF-8. */
  charset?: BodyCharset;
  /** Most decoded bytes (MAX_REQUEST_BYTES); past it 413 `payload_too_large`. */
  maxBytes: number;
  /** The whole body must have arrived this many ms after reading starts (INGEST_BODY_TIMEOUT_MS); else 408. */
  timeoutMs: number;
  /** Charges `bytes` more decoded bytes before they are kept; an HttpError refuses them (503, 413). */
  charge: (bytes: number) => HttpError | undefined;
  /** Told of each decoded chunk as it is decoded, refused or not (the rate limit's bytes bucket). */
  decoded?: (bytes: number) => void;
  /** Told when the in-flight budget evicts the body (ingest/budget.ts): the read ends with 408 `body_too_slow`. */
  eviction?: Evictable;
}

/** The body as text; rejects with a named HttpError (400, 408, 413, 503, or the charge's own). */
export async function readBody(req: IncomingMessage, options: BodyOptions): Promise<string> {
  const { encoding, maxBytes, timeoutMs, charge } = options;
  if (encoding === "identity" && arrivedWhole(req)) return readArrived(req, options);
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      options.decoded?.(chunk.length);
      const refused = charge(chunk.length);
      if (refused) done(refused);
      else done(null, chunk);
    },
  });
  // Each failure upstream ends the read with its own error; destroying the meter (never the
  // request) makes raw-body reject and lets the refusal be answered.
  const fail = (error: HttpError) => meter.destroy(error);
  const unzip = encoding === "identity" ? undefined : createUnzip();
  const hold = unzip === undefined ? undefined : holdUntilEnd(compressedLimit(maxBytes), charge, maxBytes);
  const onHoldError = (error: Error) => fail(error instanceof HttpError ? error : invalidEncoding(encoding, error.message));
  const onUnzipError = (error: Error) => fail(invalidEncoding(encoding, error.message));
  const onClose = () => {
    if (!req.complete) fail(bodyAborted());
  };
  const deadline = Date.now() + timeoutMs;
  const timer = setTimeout(() => fail(bodyTimeout(timeoutMs)), timeoutMs);
  if (options.eviction) options.eviction.onEvict = () => fail(bodyTooSlow());
  req.on("close", onClose);
  if (unzip && hold) {
    hold.on("error", onHoldError);
    unzip.on("error", onUnzipError);
    req.pipe(hold).pipe(unzip).pipe(meter);
  } else {
    req.pipe(meter);
  }
  // Content-Length is checked against the limit before anything is read (raw-body's `length`).
  const length = encoding === "identity" ? declaredLength(req.headers["content-length"]) : undefined;
  try {
    return await getRawBody(meter, { limit: maxBytes, encoding: options.charset ?? "utf8", ...(length === undefined ? {} : { length }) });
  } catch (error) {
    if (error instanceof HttpError) throw error;
    if ((error as { type?: unknown }).type === "entity.too.large") throw payloadTooLarge(maxBytes);
    throw error;
  } finally {
    clearTimeout(timer);
    if (options.eviction) options.eviction.onEvict = undefined;
    req.off("close", onClose);
    req.unpipe();
    if (hold) {
      hold.off("error", onHoldError);
      hold.on("error", () => {});
      hold.destroy();
    }
    if (unzip) {
      unzip.off("error", onUnzipError);
      unzip.on("error", () => {}); // a late zlib error after the answer is of no interest
      unzip.destroy();
    }
    if (!req.complete) discardRest(req, deadline);
  }
}

/**
 * A plain body that had arrived whole before reading began (a small body comes with its headers):
 * its bytes, all buffered in the request, are charged at once, and it is read with no deadline,
 * abort or eviction to watch, and no stream between the request and raw-body. What it is charged
 * and told (`decoded`) is what the chunk-by-chunk read would have charged; a Content-Length over
 * the limit is 413 before anything is charged or told, as raw-body answers it.
 */
async function readArrived(req: IncomingMessage, options: BodyOptions): Promise<string> {
  const { maxBytes } = options;
  const length = req.readableLength;
  if (length > maxBytes) throw payloadTooLarge(maxBytes);
  options.decoded?.(length);
  const refused = options.charge(length);
  if (refused) throw refused;
  return getRawBody(req, { limit: maxBytes, length, encoding: options.charset ?? "utf8" });
}

/**
 * Whether the whole body is buffered in the request, unread: a Content-Length body (not chunked)
 * of which every byte is there. node:http may run the handler before it marks the request
 * `complete`, so the bytes are counted instead.
 */
function arrivedWhole(req: IncomingMessage): boolean {
  const length = declaredLength(req.headers["content-length"]);
  return length !== undefined && length > 0 && req.readableLength === length && !req.readableFlowing;
}

/**
 * Most compressed bytes a body of at most `maxBytes` decoded bytes may take: deflate's stored
 * blocks (incompressible data) add 5 bytes per 65,535, gzip 18 in all; 1% and 1 KB leave room.
 */
function compressedLimit(maxBytes: number): number {
  return Math.ceil(maxBytes * 1.01) + 1_024;
}

/**
 * A stage that keeps a compressed body's chunks, each charged as it arrives, and passes them on
 * only once the whole body is here: a client that stalls holds what it sent, not what it would
 * inflate to (a few hundred bytes of gzip inflate to the 500 KB limit). Past `limit` compressed
 * bytes it fails with 413 `payload_too_large` (of `maxBytes` decoded).
 */
function holdUntilEnd(limit: number, charge: BodyOptions["charge"], maxBytes: number): Transform {
  const chunks: Buffer[] = [];
  let held = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      held += chunk.length;
      if (held > limit) return done(payloadTooLarge(maxBytes));
      const refused = charge(chunk.length);
      if (refused) return done(refused);
      chunks.push(chunk);
      done();
    },
    flush(done) {
      for (const chunk of chunks.splice(0)) this.push(chunk);
      done();
    },
  });
}

/** Least time a refused body's rest may take to be discarded, ms, even when its deadline has passed. */
const DISCARD_GRACE_MS = 1_000;

/**
 * After a refusal, the rest of the body is read and dropped (holding nothing), so the connection
 * can serve the client's next request, as node:http does for a body nobody read; a body still
 * unfinished at its deadline (or DISCARD_GRACE_MS from now, if later) closes the connection.
 */
function discardRest(req: IncomingMessage, deadline: number): void {
  req.resume();
  const guard = setTimeout(() => req.destroy(), Math.max(deadline - Date.now(), DISCARD_GRACE_MS));
  req.once("close", () => clearTimeout(guard));
}

/** A Content-Length header as a number, when it is one. */
function declaredLength(header: string | undefined): number | undefined {
  if (header === undefined || !/^\d+$/.test(header)) return undefined;
  return Number(header);
}

/**
 * Content-Types whose body is read as JSON: sendBeacon can only send text/plain, and
 * RudderStack's Node SDK labels its (gzipped) JSON application/x-www-form-urlencoded.
 */
const JSON_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"] as const;

/**
 * Body encodings accepted (RFC 9110 content codings, case-insensitive; x-gzip is gzip:
 * https://www.rfc-editor.org/rfc/rfc9110#section-8.4.1.3), each mapped to the name
 * ingest/body.ts reads; limits count decoded bytes.
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
   * body whose writeKey is surely unknown: ingest/auth.ts scanWriteKeys).
   */
  beforeParse?: (text: string) => HttpError | undefined;
}

/**
 * Checks Content-Type and Content-Encoding, reads the body (ingest/body.ts: each decoded chunk
 * goes through `charge` as it arrives; 408 past `bodyTimeoutMs` or when evicted), lets
 * `beforeParse` refuse the text, refuses nesting over the limit, charges the estimated size of
 * the parsed value (ingest/parsed-size.ts) before parsing, parses it (failures are 400), and replaces
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
  if (mayHoldHugeNumber(text) && nonFinitePath(body) !== undefined) ctx.state.nonFinite = true;
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
