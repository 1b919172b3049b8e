/**
 * The test harness's own start-up (test/support/harness.ts), on the real stack: a port picked free
 * can be taken by another process before the ingest binds it, and that process may answer /readyz.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { freePort, LiveStack } from "../support/harness";

test("a stack whose first port is taken by a process answering /readyz starts its own ingest on another", async () => {
  const foreign = createServer((req, res) => {
    res.statusCode = req.url === "/readyz" ? 200 : 404;
    res.end("{}");
  }).listen(0, "127.0.0.1");
  await once(foreign, "listening");
  const taken = (foreign.address() as AddressInfo).port;
  const stack = new LiveStack();
  let picks = 0;
  stack.pickPort = async () => (++picks === 1 ? taken : freePort());
  try {
    await stack.start();
    assert.is(picks, 2, "the taken port cost one retry");
    assert.is.not(stack.base, `http://127.0.0.1:${taken}`);
    assert.is(stack.ingest!.child.exitCode, null, "the stack's ingest is running");
    const posted = await stack.post("/v1/track", { event: "after a taken port", userId: "u1", messageId: `harness-${stack.id}` });
    assert.is(posted.status, 200, posted.text);
    await stack.rowsLanded([`harness-${stack.id}`]);
  } finally {
    await stack.stop();
    foreign.close();
  }
});

test.run();
