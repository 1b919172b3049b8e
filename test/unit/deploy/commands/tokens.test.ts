/**
 * Admin tokens through the admin topic (deploy/commands/tokens.ts): create's refusals, each naming
 * its field, before anything is published (a stand-in Kafka whose producer() throws), the list
 * never holding a digest, and revoke's answers that need no publishing.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { OpResult } from "../../../../schemas/admin/result";
import { createAdminToken, listAdminTokens, revokeAdminToken } from "../../../../deploy/commands/tokens";
import { bookOf, kafkaWithoutProducer, tokenRecord } from "../../../support/admin-fixtures";

const tokens = suite("tokens commands");

const NOW = new Date("2026-03-02T00:00:00.000Z");
const noKafka = { kafka: kafkaWithoutProducer(), topic: "admin" };

const A = "a".repeat(64);
const B = "b".repeat(64);
const live = tokenRecord(A, "tok_00000000000a", { name: "ops", createdAt: "2026-03-01T02:00:00.000Z" });
const gone = tokenRecord(B, "tok_00000000000b", {
  name: "jane",
  scope: "workspace",
  workspaceId: "ws1",
  createdAt: "2026-03-01T01:00:00.000Z",
  revokedAt: "2026-03-01T03:00:00.000Z",
  revokedBy: "operator",
});

function fieldOf<T>(result: OpResult<T>): [number, string | undefined] {
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.value)}`);
  return [result.status, result.field];
}

const create = (input: unknown) => createAdminToken(noKafka, input, "operator", NOW);

tokens("create refuses, naming the field, before publishing", async () => {
  assert.equal(fieldOf(await create({})), [400, "name"]);
  assert.equal(fieldOf(await create({ name: "", scope: "operator" })), [400, "name"]);
  assert.equal(fieldOf(await create({ name: "n", scope: "root" })), [400, "scope"]);
  assert.equal(fieldOf(await create({ name: "n", scope: "workspace" })), [400, "workspaceId"]);
  assert.equal(fieldOf(await create({ name: "n", scope: "operator", workspaceId: "ws1" })), [400, "workspaceId"]);
  assert.equal(fieldOf(await create({ name: "n", scope: "workspace", workspaceId: "a b" })), [400, "workspaceId"]);
  assert.equal(fieldOf(await create({ name: "n", scope: "workspace", workspaceId: "a/b" })), [400, "workspaceId"]);
  assert.equal(fieldOf(await create(null)), [400, "body"]);
});

tokens("a good input goes on to publish", async () => {
  for (const input of [
    { name: "n", scope: "operator" },
    { name: "n", scope: "workspace", workspaceId: "ws1" },
  ]) {
    try {
      await create(input);
      assert.unreachable("it publishes");
    } catch (error) {
      assert.match((error as Error).message, "nothing may be published");
    }
  }
});

tokens("the list holds every token, oldest first, never a digest", () => {
  const listed = listAdminTokens(bookOf(live, gone));
  assert.equal(
    listed.map((t) => t.tokenId),
    ["tok_00000000000b", "tok_00000000000a"],
  );
  for (const t of listed) {
    assert.not.ok("sha256" in t);
    assert.not.ok("kind" in t);
  }
  assert.not.ok(JSON.stringify(listed).includes(A));
  assert.is(listed[0]!.scope === "workspace" && listed[0]!.workspaceId, "ws1");
  assert.is(listed[0]!.revokedAt, "2026-03-01T03:00:00.000Z");
});

tokens("revoke: an unknown token is 404; a revoked one is answered as it is, without publishing", async () => {
  const book = bookOf(live, gone);
  assert.equal(fieldOf(await revokeAdminToken(noKafka, book, "tok_ffffffffffff", "operator", NOW)), [404, "tokenId"]);
  const again = await revokeAdminToken(noKafka, book, "tok_00000000000b", "tok_x", NOW);
  assert.ok(again.ok);
  assert.equal(again.ok && [again.value.revokedAt, again.value.revokedBy], ["2026-03-01T03:00:00.000Z", "operator"]);
  assert.not.ok(again.ok && "sha256" in again.value);
  try {
    await revokeAdminToken(noKafka, book, "tok_00000000000a", "operator", NOW);
    assert.unreachable("a live token is revoked by publishing");
  } catch (error) {
    assert.match((error as Error).message, "nothing may be published");
  }
});

tokens.run();
