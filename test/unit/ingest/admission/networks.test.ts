/**
 * What requests without a checked writeKey may cost, by client network (ingest/admission/networks.ts):
 * the network of an address, and the gate's three buckets, with the clock passed in.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { networkOf, Throttle, UnkeyedGate, type GateSettings } from "../../../../ingest/admission/networks";

const SETTINGS: GateSettings = {
  failuresPerSecond: 1,
  failureBurst: 3,
  bytesPerSecond: 100,
  bytesBurst: 1_000,
  processBytesPerSecond: 100,
  processBytesBurst: 2_000,
  maxNetworks: 1_000,
};

test("networkOf: IPv4 /24, IPv6 /64, an IPv4-mapped address as its IPv4, anything else as itself", () => {
  assert.is(networkOf("203.0.113.7"), "v4:203.0.113.0/24");
  assert.is(networkOf("203.0.113.250"), networkOf("203.0.113.7"), "one /24");
  assert.is.not(networkOf("203.0.114.7"), networkOf("203.0.113.7"));
  assert.is(networkOf("::ffff:203.0.113.9"), "v4:203.0.113.0/24");
  assert.is(networkOf("2001:db8:1:2:aaaa::1"), "v6:2001:db8:1:2::/64");
  assert.is(networkOf("2001:db8:1:2:ffff:ffff:ffff:ffff"), networkOf("2001:db8:1:2::5"), "a host's whole /64 is one network");
  assert.is.not(networkOf("2001:db8:1:3::1"), networkOf("2001:db8:1:2::1"));
  assert.is(networkOf(""), "raw:");
});

test("failures: a network past its burst has no key looked up, valid or not, until the rate refills; others are untouched", () => {
  const gate = new UnkeyedGate(SETTINGS);
  const a = networkOf("198.51.100.1");
  for (let i = 0; i < 3; i++) {
    assert.ok(gate.mayLookUp(a, 0).ok, `failure ${i}`);
    gate.fail(a, 0);
  }
  const refused = gate.mayLookUp(a, 0);
  assert.equal(refused, { ok: false, retryAfterSeconds: 1, bucket: "failures" });
  assert.is(gate.admit(a, 0).ok, false, "nor is a body without a key header read");
  assert.ok(gate.mayLookUp(networkOf("198.51.101.1"), 0).ok, "another network is not held to it");
  assert.ok(gate.mayLookUp(a, 1_000).ok, "one failure's worth refilled after a second");
});

test("bytes: an unkeyed body is charged as it arrives, refused past its network's bucket, and given back when its key checks out", () => {
  const gate = new UnkeyedGate(SETTINGS);
  const net = networkOf("192.0.2.10");
  const good = gate.admit(net, 0);
  assert.ok(good.ok && good.account);
  assert.ok(good.account!.charge(900, 0).ok);
  good.account!.keyed(0);
  const bad = gate.admit(net, 0);
  assert.ok(bad.account!.charge(900, 0).ok, "the first body's bytes came back");
  assert.ok(bad.account!.charge(200, 0).ok, "the chunk that empties the bucket is paid in full (100 in debt)");
  assert.equal(bad.account!.charge(1, 0), { ok: false, retryAfterSeconds: 2, bucket: "bytes" }, "past 1,000 unreturned bytes");
  bad.account!.failed(0);
  bad.account!.keyed(0); // decided once: nothing comes back after a failure
  assert.equal(gate.admit(net, 0), { ok: false, retryAfterSeconds: 2, bucket: "bytes" }, "the network is in debt: not read at all");
  assert.ok(gate.admit(net, 3_000).ok, "until the rate paid the debt");
});

test("process: when every network's unreturned bytes together pass its bucket, only networks in good standing are read", () => {
  const gate = new UnkeyedGate(SETTINGS);
  // Three networks each leave 900 bytes unreturned: 2,700 of the process's 2,000.
  for (const ip of ["10.0.1.1", "10.0.2.1", "10.0.3.1"]) {
    const admitted = gate.admit(networkOf(ip), 0);
    assert.ok(admitted.ok, ip);
    admitted.account!.charge(900, 0);
    admitted.account!.failed(0);
  }
  assert.equal(gate.admit(networkOf("10.0.1.1"), 0), { ok: false, retryAfterSeconds: 8, bucket: "process" }, "a network with a failure");
  const clean = gate.admit(networkOf("10.0.9.1"), 0);
  assert.ok(clean.ok, "a network in good standing is still read");
  assert.ok(clean.account!.charge(600, 0).ok, "and its whole body, though the process's bucket is empty");
  assert.ok(clean.account!.charge(300, 0).ok);
  clean.account!.keyed(0);
});

test("memory: at most maxNetworks networks are remembered; a forgotten one starts full", () => {
  const gate = new UnkeyedGate({ ...SETTINGS, maxNetworks: 2 });
  const first = networkOf("10.1.0.1");
  for (let i = 0; i < 3; i++) gate.fail(first, 0);
  assert.is(gate.mayLookUp(first, 0).ok, false);
  gate.fail(networkOf("10.2.0.1"), 0);
  gate.fail(networkOf("10.3.0.1"), 0);
  assert.ok(gate.mayLookUp(first, 0).ok, "the least recently seen network was forgotten");
});

test("throttle: a network's refusals wait, at most a few at once; past that they are answered at once", async () => {
  const throttle = new Throttle(30, 2);
  const started = performance.now();
  const held = await Promise.all([throttle.hold("a"), throttle.hold("a"), throttle.hold("a"), throttle.hold("b")]);
  assert.equal(held, [true, true, false, true], "the third of network a is not held");
  assert.ok(performance.now() - started >= 25, "the held ones waited");
  assert.is(throttle.networks, 0, "nothing is remembered once answered");
});

test.run();
