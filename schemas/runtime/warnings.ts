/**
 * Node's process warnings as log lines. Node prints a warning as text on stderr ("(node:PID)
 * TimeoutNegativeWarning: ..."), which breaks a service's logs of one pino JSON object a line. On
 * Node 24 (the image's) every process that talks to Kafka gets one: kafkajs 2.2.4 schedules its
 * idle request-queue check at `-1 - Date.now()` ms (RequestQueue.scheduleCheckPendingRequests,
 * kafkajs issue 1751, unfixed in its last release), which Node 20 turned into 1 ms silently and
 * Node 23 and later turn into 1 ms with that warning.
 */
import type { Logger } from "pino";

/** Replaces Node's printer of process warnings by a warn-level line of `log` for each one. */
export function logProcessWarnings(log: Logger): void {
  for (const listener of process.listeners("warning")) process.removeListener("warning", listener);
  process.on("warning", (warning: Error & { code?: string }) =>
    log.warn({ warning: { name: warning.name, code: warning.code, message: warning.message } }, "node process warning"),
  );
}
