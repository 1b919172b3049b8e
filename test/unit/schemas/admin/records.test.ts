/**
 * The admin topic's records (schemas/admin/records.ts): the key each kind is filed under, and
 * parsing a topic record back: a tombstone, an empty value, bad JSON, a record under another key
 * and a malformed one are not records; a valid one of each kind is.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminKey, parseAdminRecord, type AdminRecord } from "../../../../schemas/admin/records";
import { AT, keyRecord, regulationRecord, tokenRecord } from "../../../support/admin-fixtures";

const records = suite("admin records");

const A = "a".repeat(64);
const B = "b".repeat(64);
const key: AdminRecord = keyRecord(A, "ws1");
const used: AdminRecord = { kind: "key-used", sha256: A, lastUsedAt: AT };
const token: AdminRecord = tokenRecord(B, "tok_0123456789ab", { name: "jane", scope: "workspace", workspaceId: "ws1" });
const regulation: AdminRecord = regulationRecord();

records("adminKey is <kind>:<id> for each kind", () => {
  assert.is(adminKey(key), `key:${A}`);
  assert.is(adminKey(used), `key-used:${A}`);
  assert.is(adminKey(token), `token:${B}`);
  assert.is(adminKey(regulation), "regulation:reg_0123456789abcdef");
});

records("a valid record of each kind is read back under its own key, from a string or a Buffer", () => {
  for (const r of [key, used, token, regulation]) {
    assert.equal(parseAdminRecord(adminKey(r), JSON.stringify(r)), r, r.kind);
    assert.equal(parseAdminRecord(adminKey(r), Buffer.from(JSON.stringify(r))), r, `${r.kind} as a Buffer`);
  }
  const operator = { ...token, scope: "operator" } as Record<string, unknown>;
  delete operator.workspaceId;
  assert.ok(parseAdminRecord(`token:${B}`, JSON.stringify(operator)), "an operator token has no workspaceId");
});

records("a tombstone, an empty value and bad JSON are not records", () => {
  assert.is(parseAdminRecord(`key:${A}`, null), undefined);
  assert.is(parseAdminRecord(`key:${A}`, ""), undefined);
  assert.is(parseAdminRecord(`key:${A}`, Buffer.alloc(0)), undefined);
  assert.is(parseAdminRecord(`key:${A}`, "{not json"), undefined);
  assert.is(parseAdminRecord(`key:${A}`, "null"), undefined);
});

records("a record filed under another key is refused", () => {
  assert.is(parseAdminRecord(`key:${B}`, JSON.stringify(key)), undefined, "another digest");
  assert.is(parseAdminRecord(`key-used:${A}`, JSON.stringify(key)), undefined, "another kind");
  assert.is(parseAdminRecord(`token:${A}`, JSON.stringify(token)), undefined);
  assert.is(parseAdminRecord("regulation:reg_ffffffffffffffff", JSON.stringify(regulation)), undefined);
});

records("malformed records are refused: a workspace token without its workspaceId, a bad digest, a bad tokenId", () => {
  const { workspaceId: _w, ...noWorkspace } = token as Extract<AdminRecord, { kind: "token"; scope: "workspace" }>;
  assert.is(parseAdminRecord(`token:${B}`, JSON.stringify(noWorkspace)), undefined);
  const upper = { ...key, sha256: A.toUpperCase() };
  assert.is(parseAdminRecord(`key:${upper.sha256}`, JSON.stringify(upper)), undefined);
  assert.is(parseAdminRecord(`token:${B}`, JSON.stringify({ ...token, tokenId: "tok_xyz" })), undefined);
  assert.is(parseAdminRecord(`key-used:${A}`, JSON.stringify({ ...used, lastUsedAt: "yesterday" })), undefined);
});

records.run();
