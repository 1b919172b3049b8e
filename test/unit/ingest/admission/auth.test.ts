import { test } from "uvu";
import * as assert from "uvu/assert";
import { WriteKeys, scanWriteKeys, withBodyKey, writeKeyFromHeaders } from "../../../../ingest/admission/auth";
import { parseWriteKeys, sha256 } from "../../../../ingest/admission/keys";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

test("Basic with Segment's `key:` form drops the one trailing colon", () => {
  assert.equal(writeKeyFromHeaders({ authorization: `Basic ${b64("abc:")}` }), { ok: true, writeKey: "abc" });
});

test("Basic with Dittofeed's keyId:secret form keeps the whole text", () => {
  assert.equal(writeKeyFromHeaders({ authorization: `Basic ${b64("id1:s3cret")}` }), { ok: true, writeKey: "id1:s3cret" });
});

test("Basic removes only one trailing colon", () => {
  assert.equal(writeKeyFromHeaders({ authorization: `Basic ${b64("abc::")}` }), { ok: true, writeKey: "abc:" });
});

test("Bearer and the scheme word in any case", () => {
  assert.equal(writeKeyFromHeaders({ authorization: "Bearer k1" }), { ok: true, writeKey: "k1" });
  assert.equal(writeKeyFromHeaders({ authorization: `basic ${b64("k1:")}` }), { ok: true, writeKey: "k1" });
});

test("PublicWriteKey header, raw or with a scheme word", () => {
  assert.equal(writeKeyFromHeaders({ publicwritekey: "k2" }), { ok: true, writeKey: "k2" });
  assert.equal(writeKeyFromHeaders({ publicwritekey: `Basic ${b64("k2:")}` }), { ok: true, writeKey: "k2" });
});

test("bad base64 and empty keys are malformed", () => {
  assert.equal(writeKeyFromHeaders({ authorization: "Basic %%%not-base64" }), { ok: false, reason: "malformed" });
  assert.equal(writeKeyFromHeaders({ authorization: "Basic a" }), { ok: false, reason: "malformed" });
  assert.equal(writeKeyFromHeaders({ authorization: `Basic ${b64(":")}` }), { ok: false, reason: "malformed" });
  assert.equal(writeKeyFromHeaders({ authorization: "Bearer " }), { ok: false, reason: "malformed" });
  assert.equal(writeKeyFromHeaders({ authorization: "Digest abc" }), { ok: false, reason: "malformed" });
  assert.equal(writeKeyFromHeaders({ authorization: `Basic ${Buffer.from([0xff, 0xfe, 0x3a]).toString("base64")}` }), {
    ok: false,
    reason: "malformed",
  });
});

test("no header at all is missing", () => {
  assert.equal(writeKeyFromHeaders({}), { ok: false, reason: "missing" });
});

test("two headers naming different keys conflict; the same key twice is fine", () => {
  assert.equal(writeKeyFromHeaders({ authorization: "Bearer a", publicwritekey: "b" }), { ok: false, reason: "conflict" });
  assert.equal(writeKeyFromHeaders({ authorization: `Basic ${b64("a:")}`, publicwritekey: "a" }), { ok: true, writeKey: "a" });
});

test("WriteKeys maps known keys to their workspace and refuses unknown ones", () => {
  const keys = new WriteKeys(parseWriteKeys(["k1=ws1", "k2=ws2"]));
  assert.equal(keys.authenticate({ authorization: "Bearer k2" }), { ok: true, workspaceId: "ws2" });
  assert.equal(keys.authenticate({ authorization: "Bearer k3" }), { ok: false, reason: "unknown" });
  assert.equal(keys.authenticate({}), { ok: false, reason: "missing" });
  assert.is(keys.workspaceOf("k1"), "ws1");
  assert.is(keys.workspaceOf("K1"), undefined);
});

test("the body's writeKey alone authenticates; with a header they must agree", () => {
  assert.equal(withBodyKey({ ok: false, reason: "missing" }, "k"), { ok: true, writeKey: "k" });
  assert.equal(withBodyKey({ ok: true, writeKey: "k" }, "k"), { ok: true, writeKey: "k" });
  assert.equal(withBodyKey({ ok: true, writeKey: "k" }, "other"), { ok: false, reason: "conflict" });
  assert.equal(withBodyKey({ ok: true, writeKey: "k" }, undefined), { ok: true, writeKey: "k" });
  assert.equal(withBodyKey({ ok: false, reason: "missing" }, 42), { ok: false, reason: "malformed" });
  assert.equal(withBodyKey({ ok: false, reason: "malformed" }, "k"), { ok: false, reason: "malformed" });
  const keys = new WriteKeys(parseWriteKeys(["k1=ws1"]));
  assert.equal(keys.authenticate({}, "k1"), { ok: true, workspaceId: "ws1" });
  assert.equal(keys.authenticate({ authorization: "Bearer k1" }, "k2"), { ok: false, reason: "conflict" });
});

test("scanWriteKeys reads every writeKey member without parsing, wherever it sits, and says when only a parse can tell", () => {
  const batch = Array.from({ length: 3 }, () => ({ type: "track", event: "writeKey" }));
  assert.equal(scanWriteKeys(JSON.stringify({ writeKey: "a", batch })), { keys: ["a"], complete: true });
  assert.equal(scanWriteKeys(JSON.stringify({ batch, sentAt: "x", writeKey: "last" })), { keys: ["last"], complete: true }, "at the end");
  assert.equal(scanWriteKeys('{ "writeKey" :\n "spaced" }'), { keys: ["spaced"], complete: true });
  assert.equal(scanWriteKeys(JSON.stringify({ batch })), { keys: [], complete: true }, "a value named writeKey is no member");
  assert.equal(scanWriteKeys("{not json"), { keys: [], complete: true });
  assert.equal(
    scanWriteKeys(JSON.stringify({ batch: [{ properties: { writeKey: "nested" } }], writeKey: "top" })),
    { keys: ["nested", "top"], complete: true },
    "nested members are candidates too: none is lost",
  );
  assert.is(scanWriteKeys('{"write\\u004bey":"hidden"}').complete, false, "a \\u escape may spell the name");
  assert.is(scanWriteKeys('{"writeKey":1}').complete, false, "not a plain string");
  assert.is(scanWriteKeys('{"writeKey":"a\\"b"}').complete, false, "an escaped quote");
  const many = JSON.stringify({ batch: Array.from({ length: 20 }, (_, i) => ({ writeKey: `k${i}` })) });
  assert.is(scanWriteKeys(many).complete, false, "past 16 members the parse decides");
});

test("WriteKeys.takeUsed: the digests of known keys used since the last take, each once", () => {
  const keys = new WriteKeys(parseWriteKeys(["k1=ws1", "k2=ws2"]));
  assert.equal(keys.takeUsed(), []);
  keys.workspaceOf("k1");
  keys.workspaceOf("k1");
  keys.workspaceOf("nobody");
  keys.authenticate({ authorization: "Bearer k2" });
  assert.equal(keys.takeUsed().sort(), [sha256("k1"), sha256("k2")].sort());
  assert.equal(keys.takeUsed(), [], "cleared by the take");
  keys.workspaceOf("k2");
  assert.equal(keys.takeUsed(), [sha256("k2")]);
});

test.run();
