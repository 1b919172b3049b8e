/**
 * The ingest's enrichment cost per event (ingest/enrich.ts), in-process on the bench's messages'
 * contexts with the bundled country database, best of several passes. `cached`: the corpus as it
 * is (its user agents and addresses repeat, as real traffic's do); `uncached`: every message
 * with a user agent and an address never seen before (a parse and a lookup each).
 */
import { Enricher, defaultCountryDbPath, openCountryDb } from "../../ingest/enrich";

type Context = Readonly<Record<string, unknown>>;

function bestMicrosPerEvent(enricher: Enricher, contexts: readonly Context[], passes: number): number {
  let best = Number.POSITIVE_INFINITY;
  for (let pass = 0; pass < passes; pass++) {
    const start = process.hrtime.bigint();
    for (const context of contexts) enricher.of(context);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1000 / contexts.length);
  }
  return best;
}

/** µs per event of enrichment, warm caches and cold. */
export function enrichCost(messages: readonly { context?: unknown }[], passes = 20): { cached: number; uncached: number } {
  const db = openCountryDb(defaultCountryDbPath());
  const contexts = messages.map((m) => (m.context ?? {}) as Context);
  const cached = bestMicrosPerEvent(new Enricher(db), contexts, passes);
  let uncached = Number.POSITIVE_INFINITY;
  for (let pass = 0; pass < 3; pass++) {
    const fresh = contexts.map((c, i) => ({
      ...c,
      userAgent: `${String(c.userAgent ?? "Mozilla/5.0")} build/${pass}.${i}`,
      ip: `198.18.${pass}.${i % 256}`,
    }));
    uncached = Math.min(uncached, bestMicrosPerEvent(new Enricher(db), fresh, 1));
  }
  return { cached, uncached };
}
