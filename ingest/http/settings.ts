/**
 * The settings document analytics.js and the mobile SDKs fetch before they send anything
 * (`GET <cdn>/v1/projects/<writeKey>/settings`), served by the ingest itself so a page or app
 * needs no other host: only the Segment.io destination, pointed at this ingest, no remote
 * plugins, no destination bundles, no metrics sent elsewhere. Pure.
 * analytics-next reads it in packages/browser/src/browser/index.ts (loadCDNSettings) and
 * packages/browser/src/plugins/segmentio/index.ts (apiHost, protocol, deliveryStrategy);
 * analytics-kotlin in core/.../Settings.kt; analytics-swift in Sources/Segment/Settings.swift.
 */

/** Where SDKs should send: the ingest's public origin as the settings request saw it or as configured. */
export interface PublicAddress {
  /** `https` or `http`. */
  protocol: string;
  /** `host[:port]`, no path. */
  host: string;
}

/**
 * The Hosts a settings document may name when PUBLIC_URL is unset (INGEST_ALLOWED_HOSTS, comma
 * separated): `name` allows it on any port, `name:port` on that port; lower case. Empty: the
 * loopback names (`localhost`, `*.localhost`) and IP literals only, so a development stack is
 * reached by address and nothing a client writes in its Host becomes an `apiHost`.
 */
export interface HostPolicy {
  hosts: ReadonlySet<string>;
}

/** INGEST_ALLOWED_HOSTS as a HostPolicy: entries trimmed, lower-cased, blanks dropped. */
export function hostPolicy(list: string | undefined): HostPolicy {
  const hosts = (list ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== "");
  return { hosts: new Set(hosts) };
}

/** `host[:port]` -> [name, port]; a bracketed IPv6 literal keeps its brackets. */
function splitHost(host: string): [string, string | undefined] {
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(host);
  return match ? [match[1]!, match[2]] : [host, undefined];
}

/** Whether a request's `host[:port]` may be named in the settings document under `policy`. */
export function hostAllowed(host: string, policy: HostPolicy | undefined): boolean {
  const lower = host.toLowerCase();
  const [name] = splitHost(lower);
  if (policy !== undefined && policy.hosts.size > 0) return policy.hosts.has(lower) || policy.hosts.has(name);
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (/^\[[0-9a-f:.]+\]$/.test(name)) return true;
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(name);
}

/**
 * The public address: PUBLIC_URL when set (`https://ingest.example.com`), else the request's own
 * protocol and Host (Koa takes X-Forwarded-Proto and X-Forwarded-Host only behind trusted
 * proxies) when `hostAllowed`; undefined when it is not (answered 421: a Host the client wrote
 * never becomes the `apiHost` SDKs send to).
 */
export function publicAddress(publicUrl: string | undefined, request: PublicAddress, allowed?: HostPolicy): PublicAddress | undefined {
  if (publicUrl === undefined || publicUrl === "") return hostAllowed(request.host, allowed) ? request : undefined;
  const url = new URL(publicUrl);
  return { protocol: url.protocol.replace(/:$/, ""), host: url.host };
}

/** The settings document for a writeKey (shape: Segment's CDN settings, trimmed to what SDKs read). */
export function settingsDocument(writeKey: string, address: PublicAddress): object {
  return {
    integrations: {
      "Segment.io": {
        apiKey: writeKey,
        // The SDKs add the path of each call (`/t`, `/b`) to this.
        apiHost: `${address.host}/v1`,
        protocol: address.protocol,
        // Without it analytics.js keeps no retry queue: a message answered 5xx would be dropped.
        retryQueue: true,
        unbundledIntegrations: [],
        addBundledMetadata: true,
        maybeBundledConfigIds: {},
      },
    },
    plan: {
      track: { __default: { enabled: true, integrations: {} } },
      identify: { __default: { enabled: true } },
      group: { __default: { enabled: true } },
    },
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    // No client metrics: analytics.js would post them to Segment's own host.
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}
