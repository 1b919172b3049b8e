/**
 * What a request is answered once its records are stored (ingest/http/routes.ts refusalOf): 200 when
 * an item was accepted, else the first oversized message's 413 or a 400 naming the refused items.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { refusalOf, type Sorted } from "../../../../ingest/http/routes";
import { messageTooLarge } from "../../../../ingest/http/errors";
import type { Message } from "../../../../schemas/messages";

const message = { type: "track", event: "E", userId: "u", messageId: "m1" } as unknown as Message;
const refused = {
  index: 1,
  item: { type: "track" },
  issues: [{ path: "batch[1].event", expected: "string" }],
};
const sorted = (messages: Message[], rejected: Sorted["rejected"] = []): Sorted => ({ messages, rejected, defaults: {} });

test("refusalOf: an accepted item makes it a 200, whatever was refused beside it", () => {
  const value = sorted([message, message], [refused]);
  assert.is(refusalOf({ ok: true, value }, value, [messageTooLarge(0, 40_000, 32_768)]), undefined);
});

test("refusalOf: a body refused whole is a 400 naming its fields", () => {
  const value = sorted([]);
  const refusal = refusalOf({ ok: false, issues: [{ path: "batch", expected: "array" }] }, value, []);
  assert.is(refusal?.status, 400);
  assert.ok(JSON.stringify(refusal?.body).includes('"batch"'), JSON.stringify(refusal?.body));
});

test("refusalOf: nothing accepted, the first oversized message's 413, else a 400 naming each refused item", () => {
  const tooLarge = messageTooLarge(0, 40_000, 32_768);
  const value = sorted([message], [refused]);
  assert.is(refusalOf({ ok: true, value }, value, [tooLarge]), tooLarge);
  const none = sorted([], [refused]);
  const refusal = refusalOf({ ok: true, value: none }, none, []);
  assert.is(refusal?.status, 400);
  assert.ok(JSON.stringify(refusal?.body).includes("batch[1].event"), JSON.stringify(refusal?.body));
});

test.run();
