/**
 * Where a destination may post (sink/deliver/address.ts): link-local addresses (cloud instance
 * metadata) and AWS's IPv6 metadata address refused, in their IPv4-mapped IPv6 forms too, unless
 * allowed; loopback and private networks allowed; only http and https URLs, without credentials.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { addressRefused, urlProblem } from "../../../../sink/deliver/address";

test("link-local addresses and the cloud metadata addresses are refused", () => {
  for (const address of ["169.254.169.254", "169.254.0.1", "169.254.255.255", "fe80::1", "febf::1", "fd00:ec2::254"])
    assert.ok(addressRefused(address, false), address);
});

test("the IPv4-mapped IPv6 forms of a link-local address are refused, dotted or hex", () => {
  for (const address of [
    "::ffff:169.254.169.254",
    "::ffff:a9fe:a9fe",
    "::FFFF:A9FE:A9FE",
    "::ffff:a9fe:1",
    "0:0:0:0:0:ffff:a9fe:a9fe",
    "0:0:0:0:0:ffff:169.254.169.254",
  ])
    assert.ok(addressRefused(address, false), address);
});

test("the unspecified address :: is refused, as 0.0.0.0/8 is", () => {
  for (const address of ["::", "0:0:0:0:0:0:0:0", "::0.0.0.0", "0.0.0.0"]) assert.ok(addressRefused(address, false), address);
  assert.is(urlProblem("http://[::]:8080/", false), "address :: refused (link-local, cloud metadata, unspecified or 0.0.0.0/8)");
});

test("the IPv4-compatible form of the metadata address is refused, hex or dotted", () => {
  for (const address of ["::a9fe:a9fe", "::169.254.169.254", "0:0:0:0:0:0:a9fe:a9fe", "::A9FE:1"])
    assert.ok(addressRefused(address, false), address);
  assert.type(urlProblem("http://[::a9fe:a9fe]/", false), "string");
});

test("SIIT's IPv4-translated form (::ffff:0:a.b.c.d) of the metadata address is refused", () => {
  for (const address of ["::ffff:0:a9fe:a9fe", "::ffff:0:169.254.169.254", "0:0:0:0:ffff:0:a9fe:a9fe"])
    assert.ok(addressRefused(address, false), address);
  assert.not.ok(addressRefused("::ffff:0:a00:1", false), "a translated 10.0.0.1 is a private network: allowed");
});

test("NAT64's well-known prefix 64:ff9b::/96 carrying 169.254/16 is refused; carrying a public address it is allowed", () => {
  for (const address of ["64:ff9b::a9fe:a9fe", "64:ff9b::169.254.169.254", "64:ff9b:0:0:0:0:a9fe:1", "64:FF9B::A9FE:A9FE"])
    assert.ok(addressRefused(address, false), address);
  assert.not.ok(addressRefused("64:ff9b::808:808", false), "8.8.8.8 through NAT64");
});

test("Alibaba Cloud's metadata address 100.100.100.200 is refused, in IPv6 forms too; its neighbours are not", () => {
  for (const address of ["100.100.100.200", "::ffff:100.100.100.200", "::ffff:6464:64c8", "64:ff9b::6464:64c8"])
    assert.ok(addressRefused(address, false), address);
  for (const address of ["100.100.100.199", "100.100.100.201", "100.64.0.1"]) assert.not.ok(addressRefused(address, false), address);
  assert.type(urlProblem("http://100.100.100.200/latest/meta-data/", false), "string");
});

test("each of these is allowed with allowLinkLocal", () => {
  for (const address of ["::", "::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "64:ff9b::a9fe:a9fe", "100.100.100.200"])
    assert.not.ok(addressRefused(address, true), address);
  assert.is(urlProblem("http://100.100.100.200/", true), undefined);
  assert.is(urlProblem("http://[::]/", true), undefined);
});

test("loopback, private networks and public addresses are allowed", () => {
  for (const address of [
    "127.0.0.1",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "::1",
    "8.8.8.8",
    "fd00::1",
    "fd00:ec2::253",
    "169.253.255.255",
    "169.255.0.1",
    "fec0::1",
  ])
    assert.not.ok(addressRefused(address, false), address);
  assert.not.ok(addressRefused("::ffff:127.0.0.1", false), "a mapped loopback");
  assert.not.ok(addressRefused("::ffff:7f00:1", false), "a mapped loopback, hex");
  assert.not.ok(addressRefused("::ffff:c0a8:101", false), "a mapped 192.168.1.1, hex");
});

test("with allowLinkLocal everything is allowed", () => {
  for (const address of ["169.254.169.254", "fe80::1", "fd00:ec2::254", "::ffff:a9fe:a9fe", "127.0.0.1"])
    assert.not.ok(addressRefused(address, true), address);
});

test("a string that is not an IP address is refused", () => {
  for (const address of ["not-an-ip", "", "metadata.google.internal", "169.254.169", "169.254.169.254.1", "[::1]"])
    assert.ok(addressRefused(address, false), address);
});

test("http and https URLs are fine, loopback and IPv6 literals included", () => {
  for (const url of [
    "http://hooks.example.com/x",
    "https://hooks.example.com:8443/a?b=c",
    "http://127.0.0.1:8080/x",
    "http://[::1]:9/",
    "http://10.0.0.1/",
    "HTTPS://Example.COM/",
  ])
    assert.is(urlProblem(url, false), undefined, url);
});

test("only http and https: ftp, file, javascript and others are refused", () => {
  for (const url of [
    "ftp://example.com/x",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "ws://example.com/",
    "data:text/plain,hi",
    "gopher://example.com/",
  ]) {
    const problem = urlProblem(url, false);
    assert.type(problem, "string", url);
    assert.match(problem!, /http/, url);
  }
});

test("credentials in the URL are refused", () => {
  assert.match(urlProblem("https://user:pass@example.com/", false) ?? "", /credentials/);
  assert.match(urlProblem("https://user@example.com/", false) ?? "", /credentials/, "a user alone");
  assert.match(urlProblem("https://:pass@example.com/", false) ?? "", /credentials/, "a password alone");
});

test("a URL to the instance metadata address is refused, and allowed with allowLinkLocal", () => {
  const url = "http://169.254.169.254/latest/meta-data";
  assert.match(urlProblem(url, false) ?? "", /169\.254\.169\.254/);
  assert.is(urlProblem(url, true), undefined);
  assert.type(urlProblem("http://[fd00:ec2::254]/", false), "string");
  assert.is(urlProblem("http://[fd00:ec2::254]/", true), undefined);
  assert.type(urlProblem("http://[fe80::1]:8080/", false), "string");
});

test("the metadata address in the other spellings a URL parser accepts is refused too", () => {
  for (const url of [
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://0xa9fea9fe/",
    "http://2852039166/",
    "http://169.254.169.254./",
    "http://[FD00:EC2:0::254]/",
  ])
    assert.type(urlProblem(url, false), "string", url);
});

test("something that is not a URL is refused", () => {
  for (const url of ["not a url", "", "//example.com/x", "http://"]) assert.type(urlProblem(url, false), "string", JSON.stringify(url));
  assert.is(urlProblem("not a url", false), "not a URL");
});

test.run();
