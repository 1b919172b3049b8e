/**
 * Enrichment through the whole path (real ingest, Kafka, sink, ClickHouse 18.16), with the test
 * country database (test/fixtures/geo-test.mmdb), IP_ANONYMIZE on and one trusted proxy: a
 * Chrome page view, Googlebot, a mobile SDK's upload, and missing or garbage values (defaults,
 * never a refusal); a refused item's address anonymized in rejected_messages; the catalog after
 * an SDK's retries, through `cli catalog --json`; 500 KB batches of hostile and of real user
 * agents (issue 46, row 3) and IPv6 addresses that carry an IPv4 one (row 8).
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminPort, basic, LiveStack, sqlList, waitFor } from "../support/harness";
import { ROOT } from "../support/paths";
import { cpuSeconds } from "../bench/procstat";
import type { EventCatalogRow, PropertyCatalogRow } from "../../schemas/clickhouse/catalog";

const stack = new LiveStack({
  GEOIP_DATABASE: join(ROOT, "test", "fixtures", "geo-test.mmdb"),
  IP_ANONYMIZE: "true",
  TRUST_PROXY: "1",
});
const live = suite("enrichment and catalog (live Kafka + ClickHouse)");
live.before(() => stack.start());
live.after(() => stack.stop());

const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const browserHeaders = (ip: string) => ({ "content-type": "text/plain", authorization: basic("test-key"), "x-forwarded-for": ip });

interface Enriched {
  message_id: string;
  browser: string;
  browser_version: string;
  os: string;
  device_type: string;
  is_bot: number;
  country: string;
  context: string;
}

async function enriched(ids: string[]): Promise<Map<string, Enriched>> {
  const rows = await stack.rowsLanded<Enriched>(ids);
  return new Map(rows.map((r) => [r.message_id, { ...r, is_bot: Number(r.is_bot) }]));
}

live("Chrome, Googlebot, a mobile SDK, missing and garbage values: columns, defaults, addresses anonymized", async () => {
  const [page, bot, app, swift, bare, garbage] = Array.from({ length: 6 }, () => randomUUID());
  const pageView = { messageId: page, anonymousId: "a1", name: "Home", context: { userAgent: CHROME, page: { path: "/" } } };
  assert.is((await stack.post("/v1/p", pageView, browserHeaders("81.2.69.160"))).status, 200);
  const crawl = { messageId: bot, anonymousId: "a2", event: "Viewed", context: { userAgent: GOOGLEBOT, ip: "198.51.100.7" } };
  assert.is((await stack.post("/v1/t", crawl, browserHeaders("81.2.69.160"))).status, 200);
  // analytics-kotlin's upload: writeKey in the body, the JVM's http.agent as userAgent, os and device
  const kotlin = {
    writeKey: "test-key",
    sentAt: new Date().toISOString(),
    batch: [
      {
        type: "screen",
        messageId: app,
        anonymousId: "a3",
        name: "Cart",
        context: {
          userAgent: "Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/UQ1A.240205.004)",
          os: { name: "Android", version: "14" },
          device: { type: "android", model: "Pixel 8" },
          ip: "2001:db8:1234:5678::9",
        },
      },
      // analytics-swift sends no userAgent: os and device.type say it
      { type: "track", messageId: swift, userId: "u4", event: "Opened", context: { os: { name: "iOS" }, device: { type: "ios" } } },
    ],
  };
  assert.is((await stack.post("/v1/b", kotlin, { "content-type": "text/plain", "x-forwarded-for": "203.0.113.5" })).status, 200);
  assert.is((await stack.post("/v1/track", { messageId: bare, userId: "u5", event: "Server" })).status, 200);
  const odd = { messageId: garbage, userId: "u6", event: "Odd", context: { userAgent: 42, ip: "999.1.2.3", os: [1] } };
  assert.is((await stack.post("/v1/track", odd)).status, 200, "garbage context values are never a refusal");

  const rows = await enriched([page, bot, app, swift, bare, garbage]);
  const cols = (id: string) => {
    const r = rows.get(id)!;
    return [r.browser, r.os, r.device_type, r.is_bot, r.country];
  };
  assert.equal(cols(page), ["Chrome", "Windows", "desktop", 0, "GB"]);
  assert.is(rows.get(page)!.browser_version, "131.0.0.0");
  assert.is(JSON.parse(rows.get(page)!.context).ip, "81.2.69.0", "the proxy's client address, anonymized");
  assert.equal(cols(bot), ["", "", "bot", 1, "FR"], "stored and flagged, not dropped");
  assert.is(JSON.parse(rows.get(bot)!.context).ip, "198.51.100.0");
  assert.equal(cols(app), ["", "Android", "mobile", 0, "DE"]);
  assert.is(JSON.parse(rows.get(app)!.context).ip, "2001:db8:1234::");
  assert.equal(cols(swift), ["", "iOS", "mobile", 0, "JP"], "the request's address, as Segment fills context.ip");
  assert.equal(cols(bare), ["", "", "other", 0, ""], "127.0.0.1 is in no country");
  assert.equal(cols(garbage), ["", "", "other", 0, ""]);
  assert.is(JSON.parse(rows.get(garbage)!.context).ip, undefined, "not an address: not stored under IP_ANONYMIZE");
});

live("a refused item's context.ip is anonymized in rejected_messages", async () => {
  const good = randomUUID();
  const bad = randomUUID();
  const batch = {
    batch: [
      { type: "track", messageId: bad, userId: "u", context: { ip: "81.2.69.201" } },
      { type: "track", messageId: good, userId: "u", event: "E" },
    ],
  };
  assert.is((await stack.post("/v1/batch", batch)).status, 200);
  await stack.rowsLanded([good]);
  // The refused item comes through the rejected topic, read apart from the events topic: it may
  // land after the valid message beside it (the whole live suite once read it too early).
  const [refused] = await waitFor("the refused item in rejected_messages", async () => {
    const rows = await stack.select<{ raw: string }>(
      `SELECT raw FROM ${stack.database}.rejected_messages FINAL WHERE message_id = '${bad}'`,
    );
    return rows.length === 1 ? rows : undefined;
  });
  assert.is(JSON.parse(refused!.raw).context.ip, "81.2.69.0");
});

live("the catalog after an SDK's retries counts each message once (cli catalog --json)", async () => {
  const ids = Array.from({ length: 3 }, () => randomUUID());
  const batch = (plan: unknown) => ({
    batch: ids.map((messageId) => ({ type: "track", messageId, userId: "u", event: "Plan Chosen", properties: { plan } })),
  });
  for (let attempt = 0; attempt < 3; attempt++) assert.is((await stack.post("/v1/batch", batch("pro"))).status, 200);
  const other = randomUUID();
  assert.is((await stack.post("/v1/track", { messageId: other, userId: "u", event: "Plan Chosen", properties: { plan: 2 } })).status, 200);
  await stack.rowsLanded([...ids, other]);
  const landed = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} WHERE message_id IN (${sqlList(ids)})`);
  const cli = stack.spawn("deploy/cli.js", {}, ["catalog", "ws-test", "--json"]);
  const { code } = await cli.exited;
  assert.is(code, 0, cli.output());
  const catalog = JSON.parse(cli.output().trim().split("\n").pop()!) as { events: EventCatalogRow[]; properties: PropertyCatalogRow[] };
  const event = catalog.events.find((r) => r.event === "Plan Chosen");
  assert.is(event?.count, "4", `4 messages, ${landed[0]!.n} rows before merges`);
  const plan = catalog.properties.find((r) => r.event === "Plan Chosen" && r.key === "plan");
  assert.equal(plan && [plan.source, plan.types, plan.count], ["properties", ["number", "string"], "4"]);
});

/** The batch items of about `bytes` of JSON, each with its own user agent from `agent`. */
function batchOf(
  bytes: number,
  agent: (i: number) => string,
): { type: string; messageId: string; userId: string; event: string; context: object }[] {
  const items = [];
  for (let i = 0, size = 12; size < bytes; i++) {
    const item = { type: "track", messageId: randomUUID(), userId: "u", event: "Viewed", context: { userAgent: agent(i) } };
    size += JSON.stringify(item).length + 1;
    if (size < bytes) items.push(item);
  }
  return items;
}

