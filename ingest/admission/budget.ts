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
 * (503 or 413); an eviction calls the lease's `onEvict`, which the body reader answers.
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

/** The charge that went through: one object for all of them. */
const OK: Charge = Object.freeze({ ok: true });

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
export interface Lease extends Evictable {
  /** True once the budget evicted the body (idle or too slow while others needed the room): answer 408. */
  readonly evicted: boolean;
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

/**
 * What a body reader watches while it reads (ingest/http/body.ts): `onEvict`, when set, is called
 * once if the budget evicts the body. A plain callback, not an AbortSignal: one is made per
 * request, and an AbortController cost each request an EventTarget the young generation kept.
 */
export interface Evictable {
  onEvict: (() => void) | undefined;
}

/** The limits a charge may find full: the whole budget, the unkeyed share, one sender's arriving cap. */
type Room = "budget" | "unkeyed" | "sender";

/** Whether a body still arriving has stopped (idle IDLE_MS) or crawls (under MIN_ARRIVAL_BYTES_PER_SECOND after a second). */
function stalled(lease: BudgetLease, now: number): boolean {
  if (now - lease.lastAt >= IDLE_MS) return true;
  const age = now - lease.openedAt;
  return age >= 1_000 && (lease.arrivingBytes * 1000) / age < MIN_ARRIVAL_BYTES_PER_SECOND;
}

/** Whether evicting `lease` frees room of the kind `room` for `asking`. */
function holdsRoomIn(lease: BudgetLease, room: Room, asking: BudgetLease): boolean {
  if (room === "budget") return true;
  if (room === "unkeyed") return !lease.keyed;
  return lease.sender === asking.sender;
}

/** A lease of an InflightBudget: one object per request, its state in fields. */
class BudgetLease implements Lease {
  bytes = 0;
  /** Bytes charged while arriving (they count against the sender's cap until markArrived). */
  arrivingBytes = 0;
  /** When its last bytes were charged, ms. */
  lastAt: number;
  arrived = false;
  open = true;
  evicted = false;
  onEvict: (() => void) | undefined = undefined;

  constructor(
    private readonly budget: InflightBudget,
    public keyed: boolean,
    readonly sender: string,
    readonly openedAt: number,
  ) {
    this.lastAt = openedAt;
  }

  grow(more: number): Charge {
    return this.budget.grow(this, more);
  }

  markKeyed(): void {
    this.budget.markKeyed(this);
  }

  markArrived(): void {
    if (this.arrived) return;
    this.arrived = true;
    this.budget.leaveArriving(this);
  }

  release(): void {
    this.budget.release(this);
  }

  /** Releases the lease and tells its reader (onEvict). */
  evict(): void {
    this.release();
    this.evicted = true;
    const listener = this.onEvict;
    this.onEvict = undefined;
    listener?.();
  }
}

/** Leases of requests against a byte budget. */
export class InflightBudget {
  private reserved = 0;
  private reservedUnkeyed = 0;
  /** Bytes of bodies still arriving, by sender; a sender with none is not listed. */
  private readonly arriving = new Map<string, number>();
  /** The leases whose bodies are still arriving (eviction candidates). */
  private readonly arrivingLeases = new Set<BudgetLease>();
  /** Bytes requests without a checked writeKey may hold together. */
  private readonly unkeyedCap: number;
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
    unkeyedShare = UNKEYED_SHARE,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.unkeyedCap = Math.floor(maxBytes * unkeyedShare);
  }

  /**
   * A lease of 0 bytes; `keyed` when the request's writeKey was checked from a header; `sender`
   * names who sends it (its workspace when keyed, else its client address): until `markArrived`
   * its bytes count against that sender's cap as well.
   */
  open(keyed: boolean, sender: string): Lease {
    const lease = new BudgetLease(this, keyed, sender, this.now());
    this.arrivingLeases.add(lease);
    return lease;
  }

  /** Which limit refuses `more` bytes to `lease` now, if any: the budget, the unkeyed share, or the sender's cap. */
  private refusedBy(lease: BudgetLease, more: number): Room | undefined {
    if (this.reserved + this.otherHeld() + more > this.maxBytes) return "budget";
    if (!lease.keyed && this.reservedUnkeyed + more > this.unkeyedCap) return "unkeyed";
    if (!lease.arrived && (this.arriving.get(lease.sender) ?? 0) + more > this.perSender) return "sender";
    return undefined;
  }

  /** Lease.grow: charges `more` bytes to `lease`, evicting stalled bodies when room is wanting. */
  grow(lease: BudgetLease, more: number): Charge {
    const capacity = lease.keyed ? this.maxBytes : this.unkeyedCap;
    if (!lease.open || lease.bytes + more > capacity) return { ok: false, reason: "never", capacity };
    const refusal = this.refusedBy(lease, more);
    if (refusal !== undefined && !this.evictFor(refusal, more, lease)) return { ok: false, reason: "busy", capacity };
    lease.bytes += more;
    this.reserved += more;
    if (!lease.keyed) this.reservedUnkeyed += more;
    if (!lease.arrived && more > 0) {
      lease.arrivingBytes += more;
      this.arriving.set(lease.sender, (this.arriving.get(lease.sender) ?? 0) + more);
      lease.lastAt = this.now();
    }
    return OK;
  }

  /** Lease.markKeyed: the lease's bytes leave the unkeyed share. */
  markKeyed(lease: BudgetLease): void {
    if (!lease.open || lease.keyed) return;
    lease.keyed = true;
    this.reservedUnkeyed -= lease.bytes;
  }

  /** The lease is no eviction candidate now, and its arriving bytes leave its sender's share. */
  leaveArriving(lease: BudgetLease): void {
    this.arrivingLeases.delete(lease);
    if (lease.arrivingBytes === 0) return;
    const left = (this.arriving.get(lease.sender) ?? 0) - lease.arrivingBytes;
    if (left > 0) this.arriving.set(lease.sender, left);
    else this.arriving.delete(lease.sender);
    lease.arrivingBytes = 0;
  }

  /** Lease.release: frees every byte of the lease, once. */
  release(lease: BudgetLease): void {
    if (!lease.open) return;
    lease.open = false;
    this.leaveArriving(lease);
    lease.arrived = true;
    this.reserved -= lease.bytes;
    if (!lease.keyed) this.reservedUnkeyed -= lease.bytes;
    lease.bytes = 0;
  }

  /**
   * Evicts idle or slow bodies (see IDLE_MS, MIN_ARRIVAL_BYTES_PER_SECOND) that hold room in the
   * limit that refused `more` bytes to `asking`, the longest idle first, until `refusedBy` finds
   * room or none is left. True when the bytes fit now.
   */
  private evictFor(room: Room, more: number, asking: BudgetLease): boolean {
    const now = this.now();
    const candidates = [...this.arrivingLeases]
      .filter((lease) => lease !== asking && lease.arrivingBytes > 0 && stalled(lease, now) && holdsRoomIn(lease, room, asking))
      .sort((a, b) => a.lastAt - b.lastAt);
    let refusal: Room | undefined = room;
    for (const lease of candidates) {
      lease.evict();
      this.evicted++;
      refusal = this.refusedBy(asking, more);
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
