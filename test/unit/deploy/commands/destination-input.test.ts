/**
 * `destinations add`'s input (deploy/commands/destination-input.ts): argv read into a
 * DestinationInput, an input made into the destination the topic holds, each refusal naming its
 * field, and the CLI wording those refusals with its options as it always did.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { cliRefusal, destinationFrom, destinationInputOf, type DestinationInput } from "../../../../deploy/commands/destination-input";
import type { Refusal } from "../../../../schemas/admin/result";
import { openSecret, parseDestination } from "../../../../schemas/destinations";

const KEY = "k".repeat(40);
const settings = { secretKey: KEY, allowLinkLocal: false };
const now = new Date("2026-03-01T12:00:00.000Z");
const base: DestinationInput = { workspaceId: "w1", url: "https://hooks.example.test/in" };

/** The refusal of `input`, which must be refused. */
function refusal(input: DestinationInput, over: Partial<typeof settings> = {}): Refusal {
  const made = destinationFrom(input, { ...settings, ...over }, now);
  assert.ok(!made.ok, `refused: ${JSON.stringify(input)}`);
  return made as Refusal;
}

test("argv -> input: positionals, every option, lists split on commas, numbers as numbers, nothing absent set", () => {
  const args = ["w1", "webhook", "https://h.test/x", "--name", "Mine", "--header", "Authorization: Bearer t:1", "--header", "X-A:b"];
  const more = ["--types", "track, identify", "--events", "A,,B", "--categories", "ads", "--batch-size", "10", "--batch-wait-ms", "0"];
  const read = destinationInputOf([...args, ...more, "--id", "d-mine", "--secret-env", "HOOK"], { HOOK: "s3cret" });
  assert.equal(read, {
    ok: true,
    value: {
      workspaceId: "w1",
      url: "https://h.test/x",
      headers: { Authorization: "Bearer t:1", "X-A": "b" },
      id: "d-mine",
      name: "Mine",
      secret: "s3cret",
      types: ["track", "identify"],
      events: ["A", "B"],
      categories: ["ads"],
      batchSize: 10,
      batchWaitMs: 0,
    },
  });
  assert.equal(destinationInputOf(["w1", "webhook", "https://h.test/x"], {}), {
    ok: true,
    value: { workspaceId: "w1", url: "https://h.test/x", headers: {} },
  });
  const generated = destinationInputOf(["w1", "webhook", "https://h.test/x", "--generate-secret"], {});
  assert.is(generated.ok && generated.value.secret, true);
  const text = destinationInputOf(["w1", "webhook", "https://h.test/x", "--batch-size", "ten"], {});
  assert.ok(text.ok && Number.isNaN(text.value.batchSize), "a number that is not one is left for destinationFrom to refuse");
});

test("argv -> input: usage errors are 400s worded for the command line", () => {
  const error = (args: string[], env: Record<string, string> = {}) => {
    const read = destinationInputOf(args, env);
    assert.ok(!read.ok && read.status === 400, args.join(" "));
    return read.ok ? "" : read.error;
  };
  const add = ["w", "webhook", "https://h.test/"];
  assert.is(error(["w", "slack", "https://h.test/"]), "add <workspaceId> webhook <url> [options]");
  assert.is(error(["w", "webhook"]), "add <workspaceId> webhook <url> [options]");
  assert.match(error([...add, "--secret", "inline"]), "--secret"); // parseArgs: an unknown option
  assert.match(error([...add, "--name"]), "--name"); // parseArgs: a missing value
  assert.is(error([...add, "--header", "NoColon"]), '--header "NoColon": write it "Name: value"');
  assert.is(error([...add, "--secret-env", "V", "--generate-secret"], { V: "x" }), "--secret-env or --generate-secret, not both");
  assert.is(error([...add, "--secret-env", "UNSET"]), "--secret-env: UNSET is not set");
  assert.is(error([...add, "--secret-env", "EMPTY"], { EMPTY: "" }), "--secret-env: EMPTY is not set");
});

