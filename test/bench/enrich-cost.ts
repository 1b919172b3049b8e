/**
 * The ingest's enrichment cost per event (ingest/enrich.ts), in-process on the bench's messages:
 * building their rows with the enrichment and the bundled country database, minus building them
 * without, best of several passes. `cached`: the corpus as it is (its user agents repeat, as real
 * traffic's do); `uncached`: every message with a user agent never seen before (a parse each).
 */
import { buildRecords, type ContextPolicy } from "../../ingest/envelope";
import { Enricher, defaultCountryDbPath, openCountryDb } from "../../ingest/enrich";
import type { Message } from "../../schemas/messages";

const receipt = { workspaceId: "ws-bench", receivedAt: new Date().toISOString(), clientIp: "203.0.113.7" };

function bestMicrosPerEvent(messages: Message[], policy: ContextPolicy | undefined, passes: number): number {
  let best = Number.POSITIVE_INFINITY;
  for (let pass = 0; pass < passes; pass++) {
    const start = process.hrtime.bigint();
    const built = buildRecords(messages, {}, receipt, 32 * 1024, policy);
    const micros = Number(process.hrtime.bigint() - start) / 1000;
    if (!built.ok) throw new Error("corpus message over the size limit");
    best = Math.min(best, micros / messages.length);
  }
  return best;
}

/** µs per event of enrichment, warm cache and uncached. */
export function enrichCost(messages: Message[], passes = 15): { cached: number; uncached: number } {
  const db = openCountryDb(defaultCountryDbPath());
  const warm: ContextPolicy = { enricher: new Enricher(db), anonymizeIp: false };
  const plain = bestMicrosPerEvent(messages, undefined, passes);
  const cached = bestMicrosPerEvent(messages, warm, passes) - plain;
  let seen = 0;
  const fresh = () =>
    messages.map((m) => {
      const context = (m as { context?: Record<string, unknown> }).context ?? {};
      return { ...m, context: { ...context, userAgent: `${String(context.userAgent ?? "Mozilla/5.0")} build/${seen++}` } } as Message;
    });
  const plainFresh = bestMicrosPerEvent(fresh(), undefined, 3);
  let uncached = Number.POSITIVE_INFINITY;
  for (let pass = 0; pass < 3; pass++)
    uncached = Math.min(uncached, bestMicrosPerEvent(fresh(), { enricher: new Enricher(db), anonymizeIp: false }, 1) - plainFresh);
  return { cached: Math.max(0, cached), uncached: Math.max(0, uncached) };
}
