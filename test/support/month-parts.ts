/**
 * A row of the month parts query (schemas/clickhouse/partitions.ts), for the unit tests of what
 * reads it (test/unit/schemas/clickhouse/partitions.test.ts, test/unit/sink/upkeep/retention.test.ts).
 */
import type { MonthParts } from "../../schemas/clickhouse/partitions";

/** Month `id` on `host`: `bytes` on disk in `parts` parts, the largest `largest` bytes, `recent` bytes written in the last day. */
export const monthRow = (id: string, parts: number, bytes: number, largest: number, recent = 0, host = "h1"): MonthParts => ({
  id,
  host,
  parts: String(parts),
  bytes: String(bytes),
  largest: String(largest),
  recent: String(recent),
});
