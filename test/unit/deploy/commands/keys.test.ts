/**
 * Write keys through the admin topic (deploy/commands/keys.ts): the list (the topic's keys and
 * the file's, merged, never the key), keyIdOf, and the refusals of create and revoke that return
 * before anything is published (a stand-in Kafka whose producer() throws proves nothing was).
 * Publishing against Kafka is test/live/admin-api.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { KeyRecord } from "../../../../schemas/admin/records";
import type { OpResult } from "../../../../schemas/admin/result";
import { parseWriteKeys, sha256 } from "../../../../ingest/admission/keys";
import { createWriteKey, keyIdOf, listWriteKeys, revokeWriteKey } from "../../../../deploy/commands/keys";
import { bookOf, kafkaWithoutProducer, keyRecordOf } from "../../../support/admin-fixtures";

const keys = suite("keys commands");

const NOW = new Date("2026-03-02T00:00:00.000Z");
const noKafka = { kafka: kafkaWithoutProducer(), topic: "admin" };

const record = (key: string, workspaceId: string, createdAt: string, extra: Partial<KeyRecord> = {}) =>
  keyRecordOf(key, workspaceId, { createdAt, ...extra });

function refusal<T>(result: OpResult<T>): { status: number; field?: string } {
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.value)}`);
  return { status: result.status, ...(result.field === undefined ? {} : { field: result.field }) };
}

keys("keyIdOf is the first 16 hex of the digest", () => {
  assert.is(keyIdOf("0123456789abcdef" + "f".repeat(48)), "0123456789abcdef");
});

keys("list merges the topic's keys and the file's, once each, ordered by workspace then creation, never the key", () => {
  const book = bookOf(
    record("wk_secondkey123", "ws1", "2026-03-01T02:00:00.000Z"),
    record("wk_firstkey1234", "ws1", "2026-03-01T01:00:00.000Z"),
    record("file-on-topic", "ws0", "2026-03-01T00:00:00.000Z", {
      createdBy: "keys-file",
      revokedAt: NOW.toISOString(),
      revokedBy: "operator",
    }),
  );
  book.apply(
    `key-used:${sha256("wk_firstkey1234")}`,
    JSON.stringify({ kind: "key-used", sha256: sha256("wk_firstkey1234"), lastUsedAt: "2026-03-01T05:00:00.000Z" }),
  );
  book.apply(
    `key-used:${sha256("f2")}`,
    JSON.stringify({ kind: "key-used", sha256: sha256("f2"), lastUsedAt: "2026-03-01T06:00:00.000Z" }),
  );
  const configured = parseWriteKeys(["file-on-topic=ws0", "f2=ws2", "f2=ws2"]);
  const listed = listWriteKeys(book, configured);
  assert.equal(
    listed.map((k) => [k.workspaceId, k.source, k.keyId]),
    [
      ["ws0", "file", keyIdOf(sha256("file-on-topic"))],
      ["ws1", "api", keyIdOf(sha256("wk_firstkey1234"))],
      ["ws1", "api", keyIdOf(sha256("wk_secondkey123"))],
      ["ws2", "file", keyIdOf(sha256("f2"))],
    ],
  );
  assert.equal(listed[0]!.revokedAt, NOW.toISOString(), "the file's key revoked on the topic shows as revoked");
  assert.is(listed[1]!.lastUsedAt, "2026-03-01T05:00:00.000Z");
  assert.is(listed[2]!.lastUsedAt, undefined);
  assert.equal(listed[3], {
    keyId: keyIdOf(sha256("f2")),
    workspaceId: "ws2",
    fingerprint: `sha256:${sha256("f2").slice(0, 8)}`,
    source: "file",
    lastUsedAt: "2026-03-01T06:00:00.000Z",
  });
  const text = JSON.stringify(listed);
  for (const secret of ["wk_secondkey123", "wk_firstkey1234", "f2=", sha256("f2")]) assert.not.ok(text.includes(secret), secret);
  assert.equal(
    listWriteKeys(book, configured, "ws1").map((k) => k.workspaceId),
    ["ws1", "ws1"],
  );
  assert.equal(listWriteKeys(book, configured, "nobody"), []);
});

keys("create refuses a bad workspaceId by name, before publishing", async () => {
  for (const bad of ["", "has space", "a/b", "x".repeat(201)]) {
    assert.equal(refusal(await createWriteKey(noKafka, bad, "operator", NOW)), { status: 400, field: "workspaceId" }, JSON.stringify(bad));
  }
  try {
    await createWriteKey(noKafka, "ws1", "operator", NOW);
    assert.unreachable("a good workspaceId publishes");
  } catch (error) {
    assert.match((error as Error).message, "nothing may be published");
  }
});

keys("revoke: unknown keyId and another workspace's key are 404; a revoked key is answered as it is", async () => {
  const book = bookOf(
    record("wk_live", "ws1", "2026-03-01T00:00:00.000Z"),
    record("wk_gone", "ws1", "2026-03-01T00:00:00.000Z", { revokedAt: "2026-03-01T03:00:00.000Z", revokedBy: "tok_000000000001" }),
  );
  const configured = parseWriteKeys(["fk=ws2"]);
  const scope = { workspaceId: "ws1", actor: "operator", now: NOW };
  assert.equal(refusal(await revokeWriteKey(noKafka, book, configured, "0000000000000000", scope)), { status: 404, field: "keyId" });
  assert.equal(refusal(await revokeWriteKey(noKafka, book, configured, keyIdOf(sha256("fk")), scope)), { status: 404, field: "keyId" });
  const other = { ...scope, workspaceId: "ws2" };
  assert.equal(refusal(await revokeWriteKey(noKafka, book, configured, keyIdOf(sha256("wk_live")), other)), {
    status: 404,
    field: "keyId",
  });
  const again = await revokeWriteKey(noKafka, book, configured, keyIdOf(sha256("wk_gone")), scope);
  assert.ok(again.ok);
  assert.equal(again.ok && [again.value.revokedAt, again.value.revokedBy], ["2026-03-01T03:00:00.000Z", "tok_000000000001"]);
  try {
    await revokeWriteKey(noKafka, book, configured, keyIdOf(sha256("wk_live")), scope);
    assert.unreachable("a live key is revoked by publishing");
  } catch (error) {
    assert.match((error as Error).message, "nothing may be published");
  }
});

keys.run();
