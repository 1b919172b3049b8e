/**
 * Bodies that stop halfway, in process (test/support/ingest-app.ts): one sender (a workspace by its
 * key header, else a client address) holding many of them cannot fill the in-flight budget that
 * every other sender's requests need (ingest/admission/budget.ts, the sender's cap).
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { connect, type Socket } from "node:net";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { basicAuth, inProcessIngest } from "../../../support/ingest-app";
import { WriteKeys } from "../../../../ingest/admission/auth";
import { parseWriteKeys } from "../../../../ingest/admission/keys";
import { senderCap } from "../../../../ingest/admission/budget";

const MAX_REQUEST_BYTES = 100_000;
const BUDGET = 2_000_000;
const SENT = 90_000;

/** A setup where 30 stalled 90 KB bodies (2.7 MB) would fill the 2 MB budget twice over. */
async function ingestWithSmallBudget() {
  return inProcessIngest({
    writeKeys: new WriteKeys(parseWriteKeys(["wk=ws", "atk=attacker"])),
    limits: {
      maxRequestBytes: MAX_REQUEST_BYTES,
      maxMessageBytes: 32_768,
      maxBatchMessages: 2_500,
      maxJsonDepth: 64,
      maxRecordBytes: 998_976,
    },
    maxInflightBytes: BUDGET,
    trustedProxies: 1,
  });
}

/**
 * Opens `count` sockets that each announce a 100 KB body and send 90 KB of it, then stop; resolves
 * with the sockets and the status line each one was answered with so far (an empty string: none).
 */
async function stall(base: string, count: number, headers: string[]): Promise<{ sockets: Socket[]; answers: string[] }> {
  const { hostname, port } = new URL(base);
  const answers = Array.from({ length: count }, () => "");
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i++) {
    const socket = connect(Number(port), hostname);
    await once(socket, "connect");
    socket.on("data", (chunk: Buffer) => (answers[i] ||= chunk.toString("latin1").split("\r\n")[0]!));
    socket.on("error", () => {});
    const head = [
      "POST /v1/batch HTTP/1.1",
      `Host: ${hostname}`,
      "Content-Type: application/json",
      `Content-Length: ${MAX_REQUEST_BYTES}`,
      ...headers,
    ];
    socket.write(`${head.join("\r\n")}\r\n\r\n{"batch":[${" ".repeat(SENT - 10)}`);
    sockets.push(socket);
  }
  await sleep(300); // the ingest reads and charges what arrived
  return { sockets, answers };
}

/** A 25 KB message: more than the room a budget filled by 90 KB bodies could have left. */
const track = (id: string) => ({
  type: "track",
  event: "Signed Up",
  userId: "u1",
  messageId: id,
  properties: { note: "x".repeat(25_000) },
});

test("a workspace's stalled bodies (its public key in a header) hold its sender's cap; another workspace is answered 200", async () => {
  const ingest = await ingestWithSmallBudget();
  const attack = await stall(ingest.base, 30, [`Authorization: ${basicAuth("atk")}`]);
  try {
    const victim = await fetch(`${ingest.base}/v1/batch`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basicAuth("wk") },
      body: JSON.stringify({ batch: [track("victim-1")] }),
    });
    assert.is(victim.status, 200, `another workspace's batch: ${await victim.text()}`);
    const held = Math.floor(senderCap(BUDGET, MAX_REQUEST_BYTES) / SENT);
    const refused = attack.answers.filter((line) => line.startsWith("HTTP/1.1 503"));
    assert.is(refused.length, 30 - held, `the attacker's bodies past its cap are answered 503 (${held} held)`);
    assert.is(attack.answers.filter((line) => line === "").length, held, "the ones within the cap still wait for their end");
  } finally {
    for (const socket of attack.sockets) socket.destroy();
    await ingest.close();
  }
});

test("stalled bodies with no key header (the writeKey would be in the body) are capped by client address", async () => {
  const ingest = await ingestWithSmallBudget();
  const attack = await stall(ingest.base, 30, ["X-Forwarded-For: 10.0.0.1"]);
  try {
    const victim = await fetch(`${ingest.base}/v1/batch`, {
      method: "POST",
      headers: { "content-type": "text/plain", "x-forwarded-for": "10.0.0.2" },
      body: JSON.stringify({ writeKey: "wk", batch: [track("victim-2")] }),
    });
    assert.is(victim.status, 200, `analytics.js's request from another address: ${await victim.text()}`);
    assert.ok(
      attack.answers.some((line) => line.startsWith("HTTP/1.1 503")),
      "the address's bodies past its cap are answered 503",
    );
    assert.equal(
      ingest.produced.map((r) => r.key?.toString()),
      ["victim-2"],
    );
  } finally {
    for (const socket of attack.sockets) socket.destroy();
    await ingest.close();
  }
});

test.run();
