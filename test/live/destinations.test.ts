/**
 * `cli destinations` against the real local broker: what `add` writes to the destinations topic
 * (a sealed secret that opens to the one printed, no secret or header value in `list`), what a
 * running follower sees of add, pause and remove within seconds, and the refusals (exit 2: a URL
 * that is not http(s) or names a metadata address, a reserved header, a secret without the key, an
 * `--id` of another workspace's destination; exit 1: an unknown destination).
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { randomUUID } from "node:crypto";
import pino from "pino";
import { Kafka, logLevel } from "kafkajs";
import { kafkaConfig } from "../../schemas/config";
import { ensureTopics, waitForGroupCoordinator } from "../../deploy/setup/topics";
import { destinationsCommand, type DestinationsSettings } from "../../deploy/commands/destinations";
import { readDestinations } from "../../deploy/commands/destination-view";
import { openSecret, parseDestination, type WebhookDestination } from "../../schemas/destinations";
import { followCompacted, type Following } from "../../schemas/kafka/follow";
import { pollUntil } from "../../schemas/runtime/poll";

const live = suite("destinations CLI (live broker)");
const log = pino({ level: "silent" });
const id = randomUUID().slice(0, 8);
const config = {
  ...kafkaConfig(process.env),
  topic: `d-${id}`,
  rejectedTopic: `d-${id}-rejected`,
  dlqTopic: `d-${id}-dlq`,
  suppressionsTopic: `d-${id}-suppressions`,
  destinationsTopic: `d-${id}-destinations`,
};
const kafka = new Kafka({ clientId: "test-destinations", brokers: config.brokers, logLevel: logLevel.NOTHING });
const SECRET_KEY = "k".repeat(40);
const settings = (over: Partial<DestinationsSettings> = {}): DestinationsSettings => ({
  kafka: config,
  secretKey: SECRET_KEY,
  allowLinkLocal: false,
  env: { HOOK_SECRET: "from-the-environment" },
  ...over,
});

/** Runs the command; its exit code and what it wrote. */
async function run(args: string[], over: Partial<DestinationsSettings> = {}) {
  let out = "";
  let err = "";
  const code = await destinationsCommand(args, settings(over), kafka, log, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

let follower: Following | undefined;
const seen = new Map<string, WebhookDestination>();

/** The topics, and a follower of the destinations topic as a delivery process runs one. */
async function setUp(): Promise<void> {
  await ensureTopics(kafka, config, { partitions: 1 });
  await waitForGroupCoordinator(kafka, `test-${id}-destinations`); // as setup does before any process starts
  follower = await followCompacted(
    kafka,
    { topic: config.destinationsTopic, groupPrefix: `test-${id}`, label: "destinations", log },
    (key, value) => {
      const d = parseDestination(value);
      if (d === undefined) seen.delete(key);
      else seen.set(key, d);
    },
  );
}

live.before(async () => {
  try {
    await setUp();
  } catch (error) {
    console.error("destinations.test: setup failed:", error); // uvu prints nothing of a failed before hook
    throw error;
  }
});

live.after(async () => {
  await follower?.stop();
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({
    topics: [config.topic, config.rejectedTopic, config.dlqTopic, config.suppressionsTopic, config.destinationsTopic],
  });
  await admin.disconnect();
});

const within = (ms: number, check: () => boolean) =>
  pollUntil(async () => (check() ? true : undefined), { intervalMs: 100, timeoutMs: ms });

live(
  "add with a generated secret: the id and the secret printed once; the topic holds it sealed; list shows neither secret nor header values",
  async () => {
    const added = await run([
      "add",
      "w1",
      "webhook",
      "http://127.0.0.1:9/hook",
      "--header",
      "Authorization: Bearer top-secret-token",
      "--generate-secret",
      "--types",
      "track,identify",
      "--batch-size",
      "10",
    ]);
    assert.is(added.code, 0, added.err);
    const [destinationId, secret] = added.out.trim().split("\n");
    assert.match(destinationId!, /^d-[0-9a-f]{8}$/);
    assert.ok(secret !== undefined && secret.length >= 24);
    const stored = (await readDestinations(kafka, config.destinationsTopic, config.clientId, log)).get(destinationId!);
    assert.ok(stored, "on the topic");
    assert.is(openSecret(stored!.secret!, destinationId!, SECRET_KEY), secret, "sealed, and opens to the printed secret");
    assert.not.match(JSON.stringify(stored), secret!, "the topic never holds the secret in clear");
    assert.equal(stored!.types, ["track", "identify"]);
    assert.is(stored!.batchSize, 10);
    for (const args of [["list"], ["list", "--json"], ["list", "w1"]]) {
      const listed = await run(args);
      assert.is(listed.code, 0);
      assert.match(listed.out, destinationId!);
      assert.match(listed.out, "Authorization");
      assert.not.match(listed.out, "top-secret-token", `${args.join(" ")}: no header value`);
      assert.not.match(listed.out, secret!, `${args.join(" ")}: no secret`);
      assert.not.match(listed.out, stored!.secret!.data, `${args.join(" ")}: not even sealed`);
    }
    assert.is((await run(["list", "w-other"])).out, "", "another workspace's list is empty");
    assert.ok(await within(10_000, () => seen.has(destinationId!)), "a running follower saw the new destination");
  },
);

live("a running follower sees pause, resume and remove within seconds", async () => {
  const added = await run(["add", "w2", "webhook", "https://example.test/hook", "--secret-env", "HOOK_SECRET", "--id", `hook-${id}`]);
  assert.is(added.code, 0, added.err);
  const destinationId = `hook-${id}`;
  assert.is(added.out, `${destinationId}\n`, "a secret from the environment is not printed");
  assert.ok(await within(10_000, () => seen.get(destinationId)?.paused === false));
  assert.is(openSecret(seen.get(destinationId)!.secret!, destinationId, SECRET_KEY), "from-the-environment");
  assert.is((await run(["pause", destinationId])).code, 0);
  assert.ok(await within(10_000, () => seen.get(destinationId)?.paused === true), "paused");
  assert.is((await run(["resume", destinationId])).code, 0);
  assert.ok(await within(10_000, () => seen.get(destinationId)?.paused === false), "resumed");
  assert.is((await run(["remove", destinationId])).code, 0);
  assert.ok(await within(10_000, () => !seen.has(destinationId)), "removed");
  assert.is((await run(["pause", destinationId])).code, 1, "a removed destination is unknown");
});

live("refusals: not http(s), metadata addresses, reserved headers, a secret without its key, unknown options", async () => {
  const refused = async (args: string[], over: Partial<DestinationsSettings> = {}) => {
    const r = await run(args, over);
    assert.is(r.code, 2, `${args.join(" ")}: ${r.err}`);
    assert.is(r.out, "");
    return r.err;
  };
  assert.match(await refused(["add", "w", "webhook", "ftp://example.test/x"]), "only http and https");
  assert.match(await refused(["add", "w", "webhook", "http://169.254.169.254/latest/meta-data"]), "refused");
  assert.match(await refused(["add", "w", "webhook", "http://[fd00:ec2::254]/"]), "refused");
  assert.match(await refused(["add", "w", "webhook", "http://u:p@example.test/"]), "credentials");
  assert.match(await refused(["add", "w", "webhook", "http://example.test/", "--header", "X-Signature: forged"]), "set by the delivery");
  assert.match(
    await refused(["add", "w", "webhook", "http://example.test/", "--generate-secret"], { secretKey: undefined }),
    "DESTINATIONS_SECRET_KEY",
  );
  assert.match(await refused(["add", "w", "webhook", "http://example.test/", "--secret-env", "UNSET_VAR"]), "not set");
  assert.match(await refused(["add", "w", "webhook", "http://example.test/", "--secret", "inline"]), "secret");
  assert.match(await refused(["add", "w", "webhook", "http://example.test/", "--types", "purchase"]), "--types");
  assert.match(await refused(["add", "w", "webhook", "http://example.test/", "--batch-size", "0"]), "--batch-size");
  const allowed = await run(["add", "w", "webhook", "http://169.254.169.254/x", "--id", `meta-${id}`], { allowLinkLocal: true });
  assert.is(allowed.code, 0, "DESTINATIONS_ALLOW_LINK_LOCAL lets an operator name one");
});

live(
  "add --id of another workspace's destination is refused (exit 2) and leaves it as it was; the same workspace's replaces it",
  async () => {
    const destinationId = `shared-${id}`;
    assert.is((await run(["add", "w1", "webhook", "http://127.0.0.1:9/w1", "--id", destinationId])).code, 0);
    const taken = await run(["add", "w2", "webhook", "http://127.0.0.1:9/w2", "--id", destinationId]);
    assert.is(taken.code, 2, taken.err);
    assert.is(taken.out, "");
    assert.match(taken.err, `--id ${destinationId}: that id is a destination of another workspace`);
    const stored = (await readDestinations(kafka, config.destinationsTopic, config.clientId, log)).get(destinationId);
    assert.is(stored?.workspaceId, "w1", "still w1's");
    assert.is(stored?.url, "http://127.0.0.1:9/w1");
    const replaced = await run(["add", "w1", "webhook", "http://127.0.0.1:9/w1-new", "--id", destinationId]);
    assert.is(replaced.code, 0, replaced.err);
    assert.ok(
      await within(10_000, () => seen.get(destinationId)?.url === "http://127.0.0.1:9/w1-new"),
      "the same workspace's id is replaced",
    );
  },
);

live.run();
