/**
 * The ingest app as the service wires it (ingest/service.ts edgeDeps: limits, buckets,
 * enrichment, catalog), around a producer that does nothing, listening on 127.0.0.1 port 0: what
 * one request costs the edge itself, without kafkajs or a broker. Run by request-cost.ts as its
 * own process; prints its port, then serves until SIGTERM. WRITE_KEYS and the other settings
 * come from the environment, as for the ingest.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { createApp } from "../../ingest/http/app";
import { WriteKeys } from "../../ingest/admission/auth";
import { ingestConfig } from "../../ingest/config";
import { ingestMetrics } from "../../ingest/metrics";
import { edgeDeps } from "../../ingest/service";
import { recordLimit } from "../../schemas/kafka/limits";
import { PrivacyList } from "../../schemas/privacy/list";

async function main(): Promise<void> {
  const config = ingestConfig(process.env);
  const log = pino({ name: "ingest", level: config.logLevel });
  const app = createApp(
    edgeDeps(config, log, {
      writeKeys: new WriteKeys(config.writeKeys),
      privacy: new PrivacyList(),
      produce: () => Promise.resolve(),
      producerBytesHeld: () => 0,
      isReady: () => true,
      isDraining: () => false,
      maxRecordBytes: recordLimit(config.kafka.maxMessageBytes),
      metrics: ingestMetrics(),
    }),
  );
  const server = createServer({ keepAliveTimeout: config.keepAliveTimeoutMs }, app.callback()).listen(0, "127.0.0.1");
  await once(server, "listening");
  // An exit of its own on SIGTERM: `node --cpu-prof` writes its profile then (BENCH_PROFILE_DIR).
  process.on("SIGTERM", () => process.exit(0));
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`request-app failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
