/**
 * Inserts batches into ClickHouse. Failures are sorted where they are caught: a data error
 * (ClickHouse refuses a value) is not retriable, so the batch is split to find the refused rows,
 * which become dead letters; every other failure (server down, timeout, overload) is retried
 * with backoff until it succeeds or the sink stops. Nothing is committed until this returns.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import type { EventRow } from "../schemas/row";
import type { BatchItem, DeadLetter } from "./batch";

/** Inserts rows in one INSERT; resolves when ClickHouse acknowledged it. */
export type InsertRows = (rows: EventRow[]) => Promise<void>;

/** An insert function bound to a client and table (JSONEachRow, ISO times parsed best-effort). */
export function clickhouseInsert(client: ClickHouseClient, table: string): InsertRows {
  return async (rows) => {
    await client.insert({
      table,
      values: rows,
      format: "JSONEachRow",
      clickhouse_settings: { date_time_input_format: "best_effort" },
    });
  };
}

/**
 * ClickHouse error codes meaning "this data is bad", not "the server is unwell"
 * (src/Common/ErrorCodes.cpp): parse failures, type mismatches, out-of-range values.
 */
const DATA_ERROR_CODES = new Set([6, 26, 27, 32, 38, 41, 53, 69, 70, 72, 117, 131, 321]);

/** Whether ClickHouse refused the data itself (retrying the same rows cannot succeed). */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  const fromField = typeof code === "string" || typeof code === "number" ? Number(code) : Number.NaN;
  // ClickHouse before 21.x writes "Code: 27, e.displayText() = ..." which the client does not parse.
  const fromText = Number(/Code: (\d+)/.exec(String((error as Error).message ?? ""))?.[1]);
  const found = Number.isFinite(fromField) ? fromField : fromText;
  return DATA_ERROR_CODES.has(found);
}

/**
 * Inserts the items' rows. If ClickHouse refuses the data, halves the batch until each refused
 * row stands alone, inserts the rest, and returns the refused rows as dead letters.
 * Throws any other (retriable) error.
 */
export async function insertOrSplit(insert: InsertRows, items: BatchItem[]): Promise<DeadLetter[]> {
  if (items.length === 0) return [];
  try {
    await insert(items.map((i) => i.row));
    return [];
  } catch (error) {
    if (!isDataError(error)) throw error;
    if (items.length === 1) {
      const { partition, offset, key, value } = items[0]!;
      return [{ partition, offset, key, value, step: "insert", reason: String((error as Error).message).slice(0, 500) }];
    }
    const mid = Math.floor(items.length / 2);
    const left = await insertOrSplit(insert, items.slice(0, mid));
    const right = await insertOrSplit(insert, items.slice(mid));
    return [...left, ...right];
  }
}

/** Backoff bounds and hooks of `retry`. */
export interface RetryOptions {
  /** First wait and largest wait, ms; each wait doubles. */
  minMs: number;
  maxMs: number;
  /** Aborting stops the retries; `retry` then throws the last error. */
  signal: AbortSignal;
  /** Called before each wait (log, heartbeat). */
  onRetry: (error: unknown, attempt: number, waitMs: number) => void | Promise<void>;
}

/** Runs `fn` until it resolves, waiting with exponential backoff between attempts. */
export async function retry<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (options.signal.aborted) throw error;
      const waitMs = Math.min(options.maxMs, options.minMs * 2 ** Math.min(attempt - 1, 20));
      await options.onRetry(error, attempt, waitMs);
      await sleep(waitMs, options.signal);
      if (options.signal.aborted) throw error;
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
