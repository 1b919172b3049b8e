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
 * The public address: PUBLIC_URL when set (`https://ingest.example.com`), else the request's own
 * protocol and Host (Koa takes X-Forwarded-Proto and X-Forwarded-Host only behind trusted proxies).
 */
export function publicAddress(publicUrl: string | undefined, request: PublicAddress): PublicAddress {
  if (publicUrl === undefined || publicUrl === "") return request;
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
