/**
 * Reads a request body as text: decompressed by node:zlib when it is gzip or deflate (createUnzip
 * tells them apart by their header, as co-body's `inflation` does), each decoded chunk charged
 * before it is kept (so what a request holds follows the bytes that arrived, whatever
 * Content-Length announced), collected, limited and decoded as UTF-8 by raw-body (invalid bytes
 * become U+FFFD), and cut off when the whole body has not arrived by a deadline. Every failure is a
 * named HttpError of errors.ts; the request stream itself is never destroyed, so each refusal can
 * still be answered.
 */
import type { IncomingMessage } from "node:http";
import { Transform } from "node:stream";
import { createUnzip } from "node:zlib";
import getRawBody from "raw-body";
import { bodyAborted, bodyTimeout, HttpError, invalidEncoding, payloadTooLarge } from "./errors";

/** How one body is read. */
export interface BodyOptions {
  /** The request's content coding, lower case: `identity`, `gzip` or `deflate`. */
  encoding: "identity" | "gzip" | "deflate";
  /** Most decoded bytes (MAX_REQUEST_BYTES); past it 413 `payload_too_large`. */
  maxBytes: number;
  /** The whole body must have arrived this many ms after reading starts (INGEST_BODY_TIMEOUT_MS); else 408. */
  timeoutMs: number;
  /** Charges `bytes` more decoded bytes before they are kept; an HttpError refuses them (503, 413). */
  charge: (bytes: number) => HttpError | undefined;
}

/** The body as text; rejects with a named HttpError (400, 408, 413, 503, or the charge's own). */
export async function readBody(req: IncomingMessage, options: BodyOptions): Promise<string> {
  const { encoding, maxBytes, timeoutMs, charge } = options;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const refused = charge(chunk.length);
      if (refused) done(refused);
      else done(null, chunk);
    },
  });
  // Each failure upstream ends the read with its own error; destroying the meter (never the
  // request) makes raw-body reject and lets the refusal be answered.
  const fail = (error: HttpError) => meter.destroy(error);
  const unzip = encoding === "identity" ? undefined : createUnzip();
  const onUnzipError = (error: Error) => fail(invalidEncoding(encoding, error.message));
  const onClose = () => {
    if (!req.complete) fail(bodyAborted());
  };
  const deadline = Date.now() + timeoutMs;
  const timer = setTimeout(() => fail(bodyTimeout(timeoutMs)), timeoutMs);
  req.on("close", onClose);
  if (unzip) {
    unzip.on("error", onUnzipError);
    req.pipe(unzip).pipe(meter);
  } else {
    req.pipe(meter);
  }
  // Content-Length is checked against the limit before anything is read (raw-body's `length`).
  const length = encoding === "identity" ? declaredLength(req.headers["content-length"]) : undefined;
  try {
    return await getRawBody(meter, { limit: maxBytes, encoding: "utf8", ...(length === undefined ? {} : { length }) });
  } catch (error) {
    if (error instanceof HttpError) throw error;
    if ((error as { type?: unknown }).type === "entity.too.large") throw payloadTooLarge(maxBytes);
    throw error;
  } finally {
    clearTimeout(timer);
    req.off("close", onClose);
    req.unpipe();
    if (unzip) {
      unzip.off("error", onUnzipError);
      unzip.on("error", () => {}); // a late zlib error after the answer is of no interest
      unzip.destroy();
    }
    if (!req.complete) discardRest(req, deadline);
  }
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
