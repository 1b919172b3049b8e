/**
 * Node's process warnings as log lines. Node prints a warning as text on stderr ("(node:PID)
 * TimeoutNegativeWarning: ..."), which breaks a service's logs of one pino JSON object a line. On
 * Node 24 (the image's) every process that talks to Kafka gets one: kafkajs 2.2.4 schedules its
 * idle request-queue check at `-1 - Date.now()` ms (RequestQueue.scheduleCheckPendingRequests,
 * kafkajs issue 1751, unfixed in its last release), which Node 20 turned into 1 ms silently and
 * Node 23 and later turn into 1 ms with that warning. That one is known and harmless (kafkajs's
 * check runs a millisecond later, as on Node 20): it is logged at debug, so a service's start shows
 * nothing an operator cannot act on; every other warning, a negative timer of ours included, at warn.
 */
import type { Logger } from "pino";

/** Replaces Node's printer of process warnings by a line of `log` for each one: debug for kafkajs's idle timer, else warn. */
export function logProcessWarnings(log: Logger): void {
  for (const listener of process.listeners("warning")) process.removeListener("warning", listener);
  process.on("warning", (warning: Error & { code?: string }) => {
    const fields = { warning: { name: warning.name, code: warning.code, message: warning.message } };
    if (isKafkajsIdleTimer(warning)) log.debug(fields, "node process warning: kafkajs's idle request-queue timer (kafkajs#1751), harmless");
    else log.warn(fields, "node process warning");
  });
}

/**
 * Whether a warning is Node's about kafkajs's idle timer: a TimeoutNegativeWarning for a delay of
 * `-1 - Date.now()` ms, read from its message and allowed a day of difference.
 */
export function isKafkajsIdleTimer(warning: Error): boolean {
  if (warning.name !== "TimeoutNegativeWarning") return false;
  const delay = Number(/^(-\d+) is a negative number/.exec(warning.message)?.[1]);
  return Number.isFinite(delay) && Math.abs(delay + Date.now()) < 86_400_000;
}
