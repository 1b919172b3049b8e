/**
 * The ingest app in this process (test/support/ingest-app.ts): what a request yields at the HTTP
 * edge and what it hands to the producer, with a fake producer. The same paths against the real
 * producer, broker and ClickHouse are test/live/api.test.ts and test/live/pipeline.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { RejectedEnvelope } from "../../../../schemas/envelope";
import { basicAuth, inProcessIngest, type InProcessIngest } from "../../../support/ingest-app";
import { SentShapes } from "../../../../ingest/records/catalog";
import { WriteKeys } from "../../../../ingest/admission/auth";
import { parseWriteKeys } from "../../../../ingest/admission/keys";
import type { EventRow } from "../../../../schemas/row";
import { Agent } from "node:http";
import { gzipSync } from "node:zlib";
import { connect } from "node:net";
import { once } from "node:events";
import { postKeepAlive } from "../../../support/keep-alive";
import { TokenBuckets } from "../../../../ingest/admission/ratelimit";

const app = suite("ingest app, in process");
let ingest: InProcessIngest;
app.before.each(async () => {
  ingest = await inProcessIngest();
});
app.after.each(() => ingest.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${ingest.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basicAuth(), ...headers },
    body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
  });

app(
  "a Latin-1 body (charset=iso-8859-1, as a server library declaring it encodes) is decoded as such, gzip or not; UTF-16 is refused 415",
  async () => {
    // "Café €" in Windows-1252: é is 0xE9, € is 0x80 (read as UTF-8 both would be U+FFFD).
    const latin1 = (messageId: string) =>
      Buffer.concat([
        Buffer.from(`{"messageId":"${messageId}","userId":"u1","event":"Caf`),
        Buffer.from([0xe9, 0x20, 0x80]),
        Buffer.from('"}'),
      ]);
    const plain = await post("/v1/track", latin1("m-latin1"), { "content-type": "application/json; charset=ISO-8859-1" });
    assert.is(plain.status, 200, await plain.text());
    const zipped = await post("/v1/track", gzipSync(latin1("m-latin1-gz")), {
      "content-type": "application/json;charset=windows-1252",
      "content-encoding": "gzip",
    });
    assert.is(zipped.status, 200, await zipped.text());
    const events = ingest.produced.map((r) => (JSON.parse(r.value) as EventRow).event);
    assert.equal(events, ["Café €", "Café €"]);

    const utf16 = await post("/v1/track", Buffer.from(JSON.stringify({ messageId: "m-16", userId: "u1", event: "x" }), "utf16le"), {
      "content-type": "application/json; charset=utf-16le",
    });
    assert.is(utf16.status, 415);
    assert.is(((await utf16.json()) as { error: string }).error, "unsupported_charset");
    const ascii = await post("/v1/track", Buffer.from(JSON.stringify({ messageId: "m-ascii", userId: "u1", event: "Café" })), {
      "content-type": "application/json; charset=us-ascii",
    });
    assert.is(ascii.status, 200, "us-ascii is read as UTF-8, its superset");
    assert.is((JSON.parse(ingest.produced.at(-1)!.value) as EventRow).event, "Café");
    assert.is(ingest.produced.length, 3, "nothing of the refused body was produced");
  },
);

app("a valid track is produced once, keyed by its messageId, stamped with the workspace; the answer is Segment's", async () => {
  const response = await post("/v1/track", { messageId: "m-1", userId: "u1", event: "Signed Up", properties: { plan: "pro" } });
  assert.is(response.status, 200);
  assert.equal(await response.json(), { success: true });
  assert.is(ingest.produced.length, 1);
  const [record] = ingest.produced;
  assert.is(record!.key, "m-1");
  assert.not.ok(record!.rejected);
  const row = JSON.parse(record!.value) as Record<string, unknown>;
  assert.is(row.workspace_id, "ws");
  assert.is(row.message_id, "m-1");
  assert.is(row.event, "Signed Up");
});

app("an invalid single message is refused with 400 naming the field; it is kept as a refused item, never as an event", async () => {
  const response = await post("/v1/track", { messageId: "m-2", userId: "u1", event: 42 });
  assert.is(response.status, 400);
  assert.match(JSON.stringify(await response.json()), "event");
  assert.is(ingest.produced.filter((r) => !r.rejected).length, 0, "no event");
  const refused = ingest.produced.filter((r) => r.rejected).map((r) => JSON.parse(r.value) as RejectedEnvelope);
  assert.is(refused.length, 1, "the refusal is kept for rejected_messages");
  assert.ok(
    refused[0]!.reasons.some((reason) => reason.includes("event")),
    refused[0]!.reasons.join("; "),
  );
});

app("a batch with one bad item: the good ones are produced as events, the bad one as a refused item naming its field", async () => {
  const batch = [
    { type: "track", messageId: "b-1", userId: "u1", event: "A" },
    { type: "track", messageId: "b-2", userId: "u1", event: { not: "a string" } },
    { type: "identify", messageId: "b-3", userId: "u1", traits: { name: "Ada" } },
  ];
  const response = await post("/v1/batch", { batch });
  assert.is(response.status, 200);
  assert.is(response.headers.get("x-rejected-messages"), "1");
  const events = ingest.produced.filter((r) => !r.rejected).map((r) => r.key);
  assert.equal(events.sort(), ["b-1", "b-3"]);
  const refused = ingest.produced.filter((r) => r.rejected).map((r) => JSON.parse(r.value) as RejectedEnvelope);
  assert.is(refused.length, 1);
  assert.is(refused[0]!.messageId, "b-2");
  assert.ok(
    refused[0]!.reasons.some((reason) => reason.includes("batch[1].event")),
    refused[0]!.reasons.join("; "),
  );
  assert.not.match(refused[0]!.raw, "wk", "the writeKey never travels with a refused item");
});

app("an unknown writeKey gets 401 and nothing is produced", async () => {
  const response = await post("/v1/track", { messageId: "m-3", userId: "u1", event: "A" }, { authorization: basicAuth("nope") });
  assert.is(response.status, 401);
  assert.is(ingest.produced.length, 0);
});

app("a header-keyed request is looked up once; a body writeKey is still checked against the header's", async () => {
  let lookups = 0;
  class CountingKeys extends WriteKeys {
    override workspaceOf(writeKey: string): string | undefined {
      lookups += 1;
      return super.workspaceOf(writeKey);
    }
  }
  const counted = await inProcessIngest({ writeKeys: new CountingKeys(parseWriteKeys(["wk=ws", "other=ws2"])) });
  const send = (body: unknown) =>
    fetch(`${counted.base}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basicAuth() },
      body: JSON.stringify(body),
    });
  try {
    assert.is((await send({ messageId: "h-1", userId: "u1", event: "A" })).status, 200);
    assert.is(lookups, 1, "the header's key alone: one lookup");
    assert.is((await send({ messageId: "h-2", userId: "u1", event: "A", writeKey: "other" })).status, 401, "a different key in the body");
    assert.is((await send({ messageId: "h-3", userId: "u1", event: "A", writeKey: "wk" })).status, 200, "the same key in the body");
    assert.equal(
      counted.produced.map((r) => [r.key, (JSON.parse(r.value) as { workspace_id: string }).workspace_id]),
      [
        ["h-1", "ws"],
        ["h-3", "ws"],
      ],
    );
  } finally {
    await counted.close();
  }
});

app("when Kafka fails the answer is 503 with Retry-After; any other failure is a 500; never a 2xx", async () => {
  ingest.failWith = Object.assign(new Error("broker down"), { name: "KafkaJSConnectionError", retriable: true });
  const down = await post("/v1/track", { messageId: "m-4", userId: "u1", event: "A" });
  assert.is(down.status, 503);
  assert.is(down.headers.get("retry-after"), "5");
  ingest.failWith = new TypeError("a bug");
  const bug = await post("/v1/track", { messageId: "m-5", userId: "u1", event: "A" });
  assert.is(bug.status, 500);
  assert.is(ingest.produced.length, 0);
});

app("a browser preflight is answered for any origin by default", async () => {
  const response = await fetch(`${ingest.base}/v1/t`, {
    method: "OPTIONS",
    headers: { origin: "https://shop.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
  });
  assert.ok(response.status === 204 || response.status === 200, `status ${response.status}`);
  assert.ok(response.headers.get("access-control-allow-origin"), "CORS allows the origin");
});

app("a message without messageId is refused naming messageId (none is made up, so a retry stays one row)", async () => {
  const response = await post("/v1/track", { userId: "u1", event: "A" });
  assert.is(response.status, 400);
  assert.match(JSON.stringify(await response.json()), "messageId");
  assert.is(ingest.produced.filter((r) => !r.rejected).length, 0);
});

app("a shape's key list goes out until a request listing it is acknowledged, then only its hash", async () => {
  await ingest.close();
  ingest = await inProcessIngest({ contextPolicy: { anonymizeIp: false, shapes: new SentShapes() } });
  let n = 0;
  const send = async (event: string, count: number) => {
    const start = ingest.produced.length;
    const batch = Array.from({ length: count }, () => ({
      type: "track",
      messageId: `s-${n++}`,
      userId: "u",
      event,
      properties: { plan: "pro" },
    }));
    const response = await post("/v1/batch", { batch });
    const rows = ingest.produced.slice(start).map((r) => JSON.parse(r.value) as EventRow);
    return {
      status: response.status,
      lists: rows.map((r) => (r.catalog_keys ?? []).join(",")),
      shapes: new Set(rows.map((r) => r.catalog_shape)),
    };
  };
  ingest.failWith = Object.assign(new Error("broker down"), { name: "KafkaJSConnectionError", retriable: true });
  assert.is((await send("Bought", 2)).status, 503, "not acknowledged: nothing counts as delivered");
  ingest.failWith = undefined;
  const first = await send("Bought", 3);
  assert.equal(first.lists, ["psplan,csip", "", ""], "listed once per batch");
  assert.is(first.shapes.size, 1);
  const second = await send("Bought", 2);
  assert.equal(second.lists, ["", ""], "acknowledged: only the hash");
  assert.equal(second.shapes, first.shapes);
  assert.equal((await send("Viewed", 2)).lists, ["psplan,csip", ""], "another event is another shape");
});

app(
  "a message over 32 KB is refused as an item and stored; the batch's other messages are accepted, its shape listed by the next",
  async () => {
    await ingest.close();
    ingest = await inProcessIngest({ contextPolicy: { anonymizeIp: false, shapes: new SentShapes() } });
    const message = (id: string, blob: string) => ({
      type: "track",
      messageId: id,
      userId: "u",
      event: "Big",
      properties: { plan: "pro", blob },
    });
    const response = await post("/v1/batch", { batch: [message("big", "x".repeat(33 * 1024)), message("small", "x")] });
    assert.is(response.status, 200);
    assert.is(response.headers.get("x-rejected-messages"), "1");
    const [accepted, refused] = [ingest.produced.filter((r) => !r.rejected), ingest.produced.filter((r) => r.rejected)];
    assert.equal(
      accepted.map((r) => r.key),
      ["small"],
    );
    // The same shape (plan and blob, both strings): the refused message's list went nowhere, so the accepted one carries it.
    assert.ok(((JSON.parse(accepted[0]!.value) as EventRow).catalog_keys ?? []).length > 0, "the shape's key list");
    assert.is(refused.length, 1);
    const row = JSON.parse(refused[0]!.value) as { messageId: string; reasons: string[]; raw: string };
    assert.is(row.messageId, "big");
    assert.match(row.reasons[0]!, /^\$input: \d+ bytes, over the limit of 32768 bytes per message$/);
    assert.ok(row.raw.length < 33 * 1024, "its text cut to fit");
    // Alone, it is the whole request: 413, and still stored.
    const alone = await post("/v1/track", message("alone", "y".repeat(33 * 1024)));
    assert.is(alone.status, 413);
    assert.is(((await alone.json()) as { error: string }).error, "message_too_large");
    assert.is(ingest.produced.filter((r) => r.rejected).length, 2);
  },
);

app(
  "a body refused whole is kept: a bad batch frame's items, or a single route's body that is no object, each with the reason",
  async () => {
    const start = ingest.produced.length;
    const frame = await post("/v1/batch", {
      sentAt: "2026-02-30T00:00:00Z",
      batch: [
        { type: "track", messageId: "f1", userId: "u", event: "A" },
        { type: "page", messageId: "f2", anonymousId: "a" },
      ],
    });
    assert.is(frame.status, 400);
    assert.match(JSON.stringify(await frame.json()), "sentAt");
    const array = await post("/v1/track", [{ type: "track", messageId: "f3", userId: "u", event: "A" }]);
    assert.is(array.status, 400);
    const kept = ingest.produced.slice(start).map((r) => JSON.parse(r.value) as { messageId: string; reasons: string[] });
    assert.ok(
      ingest.produced.slice(start).every((r) => r.rejected),
      "nothing accepted",
    );
    assert.equal(
      kept.map((r) => [r.messageId, r.reasons.every((reason) => reason.startsWith(r.messageId === "" ? "$" : "sentAt"))]),
      [
        ["f1", true],
        ["f2", true],
        ["", true],
      ],
    );
  },
);

app("a number JSON.parse reads as Infinity (1e400) refuses its message naming the field; the one beside it is accepted", async () => {
  const start = ingest.produced.length;
  // Raw text: JSON.stringify would write Infinity as null before it is sent.
  const body =
    '{"batch":[{"type":"track","messageId":"inf","userId":"u","event":"Paid","properties":{"amount":1e400,"note":"1e400"}},' +
    '{"type":"track","messageId":"fine","userId":"u","event":"Paid","properties":{"amount":1e300,"n":-2E308}}]}';
  const response = await post("/v1/batch", body);
  // -2E308 is also past the range: both messages hold one.
  assert.is(response.status, 400);
  const answer = (await response.json()) as { issues: { path: string; expected: string }[] };
  assert.equal(
    answer.issues.map((i) => i.path),
    ["properties.amount", "properties.n"],
  );
  const finite = await post(
    "/v1/batch",
    '{"batch":[{"type":"track","messageId":"inf2","userId":"u","event":"Paid","properties":{"amount":1e400}},{"type":"track","messageId":"ok","userId":"u","event":"Paid","properties":{"amount":1e300,"s":"9e999"}}]}',
  );
  assert.is(finite.status, 200);
  assert.is(finite.headers.get("x-rejected-messages"), "1");
  const produced = ingest.produced.slice(start);
  assert.equal(
    produced.filter((r) => !r.rejected).map((r) => [r.key, JSON.parse((JSON.parse(r.value) as EventRow).properties)]),
    [["ok", { amount: 1e300, s: "9e999" }]],
  );
  assert.is(produced.filter((r) => r.rejected).length, 3, "each refused message kept");
});

app(
  "a batch's shared context copied into 2,500 items past MAX_REQUEST_BYTES: 413 naming it, nothing built; a library context passes",
  async () => {
    const items = (tag: string) =>
      Array.from({ length: 2_500 }, (_, i) => ({ type: "track", messageId: `${tag}-${i}`, userId: "u", event: "E" }));
    // 15 KB of gzip that would otherwise make about 80 MB of records (3,000 keys in every item's context).
    const context = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`k${i}`, 1]));
    const bomb = gzipSync(JSON.stringify({ batch: items("x"), context }));
    const refused = await post("/v1/batch", bomb, { "content-encoding": "gzip" });
    assert.is(refused.status, 413);
    const body = (await refused.json()) as { error: string; message: string };
    assert.is(body.error, "batch_shared_too_large");
    assert.match(body.message, "context");
    assert.match(body.message, "2500 items");
    assert.is(ingest.produced.length, 0, "no record built or produced");

    // What server SDKs send at batch level (analytics-go: the library) stays far below the bound.
    const library = { library: { name: "analytics-go", version: "3.3.0" } };
    const accepted = await post("/v1/batch", { batch: items("y"), context: library, integrations: { All: true } });
    assert.is(accepted.status, 200, await accepted.text());
    assert.is(ingest.produced.length, 2_500);
    const row = JSON.parse(ingest.produced[2_499]!.value) as EventRow;
    assert.equal((JSON.parse(row.context) as typeof library).library, library.library);
  },
);

app("a stalled gzip body holds the bytes that arrived, not what they inflate to: other clients keep the budget", async () => {
  await ingest.close();
  ingest = await inProcessIngest({ maxInflightBytes: 1_000_000, bodyTimeoutMs: 1_500 });
  // About 500 bytes of gzip inflating to 480 KB, sent without its 8-byte trailer, then nothing.
  const bomb = gzipSync(`{"batch":[${" ".repeat(480_000)}`);
  const { port } = new URL(ingest.base);
  const stalled = await Promise.all(
    [1, 2].map(async () => {
      const socket = connect(Number(port), "127.0.0.1");
      await once(socket, "connect");
      const head = [
        "POST /v1/batch HTTP/1.1",
        "Host: 127.0.0.1",
        `Authorization: ${basicAuth()}`,
        "Content-Type: application/json",
        "Content-Encoding: gzip",
        `Content-Length: ${bomb.length}`,
        "",
        "",
      ].join("\r\n");
      socket.write(Buffer.concat([Buffer.from(head), bomb.subarray(0, bomb.length - 8)]));
      let answer = "";
      socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
      const closed = once(socket, "close").then(() => answer);
      return { socket, closed };
    }),
  );
  try {
    await new Promise((resolve) => setTimeout(resolve, 300)); // both bodies read as far as they go
    // A batch of about 20 KB charges its bytes and their parsed estimate: it fits beside two
    // stalled bodies of 500 bytes, not beside two of 480 KB inflated.
    const batch = Array.from({ length: 100 }, (_, i) => ({
      type: "track",
      messageId: `ok-${i}`,
      userId: "u",
      event: "E",
      properties: { note: "x".repeat(120) },
    }));
    const answer = await post("/v1/batch", { batch });
    assert.is(answer.status, 200, await answer.text());
    assert.is(ingest.produced.length, 100);
    // The stalled ones are cut off at their deadline (INGEST_BODY_TIMEOUT_MS).
    for (const { closed } of stalled) assert.match(await closed, /^HTTP\/1\.1 408 /);
  } finally {
    for (const { socket } of stalled) socket.destroy();
  }
});

app("while draining every answer (200, 400, 404) says Connection: close and the server ends the keep-alive connection", async () => {
  await ingest.close();
  let draining = false;
  ingest = await inProcessIngest({ isDraining: () => draining });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const send = (path: string, body: string) => postKeepAlive(agent, `${ingest.base}${path}`, body, { authorization: basicAuth() });
  try {
    const before = await send("/v1/track", JSON.stringify({ messageId: "d-0", userId: "u1", event: "A" }));
    assert.equal([before.status, before.connection], [200, "keep-alive"], "kept alive before the stop");
    draining = true;
    const answers = [
      await send("/v1/track", JSON.stringify({ messageId: "d-1", userId: "u1", event: "A" })),
      await send("/v1/track", JSON.stringify({ messageId: "d-2", userId: "u1", event: 42 })),
      await send("/v1/nowhere", "{}"),
    ];
    assert.equal(
      answers.map((a) => [a.status, a.connection]),
      [
        [200, "close"],
        [400, "close"],
        [404, "close"],
      ],
    );
    await Promise.all(answers.map((a) => a.socketClosed()));
  } finally {
    agent.destroy();
  }
});

app(
  "a header-keyed request past its workspace's rate is answered 429 before its body is parsed; a body-keyed one is parsed first",
  async () => {
    await ingest.close();
    ingest = await inProcessIngest({ rateLimit: new TokenBuckets(0.1, 10) });
    const batch = { batch: Array.from({ length: 10 }, (_, i) => ({ type: "track", event: "E", userId: "u", messageId: `m${i}` })) };
    assert.is((await post("/v1/batch", batch)).status, 200, "the bucket's 10 tokens");
    const produced = ingest.produced.length;
    // Not JSON: parsed, it would be 400; the empty bucket answers first.
    const early = await post("/v1/batch", "{not json");
    assert.is(early.status, 429);
    assert.ok(Number(early.headers.get("retry-after")) >= 1);
    assert.is(ingest.produced.length, produced, "nothing produced");
    // The workspace of a body-keyed request is known only once its body is read.
    const unkeyed = (body: string) =>
      fetch(`${ingest.base}/v1/batch`, { method: "POST", headers: { "content-type": "application/json" }, body });
    assert.is((await unkeyed('{"writeKey":"wk", not json')).status, 400, "read and parsed first: not JSON");
    // A body that names no key anywhere is refused 401 unparsed (ingest/admission/auth.ts scanWriteKeys).
    assert.is((await unkeyed("{not json")).status, 401, "no key: refused before the parse");
    const later = await unkeyed(JSON.stringify({ ...batch, writeKey: "wk" }));
    assert.is(later.status, 429, "and refused once parsed, by the same bucket");
  },
);

app.run();
