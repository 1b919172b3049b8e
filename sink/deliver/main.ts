/**
 * Entry point of the delivery process: config from env, start, stop on SIGTERM/SIGINT. A request
 * under way at the stop is given up uncommitted: the next process sends it again (at least once).
 */
// First, before anything loads kafkajs: its stand-ins (schemas/kafka/stand-ins.ts).
import "../../schemas/kafka/stand-ins";
import pino from "pino";
import { deliverConfig } from "./config";
import { start } from "./service";
import { STOP_MARGIN_MS } from "../../schemas/runtime/deadline";
import { stopOnSignal } from "../../schemas/runtime/signals";
import { logProcessWarnings } from "../../schemas/runtime/warnings";

/** How long a stop may take before the process exits anyway, ms. */
const STOP_TIMEOUT_MS = 20_000;

/** Runs the delivery process until SIGTERM/SIGINT; exits the process when stopped. */
export async function runDeliver(): Promise<void> {
  const config = deliverConfig(process.env);
  const log = pino({ name: "deliver", level: config.logLevel });
  logProcessWarnings(log);
  const running = await start(config, log);
  stopOnSignal(log, STOP_TIMEOUT_MS + STOP_MARGIN_MS, "stopping: requests under way are sent again by the next process", () =>
    running.stop(),
  );
}

if (require.main === module) {
  runDeliver().catch((error: unknown) => {
    pino({ name: "deliver" }).fatal({ err: error }, "deliver failed to start");
    process.exit(1);
  });
}
