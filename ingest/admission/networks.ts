/**
 * What a request whose writeKey is not known yet may cost, by client network. Until a key is
 * checked, a request is anyone's: its body is read, inflated and scanned for a `writeKey` at the
 * expense of every workspace. So the work done for such requests is charged, before and while it
 * is done, to the client's network (IPv4 /24, IPv6 /64: one host has a whole /64, and a few
 * addresses of one /24 are the cheapest a sender can spread over), and to the process:
 *
 * - `failures`, per network: one token per authentication failure (a 401, an unknown key in a
 *   settings lookup). Empty, every request of the network that names a key is answered 429
 *   before its key is looked up, valid or not: throttling only the wrong keys would still tell
 *   a guesser which key is right.
 * - `bytes`, per network and for the process: the bytes a request without a checked key makes
 *   the ingest receive and inflate, charged as they come; given back once its key checks out
 *   (an SDK that puts its key in the body pays nothing in the end). A network whose bucket is
 *   empty is answered 429 before its body is read, or in the middle of it. The process bucket
 *   bounds the work many networks make together: while it is empty, only networks in good
 *   standing (no failure and no unreturned byte lately) are read.
 *
 * Pure: time is passed in, and a refusal is a value (`Take`) answered 429 with Retry-After.
 * Per process, like the workspaces' rate limits. Memory is bounded: at most `maxNetworks`
 * networks are remembered (the least recently seen forgotten).
 */
import ipaddr from "ipaddr.js";
import { TokenBuckets } from "./ratelimit";

/**
 * The client network of an address: `v4:a.b.c.0/24` or `v6:xxxx:xxxx:xxxx:xxxx::/64`; an IPv6
 * address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`) is read as that IPv4. An
 * address that does not parse (a Unix socket, an empty string) is its own network.
 */
export function networkOf(ip: string): string {
  let network = recentNetworks.get(ip);
  if (network === undefined) {
    network = parseNetwork(ip);
    // Bounded: a full memo starts again (forged forwarded addresses only make it parse more often).
    if (recentNetworks.size >= RECENT_NETWORKS) recentNetworks.clear();
    recentNetworks.set(ip, network);
  }
  return network;
}

/** Addresses whose network is remembered (each request of a client would parse its address again). */
const RECENT_NETWORKS = 4_096;
const recentNetworks = new Map<string, string>();

/** networkOf, parsed. */
function parseNetwork(ip: string): string {
  if (!ipaddr.isValid(ip)) return `raw:${ip}`;
  let address = ipaddr.parse(ip);
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    address = (address as ipaddr.IPv6).toIPv4Address();
  }
  if (address.kind() === "ipv4") {
    const [a, b, c] = (address as ipaddr.IPv4).octets;
    return `v4:${a}.${b}.${c}.0/24`;
  }
  const parts = (address as ipaddr.IPv6).parts;
  return `v6:${parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(":")}::/64`;
}

/** The gate's settings (env UNKEYED_*; ingest/config.ts). A rate of 0 turns its bucket off. */
export interface GateSettings {
  /** Authentication failures a network may make per second, after its burst (UNKEYED_FAILURES_PER_SECOND). */
  failuresPerSecond: number;
  /** Failures a network may make at once after a quiet spell (UNKEYED_FAILURE_BURST). */
  failureBurst: number;
  /** Bytes of unkeyed bodies a network may keep unreturned, per second after its burst (UNKEYED_BYTES_PER_SECOND). */
  bytesPerSecond: number;
  /** A network's bucket of bytes (UNKEYED_BYTES_BURST). */
  bytesBurst: number;
  /** Bytes of unkeyed bodies all networks together may keep unreturned, per second (UNKEYED_PROCESS_BYTES_PER_SECOND). */
  processBytesPerSecond: number;
  /** The process's bucket of bytes (UNKEYED_PROCESS_BYTES_BURST). */
  processBytesBurst: number;
  /** Networks remembered at once (the least recently seen forgotten). */
  maxNetworks: number;
}

/** Why the gate refused: the network's failures, its bytes, or the process's bytes. */
export type GateRefusal = { ok: false; retryAfterSeconds: number; bucket: "failures" | "bytes" | "process" };

/** The outcome of asking the gate. */
export type GateTake = { ok: true } | GateRefusal;

/**
 * One unkeyed request's account at the gate: what it made the ingest receive and inflate, until
 * its key is decided. After `keyed` or `failed`, it charges nothing more.
 */
export interface UnkeyedAccount {
  /**
   * Charges `n` bytes received or inflated, to the network and to the process, in full (the
   * work is done); refused when the network's bucket ran out, or the process's did and the
   * network was not in good standing when the request came: the read stops there (429).
   */
  charge(n: number, nowMs: number): GateTake;
  /** Its key checked out: every byte charged is given back. */
  keyed(nowMs: number): void;
  /** Its key did not (401): one failure of its network; the bytes stay charged. */
  failed(nowMs: number): void;
}

