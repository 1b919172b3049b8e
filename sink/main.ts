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
import { STOP_MARGIN_MS } from "../schemas/runtime/deadline";
import { stopOnSignal } from "../schemas/runtime/signals";
import { logProcessWarnings } from "../schemas/runtime/warnings";

/** Runs the sink until SIGTERM/SIGINT; exits the process when stopped. */
export async function runSink(): Promise<void> {
  const config = sinkConfig(process.env);
  const log = pino({ name: "sink", level: config.logLevel });
  logProcessWarnings(log);
  const sink = await start(config, log);
  stopOnSignal(log, 2 * config.stopTimeoutMs + STOP_MARGIN_MS, "stopping: finishing batches, committing", () =>
    sink.stop(config.stopTimeoutMs),
  );
}

if (require.main === module) {
  runSink().catch((error: unknown) => {
    pino({ name: "sink" }).fatal({ err: error }, "sink failed to start");
    process.exit(1);
  });
}
