/**
 * Fault scenario 12, on the fault stack (test/faults/node/run.sh): the live view's stream across a
 * Kafka broker restart. A viewer holds /live/events open; the broker is stopped for 20 s and
 * started again; messages the ingest acknowledged after it came back arrive on the same open
 * stream (the live tail reconnects, schemas/kafka/reconnect.ts), each once.
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { LiveItem } from "../../../ingest/live/items";
import { adminPort, basic, LiveStack, waitFor } from "../../support/harness";
import { server, sleep } from "./scenarios";

const TOKEN = `faults-live-${randomUUID()}`;
const stack = new LiveStack({
  ADMIN_TOKEN: TOKEN,
  KAFKA_REJECTED_TOPIC: `test-rejected-${randomUUID().slice(0, 8)}`,
  PRODUCE_TIMEOUT_MS: "5000",
  RETRY_AFTER_SECONDS: "1",
});
const scenario = suite("fault scenario 12: the live stream across a broker restart");
scenario.before(() => stack.start());
scenario.after(() => stack.stop());

scenario("12. a broker restart: the open stream carries on with what the ingest acknowledged after it", async () => {
  const admin = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
  const response = await fetch(`${admin}/live/events?workspaceId=ws-test&type=track`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.is(response.status, 200);
  const seen: string[] = [];
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const reading = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) return;
      text += decoder.decode(chunk.value, { stream: true });
      const frames = text.split("\n\n");
      text = frames.pop()!;
      for (const frame of frames)
        if (/^event: ?item$/m.test(frame)) seen.push((JSON.parse(/^data: ?(.*)$/m.exec(frame)![1]!) as LiveItem).messageId);
    }
  })();
  const id = randomUUID().slice(0, 8);
  const track = (n: string) =>
    stack.post("/v1/track", { messageId: `${id}-${n}`, userId: "u-live", event: "Around A Restart" }, { authorization: basic("test-key") });
  assert.is((await track("before")).status, 200);
  await waitFor("the message before the restart", async () => (seen.includes(`${id}-before`) ? true : undefined), 10_000);

  await server("kafka", "stop");
  await sleep(20_000);
  await server("kafka", "start");
  const started = Date.now();
  const after: string[] = [];
  await waitFor(
    "the ingest to acknowledge again",
    async () => {
      const n = `after-${after.length}`;
      if ((await track(n)).status !== 200) return undefined;
      after.push(`${id}-${n}`);
      return true;
    },
    60_000,
  );
  for (let n = 1; n < 10; n++) if ((await track(`after-${n}`)).status === 200) after.push(`${id}-after-${n}`);
  await waitFor(
    "every message acknowledged after the restart on the open stream",
    async () => (after.every((m) => seen.includes(m)) ? true : undefined),
    60_000,
  );
  const resumedS = ((Date.now() - started) / 1000).toFixed(1);
  await reader.cancel().catch(() => undefined);
  await reading;
  const mine = seen.filter((m) => m.startsWith(id));
  console.log(
    `  broker stopped 20 s: ${after.length} messages acknowledged after it, all on the open stream ${resumedS} s after the broker started; each once: ${new Set(mine).size === mine.length}`,
  );
  assert.is(new Set(mine).size, mine.length, "no message twice on the stream");
});

scenario.run();
