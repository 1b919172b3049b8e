/**
 * The ingest app (ingest/http/app.ts) in this process, with fakes for what the service wires to Kafka:
 * `produce` records what it is given (or fails as told), writeKey `wk` belongs to workspace `ws`.
 * For unit tests of the HTTP behaviour; the real producer and broker are the live tests'.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import type { EventRecord } from "../../schemas/envelope";
import { createApp, type AppDeps } from "../../ingest/http/app";
import { WriteKeys } from "../../ingest/admission/auth";
import { parseWriteKeys } from "../../ingest/admission/keys";
import { ingestMetrics } from "../../ingest/metrics";
import { TokenBuckets } from "../../ingest/admission/ratelimit";

/** A running in-process ingest: its base URL, what it produced, and a way to close it. */
export interface InProcessIngest {
  base: string;
  /** Every record handed to `produce`, in order (events and refused items). */
  produced: EventRecord[];
  /** Makes the next `produce` calls fail (Kafka down) until set back to undefined. */
  failWith?: Error;
  close(): Promise<void>;
}

/** Starts the app on a free port of 127.0.0.1; `overrides` replace the default fakes. */
export async function inProcessIngest(overrides: Partial<AppDeps> = {}): Promise<InProcessIngest> {
  const state: InProcessIngest = { base: "", produced: [], close: async () => {} };
  const app = createApp({
    writeKeys: new WriteKeys(parseWriteKeys(["wk=ws"])),
    produce: async (records) => {
      if (state.failWith) throw state.failWith;
      state.produced.push(...records);
    },
    isReady: () => true,
    isDraining: () => false,
    limits: { maxRequestBytes: 512_000, maxMessageBytes: 32_768, maxBatchMessages: 2_500, maxJsonDepth: 64, maxRecordBytes: 998_976 },
    trustedProxies: 0,
    maxInflightBytes: 32 * 1024 * 1024,
    bodyTimeoutMs: 10_000,
    producerBytesHeld: () => 0,
    corsOrigins: ["*"],
    retryAfterSeconds: 5,
    rateLimit: new TokenBuckets(0, 1),
    bytesLimit: new TokenBuckets(0, 1),
    openapi: {},
    metrics: ingestMetrics(),
    log: pino({ level: "silent" }),
    ...overrides,
  });
  const server = createServer(app.callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  state.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

/** Basic auth of writeKey `key` (Segment's form: the key as user, no password). */
export function basicAuth(key = "wk"): string {
  return `Basic ${Buffer.from(`${key}:`).toString("base64")}`;
}
