/**
 * Issue 46, rows 4 (ingest side) and 7, through the whole path (real ingest, Kafka, sink,
 * ClickHouse 18.16): one key floods the catalog with 15,000 random event names and 100 random
 * property keys each, and pages with 30 KB random names; every message is stored in events, the
 * workspace's catalog gains at most its caps plus its over-cap rows, and another workspace's new
 * names still get theirs. Then `cli catalog --json` prints names holding C1 and bidi controls
 * escaped. Prints the catalog's row counts before and after the flood.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminPort, basic, LiveStack, waitFor } from "../support/harness";

const EVENT_NAMES = 100;
const PAGE_NAMES = 20;
const SHAPES = 300;
const stack = new LiveStack({
  CATALOG_EVENT_NAMES_PER_DAY: String(EVENT_NAMES),
  CATALOG_PAGE_NAMES_PER_DAY: String(PAGE_NAMES),
  CATALOG_SHAPES_PER_DAY: String(SHAPES),
});
const live = suite("catalog caps at the ingest (live Kafka + ClickHouse)");
live.before(() => stack.start());
live.after(() => stack.stop());

const FLOOD = 15_000;
const PAGES = 200;

const count = async (query: string): Promise<number> => Number((await stack.select<{ n: string }>(query))[0]!.n);
const catalogRows = (workspace: string) =>
  count(
    `SELECT count() AS n FROM (SELECT 1 FROM ${stack.database}.catalog_shapes WHERE workspace_id = '${workspace}' GROUP BY type, event, name, shape)`,
  );
const stored = (workspace: string) => count(`SELECT count() AS n FROM ${stack.table} FINAL WHERE workspace_id = '${workspace}'`);

/** A track with a new random name and 100 random property keys. */
function junkTrack(): Record<string, unknown> {
  const hex = randomBytes(612).toString("hex");
  const properties: Record<string, number> = {};
  for (let k = 0; k < 100; k++) properties[hex.slice(24 + 12 * k, 36 + 12 * k)] = k;
  return { type: "track", messageId: randomUUID(), userId: "u1", event: hex.slice(0, 24), properties };
}