test("input -> destination: defaults, the secret sealed, and the destination its topic's readers accept", () => {
  const made = destinationFrom({ ...base, secret: "s3cret", headers: { "X-Key": "v" }, types: ["track"] }, settings, now);
  assert.ok(made.ok);
  if (!made.ok) return;
  const d = made.value.destination;
  assert.match(d.destinationId, /^d-[0-9a-f]{8}$/);
  assert.is(made.value.generatedSecret, undefined, "a given secret is not answered back");
  assert.equal(
    { ...d, destinationId: "x", secret: undefined },
    {
      destinationId: "x",
      workspaceId: "w1",
      kind: "webhook",
      name: "Webhooks",
      url: "https://hooks.example.test/in",
      headers: { "X-Key": "v" },
      secret: undefined,
      types: ["track"],
      batchSize: 1,
      batchWaitMs: 1000,
      paused: false,
      createdAt: "2026-03-01T12:00:00.000Z",
      updatedAt: "2026-03-01T12:00:00.000Z",
    },
  );
  assert.is(openSecret(d.secret!, d.destinationId, KEY), "s3cret");
  assert.equal(parseDestination(JSON.stringify(d)), d, "what every reader of the topic parses");
  const generated = destinationFrom({ ...base, id: "d-one", secret: true }, settings, now);
  assert.ok(generated.ok && generated.value.generatedSecret !== undefined && generated.value.destination.destinationId === "d-one");
  if (generated.ok) assert.is(openSecret(generated.value.destination.secret!, "d-one", KEY), generated.value.generatedSecret);
});

test("input -> destination: each refusal is a 400 naming its field", () => {
  const field = (input: Partial<DestinationInput>, over: Partial<typeof settings> = {}) => {
    const r = refusal({ ...base, ...input }, over);
    assert.is(r.status, 400);
    return r.field;
  };
  assert.is(field({ url: "ftp://h.test/x" }), "url");
  assert.is(field({ url: "http://169.254.169.254/latest/meta-data" }), "url");
  assert.is(field({ url: `https://h.test/${"a".repeat(2048)}` }), "url");
  assert.is(field({ headers: { "X-Foo": "ok\u0007" } }), "headers.X-Foo");
  assert.is(field({ headers: { "X-Signature": "forged" } }), "headers.X-Signature");
  assert.is(field({ headers: { "bad name": "v" } }), "headers.bad name");
  assert.is(field({ types: ["purchase"] }), "types");
  assert.is(field({ id: "Not_An_Id" }), "id");
  assert.is(field({ batchSize: 0 }), "batchSize");
  assert.is(field({ batchSize: 1.5 }), "batchSize");
  assert.is(field({ batchSize: Number.NaN }), "batchSize");
  assert.is(field({ batchWaitMs: 60_001 }), "batchWaitMs");
  assert.is(field({ name: "" }), "name");
  assert.is(field({ workspaceId: "" }), "workspaceId");
  assert.is(field({ workspaceId: "w".repeat(201) }), "workspaceId");
  assert.is(field({ events: [3 as unknown as string] }), "events");
  assert.is(field({ secret: "" }), "secret");
  assert.is(field({ secret: "s" }, { secretKey: undefined }), "secret");
  assert.is(field({ secret: true }, { secretKey: "short" }), "secret");
  assert.ok(destinationFrom({ ...base, url: "http://169.254.169.254/x" }, { ...settings, allowLinkLocal: true }, now).ok);
});

test("the CLI words a refusal with its option where the field's name differs, and as it is otherwise", () => {
  const worded = (input: Partial<DestinationInput>, over: Partial<typeof settings> = {}) =>
    cliRefusal(refusal({ ...base, ...input }, over));
  assert.is(worded({ batchSize: 0 }), "--batch-size: 1 to 1000");
  assert.is(worded({ batchWaitMs: -1 }), "--batch-wait-ms: 0 to 60000");
  assert.match(worded({ types: ["purchase"] }), /^--types: one of \w+, /);
  assert.is(worded({ id: "X" }), "--id: lowercase letters, digits and -, at most 63");
  assert.is(worded({ url: "ftp://h.test/" }), "url: only http and https URLs");
  assert.is(worded({ headers: { "X-Signature": "f" } }), "header X-Signature is set by the delivery");
  assert.is(worded({ secret: "s" }, { secretKey: undefined }), "a secret needs DESTINATIONS_SECRET_KEY (at least 32 characters)");
  assert.is(
    cliRefusal({ ok: false, status: 409, error: "id d-1: that id is a destination of another workspace", field: "id" }),
    "--id d-1: that id is a destination of another workspace",
  );
});

test.run();
