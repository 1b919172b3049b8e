/**
 * Entry point of the ingest process: config from env, start, stop on SIGTERM/SIGINT.
 * A bad setting or an unreachable Kafka at start exits with code 1. With INGEST_WORKERS > 1 this
 * process is a node:cluster primary: it forks the workers (each a whole ingest with its own
 * producer, sharing the port), replaces one that dies, and on a signal stops them all and exits
 * with the worst exit code.
 */
// First, before anything loads kafkajs: its stand-ins (schemas/kafka/stand-ins.ts).
import "../schemas/kafka/stand-ins";
import cluster from "node:cluster";
import pino, { type Logger } from "pino";
import { ingestConfig } from "./config";
import { start, stopBoundMs } from "./service";
import type { AdminExtension } from "./http/admin";
import { exitAfter, STOP_MARGIN_MS } from "../schemas/runtime/deadline";
import { logProcessWarnings } from "../schemas/runtime/warnings";

/** Runs the ingest until SIGTERM/SIGINT, with `admin`'s routes on its admin port; exits the process when stopped. */
export async function runIngest(admin?: AdminExtension): Promise<void> {
  const config = ingestConfig(process.env);
  const log = pino({ name: "ingest", level: config.logLevel });
  logProcessWarnings(log);
  if (config.workers > 1 && cluster.isPrimary) {
    runPrimary(config.workers, log);
    return;
  }
  const ingest = await start(config, log, admin);
  onSignal((signal) => {
    log.info({ signal }, "stopping: draining requests, flushing producer");
    exitAfter(stopBoundMs(config) + STOP_MARGIN_MS, log);
    ingest.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "unclean stop");
        process.exit(1);
      },
    );
  });
  // A worker is stopped by its primary's SIGTERM; a disconnect without one means the primary died.
  if (cluster.isWorker)
    process.on("disconnect", () => {
      exitAfter(stopBoundMs(config) + STOP_MARGIN_MS, log);
      void ingest.stop().finally(() => process.exit(1));
    });
}

/** Forks `workers` ingest workers and supervises them. */
function runPrimary(workers: number, log: Logger): void {
  let stopping = false;
  let worstCode = 0;
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on("exit", (worker, code, signal) => {
    worstCode = Math.max(worstCode, code ?? 1);
    if (!stopping) {
      log.error({ pid: worker.process.pid, code, signal }, "ingest worker died; starting another");
      cluster.fork();
    } else if (Object.keys(cluster.workers ?? {}).length === 0) {
      process.exit(worstCode);
    }
  });
  log.info({ workers }, "ingest primary started");
  onSignal((signal) => {
    stopping = true;
    log.info({ signal }, "stopping every worker");
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGTERM");
  });
}

/** Calls `stop` once, on the first SIGTERM or SIGINT. */
function onSignal(stop: (signal: string) => void): void {
  let stopping = false;
  const once = (signal: string) => {
    if (stopping) return;
    stopping = true;
    stop(signal);
  };
  process.on("SIGTERM", () => once("SIGTERM"));
  process.on("SIGINT", () => once("SIGINT"));
}

if (require.main === module) {
  runIngest().catch((error: unknown) => {
    pino({ name: "ingest" }).fatal({ err: error }, "ingest failed to start");
    process.exit(1);
  });
}
