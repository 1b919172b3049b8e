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
