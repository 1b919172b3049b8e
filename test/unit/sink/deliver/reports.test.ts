/** The live view's reports of delivery attempts: never waited for, bounded, and a failed or refused write counted. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import pino from "pino";
import { deliveryReports } from "../../../../schemas/destinations";
import { MAX_PENDING, ReportWriter } from "../../../../sink/deliver/reports";

const log = pino({ level: "silent" });
const reports = (n: number) =>
  deliveryReports(
    { workspaceId: "ws1", destinationId: "d-1" },
    Array.from({ length: n }, (_, i) => ({ messageId: `m${i}`, type: "track", receivedAt: "2026-11-29T10:00:00.000Z" })),
    { outcome: "delivered", status: 200, attempt: 1 },
    0,
  );

test("each write is one send keyed by messageId with the report as its value, started at once", () => {
  const sent: { key: string; value: string }[][] = [];
  const writer = new ReportWriter(
    async (m) => sent.push(m),
    () => assert.unreachable("nothing dropped"),
    log,
  );
  writer.write(reports(3));
  assert.is(sent.length, 1, "started without waiting");
  assert.equal(
    sent[0]!.map((m) => m.key),
    ["m0", "m1", "m2"],
  );
  assert.is((JSON.parse(sent[0]![0]!.value) as { destinationId: string }).destinationId, "d-1");
});

test("beyond MAX_PENDING writes under way, reports are dropped and counted; a finished write frees its place", async () => {
  const waiting: (() => void)[] = [];
  let dropped = 0;
  const writer = new ReportWriter(
    () => new Promise<void>((resolve) => waiting.push(resolve)),
    (n) => (dropped += n),
    log,
  );
  for (let i = 0; i < MAX_PENDING; i++) writer.write(reports(1));
  writer.write(reports(5));
  assert.is(dropped, 5);
  assert.is(writer.underWay, MAX_PENDING);
  waiting.shift()!();
  await new Promise((r) => setImmediate(r));
  assert.is(writer.underWay, MAX_PENDING - 1);
  writer.write(reports(2));
  assert.is(dropped, 5, "a place was free");
});

test("a write Kafka refuses is counted as dropped, and nothing throws", async () => {
  let dropped = 0;
  const writer = new ReportWriter(
    () => Promise.reject(new Error("no leader")),
    (n) => (dropped += n),
    log,
  );
  writer.write(reports(4));
  await new Promise((r) => setImmediate(r));
  assert.is(dropped, 4);
  assert.is(writer.underWay, 0);
});

test.run();
