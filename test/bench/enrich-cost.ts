/**
 * The ingest's enrichment cost per event (ingest/records/enrich.ts), in-process on the bench's messages'
 * contexts with the bundled country database, best of several passes. `cached`: the corpus as it
 * is (its user agents and addresses repeat, as real traffic's do); `uncached`: every message
 * with a user agent and an address never seen before (a parse and a lookup each). Run alone
 * (`node dist/test/bench/enrich-cost.js`): the event loop time of a 500 KB batch of hostile and of
 * real agents never seen (agentBatchHold).
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Enricher, defaultCountryDbPath, openCountryDb } from "../../ingest/records/enrich";
import { buildRecords } from "../../ingest/records/build";
import { ROOT } from "../support/paths";

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

/** A batch item of a 500 KB batch: a track with its own user agent. */
interface AgentItem {
  type: "track";
  messageId: string;
  userId: string;
  event: string;
  context: { userAgent: string };
}

/** Items of `agent(i)` filling about `bytes` of batch JSON. */
function agentBatch(bytes: number, agent: (i: number) => string): AgentItem[] {
  const items: AgentItem[] = [];
  for (let i = 0, size = 12; ; i++) {
    const item: AgentItem = { type: "track", messageId: randomUUID(), userId: "u", event: "Viewed", context: { userAgent: agent(i) } };
    size += JSON.stringify(item).length + 1;
    if (size > bytes) return items;
    items.push(item);
  }
}

/**
 * Milliseconds the event loop is held building the records of one 500 KB batch (buildRecords,
 * enrichment included, as the ingest does per request) whose agents were never seen: "hostile",
 * agents of one word repeated (issue 46, row 3: "Android" x 48 and a number), and "real", the
 * agents of test/fixtures/user-agents.txt made distinct. Median of `rounds`, each on new agents.
 */
export function agentBatchHold(rounds = 7): Record<"hostile" | "real", { items: number; ms: number }> {
  const real = readFileSync(join(ROOT, "test", "fixtures", "user-agents.txt"), "utf8")
    .split("\n")
    .filter(Boolean);
  const policy = { enricher: new Enricher(openCountryDb(defaultCountryDbPath())), anonymizeIp: false };
  const receipt = { workspaceId: "bench", receivedAt: new Date().toISOString() };
  const result = { hostile: { items: 0, ms: 0 }, real: { items: 0, ms: 0 } };
  for (const kind of ["hostile", "real"] as const) {
    const times: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const batch = agentBatch(495_000, (i) =>
        kind === "hostile" ? `${"Android".repeat(48)}${round}.${i}` : `${real[i % real.length]!} ${round}.${i}`,
      );
      const start = performance.now();
      buildRecords(batch, {}, receipt, 32 * 1024, policy);
      times.push(performance.now() - start);
      result[kind].items = batch.length;
    }
    result[kind].ms = times.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
  }
  return result;
}

if (require.main === module) {
  const { hostile, real } = agentBatchHold();
  console.log(
    `500 KB batch, records built (event loop held), median of 7: hostile ${hostile.ms.toFixed(1)} ms (${hostile.items} items), ` +
      `real ${real.ms.toFixed(1)} ms (${real.items} items), ratio ${(hostile.ms / real.ms).toFixed(2)}`,
  );
}
