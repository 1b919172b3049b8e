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
 * And a body that stopped arriving never holds room against one that arrives: when a charge
 * would be refused for want of room, bodies idle for IDLE_MS, or arriving slower than
 * MIN_ARRIVAL_BYTES_PER_SECOND after their first second, are evicted (their requests are
 * answered 408), the longest idle first, until the charge fits. Senders may spread over any
 * number of addresses or forged forwarded addresses: room is held by bytes that keep coming,
 * not by connections.
 * Pure bookkeeping (the clock is passed in): a refused charge is a value, answered by the caller
 * (503 or 413); an eviction aborts the lease's `signal`, which the body reader answers.
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

/**
 * A body that has received nothing for this long, ms, may be evicted when room is needed. SDKs
 * send a body in one go (a 500 KB batch arrives in a few ms on a LAN, well under a second on a
 * mobile link); an attacker's stalled body does not arrive at all.
 */
export const IDLE_MS = 500;

/**
 * A body older than a second that has arrived slower than this, bytes/s, may be evicted when
 * room is needed (a trickle of a byte now and then is not progress). At 64 KiB/s a full 500 KB
 * body takes 7.6 s, inside the 10 s body timeout that refuses it anyway.
 */
export const MIN_ARRIVAL_BYTES_PER_SECOND = 64 * 1024;

/** One request's hold on the budget. */
export interface Lease {
  /** Aborted when the budget evicted the body (idle or too slow while others needed the room): answer 408. */
  readonly signal: AbortSignal;
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

/** The limits a charge may find full: the whole budget, the unkeyed share, one sender's arriving cap. */
type Room = "budget" | "unkeyed" | "sender";

/** What the budget knows of a body still arriving. */
interface Arriving {
  readonly sender: string;
  /** When the lease opened, ms. */
  readonly openedAt: number;
  /** When its last bytes were charged, ms. */
  lastAt: number;
  /** Bytes charged while arriving. */
  readonly bytes: number;
  readonly keyed: boolean;
  /** Releases the lease and aborts its signal. */
  evict(): void;
}

/** Whether a body still arriving has stopped (idle IDLE_MS) or crawls (under MIN_ARRIVAL_BYTES_PER_SECOND after a second). */
function stalled(lease: Arriving, now: number): boolean {
  if (now - lease.lastAt >= IDLE_MS) return true;
  const age = now - lease.openedAt;
  return age >= 1_000 && (lease.bytes * 1000) / age < MIN_ARRIVAL_BYTES_PER_SECOND;
}

/** Whether evicting `lease` frees room of the kind `room` for `asking`. */
function holdsRoomIn(lease: Arriving, room: Room, asking: Arriving): boolean {
  if (room === "budget") return true;
  if (room === "unkeyed") return !lease.keyed;
  return lease.sender === asking.sender;
}

/** Leases of requests against a byte budget. */
export class InflightBudget {
  private reserved = 0;
  private reservedUnkeyed = 0;
  /** Bytes of bodies still arriving, by sender; a sender with none is not listed. */
  private readonly arriving = new Map<string, number>();
  /** The leases whose bodies are still arriving (eviction candidates). */
  private readonly arrivingLeases = new Set<Arriving>();
  /** Bodies evicted so far. */
  evicted = 0;

  /**
   * @param maxBytes the budget, bytes
   * @param otherHeld bytes held elsewhere that count against it (the producer's records)
   * @param perSender bytes one sender's arriving bodies may hold together (`senderCap`)
   * @param unkeyedShare fraction of `maxBytes` requests without a checked writeKey may hold together
   * @param now the clock, ms (performance.now; tests pass their own)
   */
  constructor(
    private readonly maxBytes: number,
    private readonly otherHeld: () => number,
    private readonly perSender = maxBytes,
    private readonly unkeyedShare = UNKEYED_SHARE,
    private readonly now: () => number = () => performance.now(),
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
    const controller = new AbortController();
    const openedAt = this.now();
    const entry: Arriving = {
      sender,
      openedAt,
      lastAt: openedAt,
      get bytes() {
        return arrivingBytes;
      },
      get keyed() {
        return isKeyed;
      },
      evict: () => {
        release();
        controller.abort();
      },
    };
    this.arrivingLeases.add(entry);
    const leaveArriving = () => {
      this.arrivingLeases.delete(entry);
      if (arrivingBytes === 0) return;
      const left = (this.arriving.get(sender) ?? 0) - arrivingBytes;
      if (left > 0) this.arriving.set(sender, left);
      else this.arriving.delete(sender);
      arrivingBytes = 0;
    };
    let arrived = false;
    /** Which limit refuses `more` bytes now, if any: the budget, the unkeyed share, or the sender's cap. */
    const refusedBy = (more: number): Room | undefined => {
      if (this.reserved + this.otherHeld() + more > this.maxBytes) return "budget";
      if (!isKeyed && this.reservedUnkeyed + more > unkeyedCap) return "unkeyed";
      if (!arrived && (this.arriving.get(sender) ?? 0) + more > this.perSender) return "sender";
      return undefined;
    };
    const release = () => {
      if (!open) return;
      open = false;
      leaveArriving();
      arrived = true;
      this.reserved -= bytes;
      if (!isKeyed) this.reservedUnkeyed -= bytes;
      bytes = 0;
    };
    return {
      signal: controller.signal,
      grow: (more) => {
        const capacity = isKeyed ? this.maxBytes : unkeyedCap;
        if (!open || bytes + more > capacity) return { ok: false, reason: "never", capacity };
        const refusal = refusedBy(more);
        if (refusal !== undefined && !this.evictFor(refusal, more, entry, refusedBy)) return { ok: false, reason: "busy", capacity };
        bytes += more;
        this.reserved += more;
        if (!isKeyed) this.reservedUnkeyed += more;
        if (!arrived && more > 0) {
          arrivingBytes += more;
          this.arriving.set(sender, (this.arriving.get(sender) ?? 0) + more);
          entry.lastAt = this.now();
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
      release,
      get bytes() {
        return bytes;
      },
    };
  }

  /**
   * Evicts idle or slow bodies (see IDLE_MS, MIN_ARRIVAL_BYTES_PER_SECOND) that hold room in the
   * limit that refused `more` bytes to `asking`, the longest idle first, until `refusedBy` finds
   * room or none is left. True when the bytes fit now.
   */
  private evictFor(room: Room, more: number, asking: Arriving, refusedBy: (more: number) => Room | undefined): boolean {
    const now = this.now();
    const candidates = [...this.arrivingLeases]
      .filter((lease) => lease !== asking && lease.bytes > 0 && stalled(lease, now) && holdsRoomIn(lease, room, asking))
      .sort((a, b) => a.lastAt - b.lastAt);
    let refusal: Room | undefined = room;
    for (const lease of candidates) {
      lease.evict();
      this.evicted++;
      refusal = refusedBy(more);
      if (refusal === undefined) return true;
      // Room of another kind may still be wanting: candidates that hold none of it do not help it.
      if (refusal !== room && !holdsRoomIn(lease, refusal, asking)) break;
    }
    return refusal === undefined;
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