live("a flood of random names and shapes: every event stored, the catalog bounded, another workspace unaffected", async () => {
  const before = { shapes: await catalogRows("ws-test"), events: await stored("ws-test") };
  const started = Date.now();
  // 50 messages a batch (about 100 KB), two at a time, each made just before it is sent (a
  // connection left idle past the ingest's keep-alive timeout while all were made was closed)
  const batch = (i: number): Record<string, unknown>[] =>
    i < FLOOD
      ? Array.from({ length: 50 }, junkTrack)
      : Array.from({ length: 10 }, () => ({
          type: "page",
          messageId: randomUUID(),
          anonymousId: "a1",
          name: randomBytes(15_000).toString("hex"), // 30 KB
        }));
  const starts: number[] = [];
  for (let i = 0; i < FLOOD; i += 50) starts.push(i);
  for (let i = FLOOD; i < FLOOD + PAGES; i += 10) starts.push(i);
  for (let j = 0; j < starts.length; j += 2) {
    const answers = await Promise.all(starts.slice(j, j + 2).map((i) => stack.post("/v1/batch", { batch: batch(i) })));
    for (const a of answers) assert.is(a.status, 200, a.text);
  }
  const sent = FLOOD + PAGES;
  await waitFor("the flood stored", async () => ((await stored("ws-test")) >= before.events + sent ? true : undefined), 180_000);
  const after = { shapes: await catalogRows("ws-test"), events: await stored("ws-test") };
  console.log(
    `flood of ${FLOOD} tracks (random names, 100 random keys each) and ${PAGES} pages (30 KB random names) in ${Date.now() - started} ms: ` +
      `events ${before.events} -> ${after.events}, ws-test catalog_shapes rows ${before.shapes} -> ${after.shapes}`,
  );
  assert.is(after.events - before.events, sent, "every message stored");
  // the caps' rows, plus one over-cap row per type and day (two if the flood crossed midnight UTC)
  assert.ok(after.shapes - before.shapes <= SHAPES + 4, `${after.shapes - before.shapes} catalog rows from ${sent} messages`);
  const junkNames = await count(
    `SELECT count() AS n FROM ${stack.database}.event_catalog WHERE workspace_id = 'ws-test' AND length(event) = 24`,
  );
  assert.ok(junkNames <= EVENT_NAMES, `${junkNames} junk event names in event_catalog`);
  const overCap = await stack.select<{ type: string; n: string }>(
    `SELECT type, toString(sum(count)) AS n FROM ${stack.database}.event_catalog WHERE workspace_id = 'ws-test' AND over_cap = 1 GROUP BY type ORDER BY type`,
  );
  const overTracks = Number(overCap.find((r) => r.type === "track")?.n ?? 0);
  const overPages = Number(overCap.find((r) => r.type === "page")?.n ?? 0);
  assert.ok(overTracks >= FLOOD - SHAPES, `${overTracks} tracks counted over the cap`);
  assert.is(overPages, PAGES - PAGE_NAMES, "pages past their names' cap");

  // another workspace's new names still make catalog rows
  const names = Array.from({ length: 20 }, (_, i) => `Other event ${i}`);
  const other = names.map((event) => ({ type: "track", messageId: randomUUID(), userId: "u2", event, properties: { plan: "pro" } }));
  assert.is((await stack.post("/v1/batch", { batch: other }, { authorization: basic("other-key") })).status, 200);
  await waitFor("ws-other stored", async () => ((await stored("ws-other")) === 20 ? true : undefined), 30_000);
  const otherNames = await count(`SELECT count() AS n FROM ${stack.database}.event_catalog WHERE workspace_id = 'ws-other'`);
  console.log(`ws-other: 20 new names -> ${otherNames} event_catalog rows`);
  assert.is(otherNames, 20);

  // the ingest's metric counts the messages over the cap
  const metrics = await (await fetch(`http://127.0.0.1:${await adminPort(stack.ingest!)}/metrics`)).text();
  const counted = [...metrics.matchAll(/^ingest_catalog_over_cap_total\{cap="[a-z_]+"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  assert.is(counted, overTracks + overPages, "ingest_catalog_over_cap_total");
});

live("cli catalog --json prints C1 controls, bidi controls and marks escaped, as valid JSON", async () => {
  const hostile = [
    "Buy\u009b31m now",
    "osc\u009d0;pwned\u009c",
    "Order\u202eevil\u202c",
    "\u2066iso\u2069 \u200e\u200f\u061c",
    "del\u007f",
  ];
  const batch = hostile.map((event) => ({ type: "track", messageId: randomUUID(), userId: "u3", event }));
  const before = await stored("ws-other");
  assert.is((await stack.post("/v1/batch", { batch }, { authorization: basic("other-key") })).status, 200);
  await waitFor("hostile names stored", async () => ((await stored("ws-other")) === before + hostile.length ? true : undefined), 30_000);
  const cli = stack.spawn("deploy/cli.js", {}, ["catalog", "ws-other", "--json"]);
  assert.is((await cli.exited).code, 0, cli.output());
  const out = cli.output().trim().split("\n").pop()!;
  const raw = out.match(/[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g) ?? [];
  console.log(`cli catalog --json: ${raw.length} raw control or bidi characters in its output`);
  assert.is(raw.length, 0, `raw: ${raw.map((c) => `U+${c.charCodeAt(0).toString(16)}`).join(" ")}`);
  const parsed = JSON.parse(out) as { events: { event: string }[] };
  for (const name of hostile)
    assert.ok(
      parsed.events.some((r) => r.event === name),
      `${JSON.stringify(name)} round-trips`,
    );
});

live.run();
