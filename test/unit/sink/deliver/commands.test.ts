/**
 * What the delivery commands print and ask: `destinations test` prints a receiver's answer
 * JSON-escaped (its control characters cannot act on the terminal); `replay-failures` asks for
 * the destination's failures in its own workspace only; DELIVER_TIMEOUT_MS stays below the
 * session timeout of a destination's consumer.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { testLine } from "../../../../deploy/commands/deliveries";
import { pendingFailuresQuery } from "../../../../schemas/clickhouse/deliveries";
import { deliverConfig, MAX_TIMEOUT_MS, SESSION_TIMEOUT_MS } from "../../../../sink/deliver/config";

/** Whether `text` holds a C0 or C1 control character (or DEL). */
const hasControl = (text: string) => [...text].some((c) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f));

test("`test` prints the answer as a JSON string: escape sequences and newlines come out as text", () => {
  const answer = "ok\u001b]0;pwned\u0007\u001b[2J\r\nfake prompt$ \u009b";
  const line = testLine({ outcome: "delivered" }, 200, answer);
  assert.is(line.split("\n").length, 2, "one line");
  assert.not.ok(hasControl(line.slice(0, -1).replace(/\t/g, " ")), "no control character but the tabs and the final newline");
  assert.ok(line.startsWith('delivered\t"HTTP 200"\t"ok\\u001b]0;pwned\\u0007\\u001b[2J\\r\\nfake prompt$ \\u009b"'), line);
  assert.is(JSON.parse(line.split("\t")[2]!), answer.slice(0, 200), "the answer, read back exactly");
  assert.is(testLine({ outcome: "retry", reason: "ECONNREFUSED" }, 0, ""), 'retry\t"ECONNREFUSED"\t""\n');
});

test("replay-failures reads the destination's failures of its own workspace only", () => {
  const q = pendingFailuresQuery("db", "d-1", "w'2", 500, "m9");
  assert.match(q, /WHERE destination_id = 'd-1' AND workspace_id = 'w\\'2' AND resolved = 0 AND message_id > 'm9'/);
});

test("DELIVER_TIMEOUT_MS is at most 20 s, below the destination consumer's 30 s session", () => {
  assert.ok(MAX_TIMEOUT_MS < SESSION_TIMEOUT_MS);
  assert.is(deliverConfig({ DELIVER_TIMEOUT_MS: String(MAX_TIMEOUT_MS) }).timeoutMs, MAX_TIMEOUT_MS);
  assert.throws(() => deliverConfig({ DELIVER_TIMEOUT_MS: String(MAX_TIMEOUT_MS + 1) }), /timeoutMs/);
  assert.throws(() => deliverConfig({ DELIVER_TIMEOUT_MS: "120000" }), /timeoutMs/);
});

test.run();
