/**
 * Where a destination may post. Pure (node:net's BlockList). A URL is checked when an operator adds
 * it, and every address its host resolves to is checked again when a connection is made, so a
 * name that later resolves elsewhere (DNS rebinding) reaches nothing refused.
 *
 * Rules, with their sources: http and https only, no credentials in the URL; link-local addresses
 * (169.254.0.0/16, fe80::/10, where cloud instance metadata answers) and AWS's IPv6 metadata
 * address fd00:ec2::254 are refused unless DESTINATIONS_ALLOW_LINK_LOCAL is set (Convoy blocks the
 * same; IPv4-mapped IPv6 forms included), and 0.0.0.0/8 (which some systems route to this host
 * itself). Loopback and private networks are allowed: a
 * self-hosted pipeline posts to its owners' own services.
 */
import { BlockList, isIP } from "node:net";

const REFUSED = new BlockList();
REFUSED.addSubnet("169.254.0.0", 16, "ipv4");
REFUSED.addSubnet("fe80::", 10, "ipv6");
REFUSED.addAddress("fd00:ec2::254", "ipv6");
REFUSED.addSubnet("0.0.0.0", 8, "ipv4");

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d, or its hex form) stands for. */
function mappedIpv4(address: string): string | undefined {
  const m = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (m === null) return undefined;
  if (m[1] !== undefined) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether a connection to `address` (an IP literal) is refused. */
export function addressRefused(address: string, allowLinkLocal: boolean): boolean {
  if (allowLinkLocal) return false;
  const family = isIP(address);
  if (family === 0) return true;
  const v4 = family === 6 ? mappedIpv4(address) : address;
  if (v4 !== undefined && family === 6) return REFUSED.check(v4, "ipv4");
  return REFUSED.check(address, family === 4 ? "ipv4" : "ipv6");
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
  if (isIP(host) !== 0 && addressRefused(host, allowLinkLocal)) return `address ${host} refused (link-local, cloud metadata or 0.0.0.0/8)`;
  return undefined;
}
