import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { WriteKeys } from "../../../../ingest/admission/auth";
import { createKey, readKeys, revokeKeys } from "../../../../ingest/admission/keys";
import { acceptedKeys, parseKeysFile, parseWriteKeys, sha256 } from "../../../../ingest/admission/keys";
import { keyRecordOf } from "../../../support/admin-fixtures";

test("entries may be plain keys (hashed on reading) or sha256 digests", () => {
  const hex = sha256("k2");
  assert.equal(parseWriteKeys(["k1=ws1", `sha256:${hex.toUpperCase()}=ws2`, "a=b=ws3"]), [
    { sha256: sha256("k1"), workspaceId: "ws1" },
    { sha256: hex, workspaceId: "ws2" },
    { sha256: sha256("a=b"), workspaceId: "ws3" },
  ]);
  const keys = new WriteKeys(parseWriteKeys(["k1=ws1", `sha256:${hex}=ws2`]));
  assert.is(keys.workspaceOf("k2"), "ws2");
  assert.is(keys.workspaceOf(`sha256:${hex}`), undefined, "the digest itself is not a key");
});

test("a keys file skips blanks and comments and refuses a bad line by name", () => {
  assert.is(parseKeysFile("# keys\n\nk1=ws1\n  \n").length, 1);
  assert.throws(() => parseKeysFile("k1=ws1\nno-workspace\n"), /workspaceId/);
});

test("create prints a new key once, stores only its hash; revoke by key or workspace", () => {
  const path = join(mkdtempSync(join(tmpdir(), "keys-")), "write-keys");
  const first = createKey(path, "ws1");
  const second = createKey(path, "ws1");
  const third = createKey(path, "ws2");
  assert.match(first, /^wk_[A-Za-z0-9_-]{43}$/);
  assert.is.not(first, second);
  const text = readFileSync(path, "utf8");
  assert.not.ok(text.includes(first), "the plain key is not in the file");
  assert.ok(text.includes(`sha256:${sha256(first)}=ws1`));
  const keys = new WriteKeys(readKeys(path));
  assert.is(keys.workspaceOf(third), "ws2");
  assert.is(revokeKeys(path, { writeKey: second }), 1);
  assert.is(revokeKeys(path, { workspaceId: "ws2" }), 1);
  const left = new WriteKeys(readKeys(path));
  assert.equal([left.workspaceOf(first), left.workspaceOf(second), left.workspaceOf(third)], ["ws1", undefined, undefined]);
});

test("an absent file has no keys", () => {
  assert.equal(readKeys(join(tmpdir(), "does-not-exist-keys")), []);
  const path = join(mkdtempSync(join(tmpdir(), "keys-")), "write-keys");
  writeFileSync(path, "");
  assert.equal(readKeys(path), []);
});

const keyRecord = (key: string, workspaceId: string, revokedAt?: string) =>
  keyRecordOf(key, workspaceId, revokedAt === undefined ? {} : { revokedAt, revokedBy: "operator" });

test("acceptedKeys: the file's keys and the topic's, a revoke on the topic winning over the file", () => {
  const configured = parseWriteKeys(["k1=ws1", "k2=ws2"]);
  assert.equal(acceptedKeys(configured, []), configured, "no records: the file's keys");
  const accepted = acceptedKeys(configured, [keyRecord("k3", "ws3"), keyRecord("k2", "ws2", "2026-03-02T00:00:00.000Z")]);
  assert.equal(accepted.map((e) => e.workspaceId).sort(), ["ws1", "ws3"], "k3 added from the topic, k2 of the file revoked");
  assert.ok(accepted.some((e) => e.sha256 === sha256("k3")));
  assert.not.ok(accepted.some((e) => e.sha256 === sha256("k2")));
  assert.equal(acceptedKeys([], [keyRecord("k4", "ws4", "2026-03-02T00:00:00.000Z")]), [], "a revoked api key is not accepted");
});

test("acceptedKeys: a digest in both the file and the topic is one entry", () => {
  const accepted = acceptedKeys(parseWriteKeys(["k1=ws1", "k1=ws1"]), [keyRecord("k1", "ws1")]);
  assert.equal(accepted, [{ sha256: sha256("k1"), workspaceId: "ws1" }]);
  const keys = new WriteKeys(accepted);
  assert.is(keys.workspaceOf("k1"), "ws1");
});

test.run();
