/**
 * When keys were last used (ingest/admission/key-usage.ts): the records for used digests, and the
 * writer with a stand-in producer (its sendBatch, what sendWhole calls): one record per used key
 * acknowledged by all replicas, keys carried over after a failed send, what is left written on stop.
 */
import type { Producer, ProducerBatch } from "kafkajs";
import pino from "pino";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KEY_USED_EVERY_MS, keyUsedRecords, writeKeyUse } from "../../../../ingest/admission/key-usage";
import { parseAdminRecord } from "../../../../schemas/admin/records";

const usage = suite("key usage");

const A = "a".repeat(64);
const B = "b".repeat(64);
const C = "c".repeat(64);
const log = pino({ level: "silent" });

/** A producer that records each batch; `failures` sends throw first (a final, not retriable, error). */
function standIn(failures = 0) {
  const batches: ProducerBatch[] = [];
  const state = { failed: 0 };
  const producer = {
    sendBatch: async (batch: ProducerBatch) => {
      if (state.failed < failures) {
        state.failed++;
        throw new Error("broker down");
      }
      batches.push(batch);
      return [];
    },
  } as unknown as Producer;
  return { producer, batches, state };
}

/** The keys used, one list per call, then none. */
const taking = (lists: string[][]) => () => lists.shift() ?? [];

async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 5) {
    if (waited > 2_000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const keysOf = (batch: ProducerBatch) => batch.topicMessages!.flatMap((t) => t.messages.map((m) => m.key as string));

usage("keyUsedRecords: one record per digest, all at the same time, each valid under its own key", () => {
  const now = new Date("2026-03-01T12:00:00.000Z");
  const records = keyUsedRecords([A, B], now);
  assert.equal(records, [
    { kind: "key-used", sha256: A, lastUsedAt: "2026-03-01T12:00:00.000Z" },
    { kind: "key-used", sha256: B, lastUsedAt: "2026-03-01T12:00:00.000Z" },
  ]);
  assert.equal(parseAdminRecord(`key-used:${A}`, JSON.stringify(records[0])), records[0]);
  assert.equal(keyUsedRecords([], now), []);
  assert.is(KEY_USED_EVERY_MS, 60_000);
});

usage("each interval writes one record per used key, acks=all, to the topic", async () => {
  const { producer, batches } = standIn();
  const stop = writeKeyUse(producer, "admin", taking([[A, B, A]]), log, { everyMs: 10, timeoutMs: 1_000 });
  await until(() => batches.length >= 1);
  await stop();
  assert.is(batches.length, 1, "nothing more was used, nothing more written");
  const [batch] = batches;
  assert.is(batch!.acks, -1);
  assert.is(batch!.topicMessages![0]!.topic, "admin");
  assert.equal(keysOf(batch!), [`key-used:${A}`, `key-used:${B}`]);
  const value = JSON.parse(String(batch!.topicMessages![0]!.messages[0]!.value)) as { kind: string; sha256: string };
  assert.equal([value.kind, value.sha256], ["key-used", A]);
});

usage("a failed send carries its keys to the next", async () => {
  const { producer, batches } = standIn(1);
  const stop = writeKeyUse(producer, "admin", taking([[A], [B]]), log, { everyMs: 10, timeoutMs: 1_000 });
  await until(() => batches.length >= 1);
  await stop();
  assert.equal(keysOf(batches[0]!).sort(), [`key-used:${A}`, `key-used:${B}`]);
});

usage("stop writes what is left, and the keys a failed send carried", async () => {
  const { producer, batches } = standIn();
  const stop = writeKeyUse(producer, "admin", taking([[C]]), log, { everyMs: 3_600_000, timeoutMs: 1_000 });
  assert.is(batches.length, 0);
  await stop();
  assert.equal(batches.map(keysOf), [[`key-used:${C}`]]);
  const failing = standIn(1);
  const stopFailing = writeKeyUse(failing.producer, "admin", taking([[A], [B]]), log, { everyMs: 10, timeoutMs: 1_000 });
  await until(() => failing.state.failed === 1);
  await stopFailing();
  assert.equal(
    failing.batches.map((b) => keysOf(b).sort()),
    [[`key-used:${A}`, `key-used:${B}`]],
  );
});

usage.run();