/** The key under which the process's bucket is kept. */
const PROCESS = "process";

/** Charges of the work done for requests whose writeKey is not checked yet (see the file's comment). */
export class UnkeyedGate {
  private readonly failures: TokenBuckets;
  private readonly bytes: TokenBuckets;
  private readonly process: TokenBuckets;

  constructor(settings: GateSettings) {
    this.failures = new TokenBuckets(settings.failuresPerSecond, settings.failureBurst, settings.maxNetworks);
    this.bytes = new TokenBuckets(settings.bytesPerSecond, settings.bytesBurst, settings.maxNetworks);
    this.process = new TokenBuckets(settings.processBytesPerSecond, settings.processBytesBurst);
  }

  /**
   * Whether a request of `network` that names a key may have it looked up (a key header, a
   * settings path): refused while the network's failures bucket is empty.
   */
  mayLookUp(network: string, nowMs: number): GateTake {
    const room = this.failures.empty(network, nowMs);
    return room.ok ? room : { ...room, bucket: "failures" };
  }

  /**
   * Opens the account of a request of `network` with no key header, or refuses to read it:
   * while the network's failures or bytes bucket is empty, or while the process's bytes bucket
   * is empty and the network is not in good standing (both its buckets full). Whether it was in
   * good standing is kept for the whole request.
   */
  admit(network: string, nowMs: number): GateTake & { account?: UnkeyedAccount } {
    const lookUp = this.mayLookUp(network, nowMs);
    if (!lookUp.ok) return lookUp;
    const bytes = this.bytes.empty(network, nowMs);
    if (!bytes.ok) return { ...bytes, bucket: "bytes" };
    const standing = this.inGoodStanding(network, nowMs);
    const process = this.process.empty(PROCESS, nowMs);
    if (!process.ok && !standing) return { ...process, bucket: "process" };
    return { ok: true, account: this.account(network, standing) };
  }

  /** An authentication failure of `network` (a 401, an unknown key's settings). */
  fail(network: string, nowMs: number): void {
    this.failures.pay(network, 1, nowMs);
  }

  private account(network: string, standing: boolean): UnkeyedAccount {
    let charged = 0;
    let open = true;
    return {
      charge: (n, nowMs) => {
        if (!open) return { ok: true };
        charged += n;
        const own = this.bytes.pay(network, n, nowMs);
        const process = this.process.pay(PROCESS, n, nowMs);
        if (!own.ok) return { ...own, bucket: "bytes" };
        if (!process.ok && !standing) return { ...process, bucket: "process" };
        return { ok: true };
      },
      keyed: (nowMs) => {
        if (!open) return;
        open = false;
        this.bytes.give(network, charged, nowMs);
        this.process.give(PROCESS, charged, nowMs);
      },
      failed: (nowMs) => {
        if (!open) return;
        open = false;
        this.fail(network, nowMs);
      },
    };
  }

  /** Neither a failure nor an unreturned byte of `network` lately (both its buckets full). */
  private inGoodStanding(network: string, nowMs: number): boolean {
    return this.failures.full(network, nowMs) && this.bytes.full(network, nowMs);
  }
}

/**
 * How long a 429 of this gate waits before it is answered, ms: a client that sends again as soon
 * as it is answered (a flood on a few keep-alive connections) makes at most one request a second
 * per connection, so its refusals cost next to nothing. A refused client's request holds only its
 * socket meanwhile (its body is not read).
 */
export const THROTTLE_DELAY_MS = 1_000;

/** Refusals one network may have waiting at once; past it they are answered at once, with `Connection: close`. */
export const THROTTLE_WAITING_PER_NETWORK = 32;

/** The wait before a network's 429 (see THROTTLE_DELAY_MS), bounded per network. */
export class Throttle {
  private readonly waiting = new Map<string, number>();

  constructor(
    private readonly delayMs = THROTTLE_DELAY_MS,
    private readonly perNetwork = THROTTLE_WAITING_PER_NETWORK,
  ) {}

  /**
   * Waits `delayMs` before `network`'s refusal is answered; resolves false at once (answer now
   * and close the connection) when the network already has `perNetwork` refusals waiting.
   */
  async hold(network: string): Promise<boolean> {
    const now = this.waiting.get(network) ?? 0;
    if (now >= this.perNetwork) return false;
    this.waiting.set(network, now + 1);
    try {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      return true;
    } finally {
      const left = (this.waiting.get(network) ?? 1) - 1;
      if (left > 0) this.waiting.set(network, left);
      else this.waiting.delete(network);
    }
  }

  /** Networks with refusals waiting now (the map holds no others). */
  get networks(): number {
    return this.waiting.size;
  }
}