/** ingest_user_agents_unparsed_total, or -1 when the ingest has no such metric. */
async function unparsedAgents(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${await adminPort(stack.ingest!)}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("ingest_user_agents_unparsed_total "));
  return line === undefined ? -1 : Number(line.split(" ")[1]);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

live(
  "500 KB batches of repeated-word agents and of real ones: figures; past the parse budget agents are counted, never refused",
  async () => {
    const real = readFileSync(join(ROOT, "test", "fixtures", "user-agents.txt"), "utf8")
      .split("\n")
      .filter(Boolean);
    const ms: Record<"hostile" | "real", number[]> = { hostile: [], real: [] };
    const cpuMs: Record<"hostile" | "real", number[]> = { hostile: [], real: [] };
    const items: Record<"hostile" | "real", number> = { hostile: 0, real: 0 };
    const unparsedBefore = await unparsedAgents();
    let lastHostile: string[] = [];
    // Every batch's agents are new (the run and batch in each): no parse is saved by the cache.
    const run = randomUUID().slice(0, 8);
    for (let round = 0; round < 6; round++)
      for (const kind of ["hostile", "real"] as const) {
        const batch = batchOf(495_000, (i) =>
          kind === "hostile" ? `${"Android".repeat(48)}${run}${round}${i}` : `${real[i % real.length]!} ${run}/${round}.${i}`,
        );
        const cpuStart = cpuSeconds(stack.ingest!.child.pid!);
        const start = performance.now();
        const answer = await stack.post("/v1/batch", { batch });
        const took = performance.now() - start;
        const cpu = (cpuSeconds(stack.ingest!.child.pid!) - cpuStart) * 1000;
        assert.is(answer.status, 200, answer.text);
        if (round === 0) continue; // the first of each warms the process up
        ms[kind].push(took);
        cpuMs[kind].push(cpu);
        items[kind] = batch.length;
        if (kind === "hostile") lastHostile = batch.map((b) => b.messageId);
      }
    const unparsed = (await unparsedAgents()) - unparsedBefore;
    // The figures (CHANGELOG.md, Performance history): wall time of the request, and the ingest's CPU time for it.
    const figure = (kind: "hostile" | "real") =>
      `${kind} (${items[kind]} items) ${median(ms[kind]).toFixed(0)} ms, ${median(cpuMs[kind]).toFixed(0)} ms CPU ` +
      `[${ms[kind].map((m) => m.toFixed(0)).join(" ")}] [${cpuMs[kind].map((m) => m.toFixed(0)).join(" ")}]`;
    const ratio = (values: Record<"hostile" | "real", number[]>) => (median(values.hostile) / median(values.real)).toFixed(2);
    console.log(`\n  500 KB batch, median of 5: ${figure("hostile")}; ${figure("real")}`);
    console.log(`  hostile / real: ${ratio(ms)} by wall time, ${ratio(cpuMs)} by ingest CPU; ${unparsed} agents unparsed`);
    // Counted, not timed: each request parses what its budget allows and leaves the rest unparsed.
    assert.ok(unparsedBefore >= 0, "ingest_user_agents_unparsed_total is exported");
    assert.ok(unparsed > 0, `${unparsed} agents unparsed`);
    await waitFor(
      "every item of the last hostile batch in events: none refused",
      async () => {
        const rows = await stack.select<{ n: string }>(
          `SELECT count() AS n FROM ${stack.table} FINAL WHERE message_id IN (${sqlList(lastHostile)})`,
        );
        return Number(rows[0]?.n) === lastHostile.length ? true : undefined;
      },
      60_000,
    );
  },
);

