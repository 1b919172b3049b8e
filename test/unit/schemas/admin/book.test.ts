/**
 * The admin topic's state (schemas/admin/book.ts AdminBook.apply): records set, tombstones and
 * records that are not (malformed, or under another key) remove, key-used keeps the latest time
 * whatever order, and onKeysChange fires for key records only. The Kafka follower is not tested here.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AdminBook } from "../../../../schemas/admin/book";
import {
  adminKey,
  type DestinationHealthRecord,
  type KeyRecord,
  type RegulationRecord,
  type TokenRecord,
} from "../../../../schemas/admin/records";
import { AT, keyRecord, regulationRecord, tokenRecord } from "../../../support/admin-fixtures";

const book = suite("admin book");

const A = "a".repeat(64);
const B = "b".repeat(64);
const key = keyRecord(A, "ws1");
const token = tokenRecord(B, "tok_0123456789ab");
const regulation = regulationRecord();
const put = (b: AdminBook, r: KeyRecord | TokenRecord | RegulationRecord) => b.apply(adminKey(r), JSON.stringify(r));
const usedAt = (b: AdminBook, at: string) => b.apply(`key-used:${A}`, JSON.stringify({ kind: "key-used", sha256: A, lastUsedAt: at }));

book("records are set under their id; a tombstone removes each", () => {
  const b = new AdminBook();
  put(b, key);
  put(b, token);
  put(b, regulation);
  usedAt(b, AT);
  assert.equal(b.keys.get(A), key);
  assert.equal(b.token(B), token);
  assert.equal(b.regulations.get(regulation.regulateId), regulation);
  assert.is(b.keysUsed.get(A), Date.parse(AT));
  for (const k of [`key:${A}`, `token:${B}`, `regulation:${regulation.regulateId}`, `key-used:${A}`]) b.apply(k, null);
  assert.equal([b.keys.size, b.tokens.size, b.regulations.size, b.keysUsed.size], [0, 0, 0, 0]);
  assert.is(b.token(B), undefined);
});

book("a later record replaces; a revoked key stays, revoked", () => {
  const b = new AdminBook();
  put(b, key);
  put(b, { ...key, revokedAt: AT, revokedBy: "tok_0123456789ab" });
  assert.is(b.keys.size, 1);
  assert.is(b.keys.get(A)?.revokedAt, AT);
});

book("a record filed under another key is not set there, and removes what that key held", () => {
  const b = new AdminBook();
  put(b, key);
  b.apply(`key:${A}`, JSON.stringify({ ...key, sha256: B }));
  assert.is(b.keys.size, 0, "the key's own entry is removed");
  b.apply(`key:${B}`, JSON.stringify(key));
  assert.is(b.keys.size, 0, "nothing is filed under B");
  put(b, token);
  b.apply(`token:${B}`, "{bad json");
  assert.is(b.tokens.size, 0);
  b.apply("other:thing", JSON.stringify(key));
  b.apply("nocolon", null);
  assert.is(b.keys.size, 0, "an unknown kind changes nothing");
});

book("key-used keeps the latest time whichever order the records arrive in", () => {
  const early = "2026-03-01T10:00:00.000Z";
  const late = "2026-03-01T11:00:00.000Z";
  const forward = new AdminBook();
  usedAt(forward, early);
  usedAt(forward, late);
  const backward = new AdminBook();
  usedAt(backward, late);
  usedAt(backward, early);
  assert.is(forward.keysUsed.get(A), Date.parse(late));
  assert.is(backward.keysUsed.get(A), Date.parse(late));
});

book("onKeysChange listeners run for key records only, including their removal", () => {
  const b = new AdminBook();
  let calls = 0;
  let more = 0;
  b.onKeysChange(() => calls++);
  b.onKeysChange(() => more++);
  put(b, token);
  put(b, regulation);
  usedAt(b, AT);
  assert.is(calls, 0);
  put(b, key);
  assert.equal([calls, more], [1, 1]);
  b.apply(`key:${A}`, null);
  assert.equal([calls, more], [2, 2]);
});

book("staleHealthKeys: the keys of reports older than the bound, whatever destination; a tombstone of one removes it", () => {
  const b = new AdminBook();
  const report = (destinationId: string, instanceId: string, at: string): DestinationHealthRecord => ({
    kind: "destination-health",
    destinationId,
    workspaceId: "ws1",
    instanceId,
    at,
    delivered: 1,
    retried: 0,
    failed: 0,
    oldestWaitingSeconds: 0,
  });
  const old = report("hook", "0000000000000001", "2026-11-29T11:00:00.000Z");
  const fresh = report("hook", "0000000000000002", "2026-11-29T11:59:00.000Z");
  const otherOld = report("other", "0000000000000003", "2026-11-29T11:49:00.000Z");
  for (const r of [old, fresh, otherOld]) b.apply(adminKey(r), JSON.stringify(r));
  const nowMs = Date.parse("2026-11-29T12:00:00.000Z");
  assert.equal(b.staleHealthKeys(nowMs, 10 * 60_000).sort(), [adminKey(old), adminKey(otherOld)].sort());
  assert.equal(b.staleHealthKeys(nowMs, 2 * 60 * 60_000), [], "none that old");
  b.apply(adminKey(old), null);
  assert.equal(b.staleHealthKeys(nowMs, 10 * 60_000), [adminKey(otherOld)]);
  assert.equal(
    b.healthReports("hook").map((r) => r.instanceId),
    [fresh.instanceId],
  );
});

book.run();
