/**
 * A request's body as text (readBody; ingest/http/json-body.ts reads it as JSON): a gzip or deflate body is kept compressed until all of it has arrived (each chunk charged
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
import { bodyAborted, bodyTimeout, bodyTooSlow, HttpError, invalidEncoding, payloadTooLarge } from "./errors";
import type { BodyCharset } from "./charset";
import type { Evictable } from "../admission/budget";

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
  /** Told when the in-flight budget evicts the body (ingest/admission/budget.ts): the read ends with 408 `body_too_slow`. */
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
