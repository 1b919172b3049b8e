/**
 * Entry point of the ingest process: config from env, start, stop on SIGTERM/SIGINT.
 * A bad setting or an unreachable Kafka at start exits with code 1.
 */
import pino from "pino";
import { ingestConfig } from "../schemas/config";
import { start } from "./service";

/** Runs the ingest until SIGTERM/SIGINT; exits the process when stopped. */
export async function runIngest(): Promise<void> {
  const config = ingestConfig(process.env);
  const log = pino({ name: "ingest", level: config.logLevel });
  const ingest = await start(config, log);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping: draining requests, flushing producer");
    ingest.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "unclean stop");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

if (require.main === module) {
  runIngest().catch((error: unknown) => {
    pino({ name: "ingest" }).fatal({ err: error }, "ingest failed to start");
    process.exit(1);
  });
}