live(
  "IP_ANONYMIZE: a 6to4 context.ip is stored as its anonymized IPv4; a refused item's ip, whatever its shape, anonymized or left out",
  async () => {
    const [sixToFour, teredo, refusedNumber, refusedList] = Array.from({ length: 4 }, () => randomUUID());
    const batch = {
      batch: [
        { type: "track", messageId: sixToFour, userId: "u", event: "E", context: { ip: "2002:cb00:714d::1" } },
        { type: "track", messageId: teredo, userId: "u", event: "E", context: { ip: "2001:0:4136:e378:8000:63bf:3fff:fdd2" } },
        // no event: refused, kept in rejected_messages
        { type: "track", messageId: refusedNumber, userId: "u", ip: 3405803853, context: { ip: { v4: "203.0.113.77" } } },
        { type: "track", messageId: refusedList, userId: "u", context: [{ ip: "203.0.113.77" }] },
      ],
    };
    const answer = await stack.post("/v1/batch", batch);
    assert.is(answer.status, 200, answer.text);
    const rows = await enriched([sixToFour, teredo]);
    assert.is(JSON.parse(rows.get(sixToFour)!.context).ip, "203.0.113.0", "6to4: not its /48, which is the whole IPv4");
    assert.is(JSON.parse(rows.get(teredo)!.context).ip, "192.0.2.0", "Teredo: the client's IPv4, anonymized");
    const refused = await waitFor("the refused items in rejected_messages", async () => {
      const found = await stack.select<{ message_id: string; raw: string }>(
        `SELECT message_id, raw FROM ${stack.database}.rejected_messages FINAL WHERE message_id IN (${sqlList([refusedNumber, refusedList])})`,
      );
      return found.length === 2 ? new Map(found.map((r) => [r.message_id, JSON.parse(r.raw) as Record<string, unknown>])) : undefined;
    });
    assert.equal(
      [refused.get(refusedNumber)!.ip, refused.get(refusedNumber)!.context],
      [undefined, {}],
      "not an address in text: left out",
    );
    assert.equal(refused.get(refusedList)!.context, [{ ip: "203.0.113.0" }]);
  },
);

live.run();
