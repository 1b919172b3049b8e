/**
 * The stop of a long-running process on SIGTERM or SIGINT, shared by the sink and the delivery
 * process: the first signal logs why and starts the stop; the process exits 0 when the stop
 * resolves, 1 when it throws, and 1 anyway once `boundMs` passed (exitAfter). Later signals are
 * ignored: one stop runs.
 */
import type { Logger } from "pino";
import { exitAfter } from "./deadline";

/** Installs the handlers (see the module comment). */
export function stopOnSignal(log: Logger, boundMs: number, message: string, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, message);
    exitAfter(boundMs, log);
    stop().then(
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
