/**
 * Stops under traffic (live, real Kafka and ClickHouse). The ingest's clients that keep sending on
 * keep-alive connections are told `Connection: close` once SIGTERM arrives, so the server's close
 * ends and the process exits within its drain delay, and every acknowledged message lands once.
 * Before answers said so, a connection busy at the close was served for as long as its client
 * kept sending (fault scenario 7 once waited 339 s for the exit). The sink's health port, polled
 * without pause on one connection, does not hold the sink's exit either.
 */
import { randomUUID } from "node:crypto";
import { Agent } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { basic, exitWithin, LiveStack, sinkPort, waitFor } from "../support/harness";
import { getKeepAlive, postKeepAlive } from "../support/keep-alive";

const DRAIN_DELAY_MS = 1_000;
/** Far below the connections' backstop cut (INGEST_REQUEST_TIMEOUT_MS + PRODUCE_TIMEOUT_MS, 35 s here). */
const EXIT_BOUND_MS = DRAIN_DELAY_MS + 9_000;

const stack = new LiveStack({ INGEST_DRAIN_DELAY_MS: String(DRAIN_DELAY_MS) });

test.before(() => stack.start());
test.after(() => stack.stop());

test("SIGTERM while 4 keep-alive clients keep sending: answers say Connection: close, the ingest exits within its drain delay, every ack lands once", async () => {
  const userId = `stop-${stack.id}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const acked: string[] = [];
  let answeredClose = 0;
  let failedConnections = 0;
  let sending = true;
  const client = async () => {
    while (sending) {
      const batch = Array.from({ length: 20 }, () => ({ type: "track", event: "Stopping", userId, messageId: randomUUID() }));
      try {
        const answer = await postKeepAlive(agent, `${stack.base}/v1/batch`, JSON.stringify({ batch }), {
          authorization: basic("test-key"),
        });
        if (answer.status === 200) acked.push(...batch.map((m) => m.messageId));
        if (answer.connection === "close") answeredClose += 1;
      } catch {
        failedConnections += 1; // refused or reset once the ingest closed: the batch was not acked
        await sleep(20);
      }
    }
  };
  const clients = Array.from({ length: 4 }, client);
  await sleep(1_500);
  const ackedBefore = acked.length;
  const signalled = Date.now();
  stack.ingest!.child.kill("SIGTERM");
  const exit = await exitWithin(stack.ingest!, EXIT_BOUND_MS);
  const exitMs = Date.now() - signalled;
  sending = false;
  await Promise.all(clients);
  agent.destroy();

  assert.ok(ackedBefore > 0, "traffic flowed before SIGTERM");
  assert.ok(
    exit,
    `the ingest still ran ${EXIT_BOUND_MS} ms after SIGTERM (${answeredClose} answers said close):\n${stack.ingest!.output()}`,
  );
  assert.equal(exit, { code: 0, signal: null }, stack.ingest!.output());
  assert.ok(exitMs >= DRAIN_DELAY_MS, `exited after ${exitMs} ms: the drain delay was kept`);
  assert.ok(answeredClose > 0, "answers after SIGTERM said Connection: close");
  assert.ok(failedConnections > 0, "the clients were still sending when the ingest exited");
  // The sink still runs: every acked message lands, once (an unacked one may land too: its answer was lost, not its record).
  const landed = await waitFor(`${acked.length} acked messages of ${userId}`, async () => {
    const rows = await stack.select<{ message_id: string; n: string }>(
      `SELECT message_id, count() AS n FROM ${stack.table} FINAL WHERE user_id = '${userId}' GROUP BY message_id`,
    );
    const ids = new Set(rows.map((r) => r.message_id));
    return acked.every((id) => ids.has(id)) ? rows : undefined;
  });
  console.log(
    `\n  stop under keep-alive traffic: exit ${exitMs} ms after SIGTERM; ${acked.length} acked (${ackedBefore} before it), ${answeredClose} answers said close, ${failedConnections} failed connections`,
  );
  assert.equal(
    landed.filter((r) => Number(r.n) !== 1),
    [],
    "no message twice under FINAL",
  );
});

test("SIGTERM to the sink while a client polls its /readyz without pause on one keep-alive connection: the sink exits", async () => {
  const port = await sinkPort(stack.sink!);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let answers = 0;
  let polling = true;
  const poll = (async () => {
    while (polling) {
      try {
        await getKeepAlive(agent, `http://127.0.0.1:${port}/readyz`);
        answers += 1;
      } catch {
        await sleep(20); // the sink closed the port
      }
    }
  })();
  await waitFor("the poller answered", async () => (answers > 10 ? true : undefined), 5_000);
  stack.sink!.child.kill("SIGTERM");
  const exit = await exitWithin(stack.sink!, EXIT_BOUND_MS);
  polling = false;
  await poll;
  agent.destroy();
  assert.ok(exit, `the sink still ran ${EXIT_BOUND_MS} ms after SIGTERM (${answers} answers to the poller):\n${stack.sink!.output()}`);
  assert.equal(exit, { code: 0, signal: null }, stack.sink!.output());
});

test.run();
