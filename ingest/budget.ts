/**
 * The ingest's in-flight byte budget (INGEST_MAX_INFLIGHT_BYTES). Each request holds a lease
 * that grows with the bytes of its body as they arrive (never with what Content-Length
 * announces) and, before the body is parsed, by an estimate of what parsing will make of it;
 * the lease is released when the request is answered. Records the producer still holds count
 * against the same budget. Requests whose writeKey is not known yet (no key header: it may be in
 * the body) share only part of the budget, so clients without a key cannot take all of it. And
 * the bodies one sender has still arriving (a workspace's, by its key header; else a client
 * address's) hold at most a sender's cap together: a body stalled halfway costs its sender
 * nothing but a socket, so without it one sender could fill the budget with bodies that never
 * end (until the body timeout) and every other workspace would be answered 503.
 * Pure bookkeeping: a refused charge is a value, answered by the caller (503 or 413).
 */

/**
 * Share of the budget that requests without a checked writeKey may hold together. The rest stays
 * for requests whose key header was checked before their body was read.
 */
export const UNKEYED_SHARE = 0.5;

/**
 * Share of the budget that one sender's bodies still arriving may hold together (see
 * `senderCap`): 4 MiB of the default 32 MiB, eight 500 KB bodies at once.
 */
export const SENDER_SHARE = 0.125;

/**
 * The bytes one sender's arriving bodies may hold together: SENDER_SHARE of the budget, but room
 * for at least two whole bodies of `maxRequestBytes` each with its compressed form (a gzip body's
 * chunks are held until it ends, then inflated), and never more than the budget.
 */
export function senderCap(maxBytes: number, maxRequestBytes: number): number {
  return Math.min(maxBytes, Math.max(Math.floor(maxBytes * SENDER_SHARE), 4 * maxRequestBytes));
}

/**
 * The outcome of charging bytes to a lease: ok, `busy` (the budget or the unkeyed share is full
 * now: 503 + Retry-After), or `never` (this request alone would pass what it may ever hold: 413).
 */
export type Charge = { ok: true } | { ok: false; reason: "busy" | "never"; capacity: number };

/** One request's hold on the budget. */
export interface Lease {
  /** Charges `bytes` more. A refused charge changes nothing. */
  grow(bytes: number): Charge;
  /** The request's writeKey is now checked (it was in the body): its bytes leave the unkeyed share. */
  markKeyed(): void;
  /** The body has arrived whole: its bytes leave its sender's arriving share (they stay in the budget). */
  markArrived(): void;
  /** Frees every byte of the lease; later calls, and later charges, do nothing. */
  release(): void;
  /** Bytes held now. */
  readonly bytes: number;
}

/** Leases of requests against a byte budget. */
export class InflightBudget {
  private reserved = 0;
  private reservedUnkeyed = 0;
  /** Bytes of bodies still arriving, by sender; a sender with none is not listed. */
  private readonly arriving = new Map<string, number>();

  /**
   * @param maxBytes the budget, bytes
   * @param otherHeld bytes held elsewhere that count against it (the producer's records)
   * @param perSender bytes one sender's arriving bodies may hold together (`senderCap`)
   * @param unkeyedShare fraction of `maxBytes` requests without a checked writeKey may hold together
   */
  constructor(
    private readonly maxBytes: number,
    private readonly otherHeld: () => number,
    private readonly perSender = maxBytes,
    private readonly unkeyedShare = UNKEYED_SHARE,
  ) {}

  /**
   * A lease of 0 bytes; `keyed` when the request's writeKey was checked from a header; `sender`
   * names who sends it (its workspace when keyed, else its client address): until `markArrived`
   * its bytes count against that sender's cap as well.
   */
  open(keyed: boolean, sender: string): Lease {
    let bytes = 0;
    let arrivingBytes = 0;
    let isKeyed = keyed;
    let open = true;
    const unkeyedCap = Math.floor(this.maxBytes * this.unkeyedShare);
    const leaveArriving = () => {
      if (arrivingBytes === 0) return;
      const left = (this.arriving.get(sender) ?? 0) - arrivingBytes;
      if (left > 0) this.arriving.set(sender, left);
      else this.arriving.delete(sender);
      arrivingBytes = 0;
    };
    let arrived = false;
    return {
      grow: (more) => {
        const capacity = isKeyed ? this.maxBytes : unkeyedCap;
        if (!open || bytes + more > capacity) return { ok: false, reason: "never", capacity };
        if (this.reserved + this.otherHeld() + more > this.maxBytes) return { ok: false, reason: "busy", capacity };
        if (!isKeyed && this.reservedUnkeyed + more > unkeyedCap) return { ok: false, reason: "busy", capacity };
        const senderHeld = arrived ? 0 : (this.arriving.get(sender) ?? 0);
        if (!arrived && senderHeld + more > this.perSender) return { ok: false, reason: "busy", capacity };
        bytes += more;
        this.reserved += more;
        if (!isKeyed) this.reservedUnkeyed += more;
        if (!arrived) {
          arrivingBytes += more;
          this.arriving.set(sender, senderHeld + more);
        }
        return { ok: true };
      },
      markKeyed: () => {
        if (!open || isKeyed) return;
        isKeyed = true;
        this.reservedUnkeyed -= bytes;
      },
      markArrived: () => {
        if (arrived) return;
        arrived = true;
        leaveArriving();
      },
      release: () => {
        if (!open) return;
        open = false;
        leaveArriving();
        arrived = true;
        this.reserved -= bytes;
        if (!isKeyed) this.reservedUnkeyed -= bytes;
        bytes = 0;
      },
      get bytes() {
        return bytes;
      },
    };
  }

  /** Bytes held by requests now. */
  get held(): number {
    return this.reserved;
  }

  /** Bytes held now by requests without a checked writeKey. */
  get heldUnkeyed(): number {
    return this.reservedUnkeyed;
  }

  /** Bytes of `sender`'s bodies still arriving. */
  arrivingOf(sender: string): number {
    return this.arriving.get(sender) ?? 0;
  }

  /** Senders with bodies still arriving (the map stays as small as the requests open now). */
  get senders(): number {
    return this.arriving.size;
  }
}

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
