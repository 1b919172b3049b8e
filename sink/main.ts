/**
 * Entry point of the sink process: config from env, start, stop on SIGTERM/SIGINT.
 * Shutdown order: stop fetching, finish and commit the open batches, disconnect. If ClickHouse
 * is down it gives up after SINK_STOP_TIMEOUT_MS without committing (records are read again), and
 * on Kafka's disconnects after as long again; past both (and a margin) the process exits with 1.
 */
// First, before anything loads kafkajs: its stand-ins (schemas/kafka/stand-ins.ts).
import "../schemas/kafka/stand-ins";
import pino from "pino";
import { sinkConfig } from "./config";
import { start } from "./service";
import { exitAfter, STOP_MARGIN_MS } from "../schemas/runtime/deadline";
import { logProcessWarnings } from "../schemas/runtime/warnings";

/** Runs the sink until SIGTERM/SIGINT; exits the process when stopped. */
export async function runSink(): Promise<void> {
  const config = sinkConfig(process.env);
  const log = pino({ name: "sink", level: config.logLevel });
  logProcessWarnings(log);
  const sink = await start(config, log);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping: finishing batches, committing");
    exitAfter(2 * config.stopTimeoutMs + STOP_MARGIN_MS, log);
    sink.stop(config.stopTimeoutMs).then(
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
  runSink().catch((error: unknown) => {
    pino({ name: "sink" }).fatal({ err: error }, "sink failed to start");
    process.exit(1);
  });
}
