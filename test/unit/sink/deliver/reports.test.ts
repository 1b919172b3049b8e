/** The live view's reports of delivery attempts: buffered and written together, never waited for, bounded, a failed write counted. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import pino from "pino";
import { deliveryReports } from "../../../../schemas/destinations";
import { MAX_BUFFERED, ReportWriter } from "../../../../sink/deliver/reports";

const log = pino({ level: "silent" });
const reports = (n: number, from = 0) =>
  deliveryReports(
    { workspaceId: "ws1", destinationId: "d-1" },
    Array.from({ length: n }, (_, i) => ({ messageId: `m${from + i}`, type: "track", receivedAt: "2026-11-29T10:00:00.000Z" })),
    { outcome: "delivered", status: 200, attempt: 1 },
    0,
  );
const LONG = 60_000; // the timer never fires in a test: flush() is called

test("writes of several requests go out together in one send, keyed by messageId, the report as its value", async () => {
  const sent: { key: string; value: string }[][] = [];
  const writer = new ReportWriter(
    async (m) => void sent.push(m),
    () => assert.unreachable("nothing dropped"),
    log,
    LONG,
  );
  writer.write(reports(2));
  writer.write(reports(1, 2));
  assert.is(sent.length, 0, "write only buffers");
  await writer.flush();
  assert.is(sent.length, 1);
  assert.equal(
    sent[0]!.map((m) => m.key),
    ["m0", "m1", "m2"],
  );
  assert.is((JSON.parse(sent[0]![0]!.value) as { destinationId: string }).destinationId, "d-1");
  await writer.stop();
});

test("past MAX_BUFFERED waiting, reports are dropped and counted; a flush makes room", async () => {
  let dropped = 0;
  const writer = new ReportWriter(
    async () => undefined,
    (n) => (dropped += n),
    log,
    LONG,
  );
  writer.write(reports(MAX_BUFFERED));
  writer.write(reports(5));
  assert.is(dropped, 5);
  assert.is(writer.waiting, MAX_BUFFERED);
  await writer.flush();
  writer.write(reports(5));
  assert.is(dropped, 5, "room again");
  await writer.stop();
});

test("one write at a time: reports written during a send wait for the next", async () => {
  let release!: () => void;
  const sent: number[] = [];
  const writer = new ReportWriter(
    (m) => (sent.push(m.length), sent.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve()),
    () => undefined,
    log,
    LONG,
  );
  writer.write(reports(3));
  const first = writer.flush();
  await new Promise((r) => setImmediate(r));
  writer.write(reports(4));
  const second = writer.flush();
  assert.equal(sent, [3], "the second waits for the first");
  release();
  await Promise.all([first, second]);
  assert.equal(sent, [3, 4]);
  await writer.stop();
});

test("a write Kafka refuses is counted as dropped, and nothing throws", async () => {
  let dropped = 0;
  const writer = new ReportWriter(
    () => Promise.reject(new Error("no leader")),
    (n) => (dropped += n),
    log,
    LONG,
  );
  writer.write(reports(4));
  await writer.flush();
  assert.is(dropped, 4);
  assert.is(writer.waiting, 0);
});

test.run();
