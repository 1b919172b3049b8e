/**
 * Where a destination may post. Pure (node:net's BlockList). A URL is checked when an operator adds
 * it, and every address its host resolves to is checked again when a connection is made, so a
 * name that later resolves elsewhere (DNS rebinding) reaches nothing refused.
 *
 * Rules, with their sources: http and https only, no credentials in the URL; link-local addresses
 * (169.254.0.0/16, fe80::/10, where cloud instance metadata answers), AWS's IPv6 metadata address
 * fd00:ec2::254 and Alibaba Cloud's metadata address 100.100.100.200 are refused unless
 * DESTINATIONS_ALLOW_LINK_LOCAL is set (Convoy blocks the same), and so are 0.0.0.0/8 and `::`
 * (unspecified: some systems route them to this host itself). An IPv6 address that carries an IPv4
 * one is judged by the IPv4 address: IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, RFC 4291,
 * deprecated but still parsed), SIIT's IPv4-translated (::ffff:0:0:0/96, RFC 2765) and NAT64's
 * well-known prefix (64:ff9b::/96, RFC 6052), dotted or hex. Loopback and private networks are
 * allowed: a self-hosted pipeline posts to its owners' own services.
 */
import { BlockList, isIP } from "node:net";

const REFUSED = new BlockList();
REFUSED.addSubnet("169.254.0.0", 16, "ipv4");
REFUSED.addSubnet("0.0.0.0", 8, "ipv4");
REFUSED.addAddress("100.100.100.200", "ipv4");
REFUSED.addSubnet("fe80::", 10, "ipv6");
REFUSED.addAddress("fd00:ec2::254", "ipv6");
REFUSED.addAddress("::", "ipv6");

/** The eight 16-bit groups of an IPv6 address (one isIP accepted; a trailing dotted quad and a zone allowed). */
function groupsOf(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, "");
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(2, 6).map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left, right] = text.split("::") as [string, string | undefined];
  const parse = (part: string | undefined) => (part === undefined || part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const head = parse(left);
  const tail = parse(right);
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, SIIT or NAT64; see the module comment), or undefined. */
function embeddedIpv4(address: string): string | undefined {
  const g = groupsOf(address);
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  const mapped = zeros(5) && g[5] === 0xffff;
  const compatible = zeros(6) && !(g[6] === 0 && g[7] === 1); // ::1 is loopback, not 0.0.0.1
  const siit = zeros(4) && g[4] === 0xffff && g[5] === 0;
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!(mapped || compatible || siit || nat64)) return undefined;
  const [hi, lo] = [g[6]!, g[7]!];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether a connection to `address` (an IP literal) is refused. */
export function addressRefused(address: string, allowLinkLocal: boolean): boolean {
  if (allowLinkLocal) return false;
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return REFUSED.check(address, "ipv4");
  if (REFUSED.check(address.replace(/%.*$/, ""), "ipv6")) return true;
  const v4 = embeddedIpv4(address);
  return v4 !== undefined && REFUSED.check(v4, "ipv4");
}

/** What is wrong with `url` as a destination's, or undefined. */
export function urlProblem(url: string, allowLinkLocal: boolean): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "not a URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return "only http and https URLs";
  if (parsed.username !== "" || parsed.password !== "") return "credentials in the URL: send them as a header";
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0 && addressRefused(host, allowLinkLocal))
    return `address ${host} refused (link-local, cloud metadata, unspecified or 0.0.0.0/8)`;
  return undefined;
}
