/**
 * Shared steps of the fault scenarios: controlling the local servers, waiting for rows, and the
 * verdict every scenario ends with (rows under FINAL == acked messageIds, no duplicates).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import * as assert from "uvu/assert";
import { waitFor, type LiveStack } from "../../support/harness";
import type { Traffic, TrafficFigures } from "./traffic";
import { ROOT } from "../../support/paths";

const root = ROOT;

/** One line of the Guarantees table. */
export interface ScenarioResult extends TrafficFigures {
  scenario: string;
  rows: number;
  duplicates: number;
  notes: string;
}

/** Runs `deploy/local/<server>.sh <action>` with this process's env (the fault stack's ports). */
export async function server(name: "kafka" | "clickhouse", action: "start" | "stop"): Promise<void> {
  const child = spawn("bash", [join(root, "deploy", "local", `${name}.sh`), action], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const [code] = await once(child, "exit");
  if (code !== 0) throw new Error(`${name} ${action} failed:\n${output}`);
}

/** Milliseconds to wait. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GET a sink's /readyz status code. */
export async function sinkReady(port: number): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
  } catch {
    return 0;
  }
}

/** Waits until the sink group's committed offsets reach the topic's end (lag 0). */
export function lagBackToZero(stack: LiveStack, timeoutMs = 20_000): Promise<{ committed: number; end: number }> {
  return waitFor(
    "lag back to 0",
    async () => {
      const lag = await stack.groupLag();
      return lag.committed === lag.end ? lag : undefined;
    },
    timeoutMs,
  );
}

/** Rows and duplicates under FINAL for one scenario's userId. */
export async function rowsOf(stack: LiveStack, userId: string): Promise<{ rows: number; unique: number }> {
  const [r] = await stack.select<{ rows: string; unique: string }>(
    `SELECT count() AS rows, uniqExact(message_id) AS unique FROM ${stack.table} FINAL WHERE user_id = '${userId}'`,
  );
  return { rows: Number(r!.rows), unique: Number(r!.unique) };
}

/**
 * The verdict: waits until the rows under FINAL for `userId` number the acked messageIds, then
 * requires every sent messageId to be acked, rows == acked and no duplicate. Records the line.
 */
export async function verdict(
  stack: LiveStack,
  scenario: string,
  userId: string,
  traffic: Traffic | TrafficFigures,
  notes: string,
): Promise<ScenarioResult> {
  const figures = "figures" in traffic ? traffic.figures() : traffic;
  let found = { rows: -1, unique: -1 };
  try {
    await waitFor(
      `${figures.acked} rows for ${scenario}`,
      async () => {
        found = await rowsOf(stack, userId);
        return found.unique >= figures.acked ? found : undefined;
      },
      180_000,
    );
    await sleep(1_000); // let any straggler land, so "more rows than acked" would show
  } catch (error) {
    // What the sink said is the first thing to read when acked rows do not land.
    console.error(`sink output (last 6000 characters):\n${stack.sink?.output().slice(-6000) ?? "(no sink)"}`);
    throw error;
  } finally {
    found = await rowsOf(stack, userId).catch(() => found);
  }
  const result: ScenarioResult = { scenario, ...figures, rows: found.unique, duplicates: found.rows - found.unique, notes };
  report(result);
  assert.is(figures.sent, figures.acked, `${scenario}: every sent messageId was finally acked`);
  assert.is(found.unique, figures.acked, `${scenario}: rows under FINAL == acked messageIds`);
  assert.is(found.rows - found.unique, 0, `${scenario}: no duplicate message_id under FINAL`);
  return result;
}

/** Prints the line, and appends it as JSON to FAULTS_RESULTS when set (docs/GUARANTEES.md's table). */
export function report(result: ScenarioResult): void {
  const rejected =
    Object.entries(result.rejected)
      .map(([code, n]) => `${code}x${n}`)
      .join(" ") || "none";
  console.log(
    `\n  ${result.scenario}: sent ${result.sent}, acked ${result.acked}, rejected ${rejected}, rows ${result.rows}, duplicates ${result.duplicates} - ${result.notes}`,
  );
  if (process.env.FAULTS_RESULTS) appendFileSync(process.env.FAULTS_RESULTS, JSON.stringify(result) + "\n");
}
