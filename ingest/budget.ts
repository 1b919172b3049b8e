/**
 * The ingest's in-flight byte budget (INGEST_MAX_INFLIGHT_BYTES): request bodies reserve their
 * size on arrival and release it when answered; records the producer still holds count too.
 * Pure bookkeeping; a request over the budget is refused by the caller (503 + Retry-After).
 */

/** Reservations of request bodies against a byte budget. */
export class InflightBudget {
  private reserved = 0;

  /**
   * @param maxBytes the budget, bytes
   * @param otherHeld bytes held elsewhere that count against it (the producer's records)
   */
  constructor(
    private readonly maxBytes: number,
    private readonly otherHeld: () => number,
  ) {}

  /** Reserves `bytes`; returns the release function, or undefined when over the budget. */
  reserve(bytes: number): (() => void) | undefined {
    if (this.reserved + this.otherHeld() + bytes > this.maxBytes) return undefined;
    this.reserved += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.reserved -= bytes;
    };
  }

  /** Bytes reserved by requests now. */
  get held(): number {
    return this.reserved;
  }
}

/**
 * Bytes to reserve for a request: its Content-Length when the body is not compressed, else the
 * most it may decode to (`maxRequestBytes`).
 */
export function bytesToReserve(contentLength: string, contentEncoding: string, maxRequestBytes: number): number {
  const length = Number(contentLength === "" ? Number.NaN : contentLength);
  const identity = (contentEncoding || "identity").trim().toLowerCase() === "identity";
  return identity && Number.isInteger(length) && length >= 0 ? Math.min(length, maxRequestBytes) : maxRequestBytes;
}
