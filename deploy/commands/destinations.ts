/**
 * `cli destinations ...`: an operator's webhook destinations, kept on the destinations topic
 * (compacted, key = destinationId; schemas/destinations.ts) that every delivery process follows.
 *   add <workspaceId> webhook <url> [--name N] [--header "K: V"]... [--secret-env VAR | --generate-secret]
 *       [--types t,..] [--events e,..] [--categories c,..] [--batch-size N] [--batch-wait-ms N] [--id ID]
 *   list [workspaceId] [--json] | pause <id> | resume <id> | remove <id>
 * A secret is read from an environment variable (never from the command line, which other users
 * of the machine can read) or generated and printed once; it is sealed before it is written, and
 * `list` shows header names, never their values, and whether there is a secret, never the secret.
 * `add --id` of an id another workspace's destination has is refused (exit 2): a destination's
 * group and kept failures belong to its id, so reusing it would carry one workspace's position and
 * failures over to another's receiver; the same workspace's id replaces that destination.
 * Resolves with the exit code: 0 done, 1 an unknown destination, 2 a usage or setting error.
 * Throws what Kafka throws (an infrastructure failure).
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import type { KafkaConfig } from "../../schemas/config";
import { MESSAGE_TYPES, type MessageType } from "../../schemas/messages";
import {
  headerProblem,
  listed,
  parseDestination,
  sealSecret,
  SECRET_KEY_MIN_CHARS,
  type WebhookDestination,
} from "../../schemas/destinations";
import { followCompacted } from "../../schemas/kafka/follow";
import { createProducer, sendWhole } from "../../schemas/kafka/producer";
import { urlProblem } from "../../sink/deliver/address";

/** What the command reads of the environment. */
export interface DestinationsSettings {
  kafka: KafkaConfig;
  /** DESTINATIONS_SECRET_KEY: seals secrets (at least SECRET_KEY_MIN_CHARS characters); absent: no secrets. */
  secretKey?: string;
  /** DESTINATIONS_ALLOW_LINK_LOCAL=true: link-local and metadata addresses allowed. */
  allowLinkLocal: boolean;
  env: Record<string, string | undefined>;
}

/** Where the command writes: its answer (stdout) and its notes (stderr). */
export interface Output {
  out: (text: string) => void;
  err: (text: string) => void;
}

const PUBLISH_DEADLINE_MS = 30_000;
const ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Every destination on the topic now, by destinationId. */
export async function readDestinations(
  kafka: Kafka,
  topic: string,
  clientId: string,
  log: Logger,
): Promise<Map<string, WebhookDestination>> {
  const destinations = new Map<string, WebhookDestination>();
  const following = await followCompacted(
    kafka,
    { topic, groupPrefix: `${clientId}-destinations-cli`, label: "destinations", log },
    (key, value) => {
      const d = parseDestination(value);
      if (d === undefined || d.destinationId !== key) destinations.delete(key);
      else destinations.set(key, d);
    },
  );
  await following.stop();
  return destinations;
}

/** Writes `value` (a destination, or null to remove it) under `destinationId`, acknowledged by every in-sync replica. */
async function publish(kafka: Kafka, topic: string, destinationId: string, value: WebhookDestination | null): Promise<void> {
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    const message = { key: destinationId, value: value === null ? null : JSON.stringify(value) };
    await sendWhole(producer, { acks: -1, topicMessages: [{ topic, messages: [message] }] }, PUBLISH_DEADLINE_MS);
  } finally {
    await producer.disconnect();
  }
}

const csv = (text: string | undefined): string[] | undefined =>
  text === undefined
    ? undefined
    : text
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");

/** The destination `add` describes, or the usage error. */
export function destinationOf(
  args: string[],
  settings: DestinationsSettings,
  now: Date,
): { ok: true; destination: WebhookDestination; generatedSecret?: string } | { ok: false; error: string } {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      name: { type: "string" },
      header: { type: "string", multiple: true },
      "secret-env": { type: "string" },
      "generate-secret": { type: "boolean" },
      types: { type: "string" },
      events: { type: "string" },
      categories: { type: "string" },
      "batch-size": { type: "string" },
      "batch-wait-ms": { type: "string" },
      id: { type: "string" },
    },
  });
  const [workspaceId, kind, url] = positionals;
  if (positionals.length !== 3 || !workspaceId || kind !== "webhook" || !url)
    return { ok: false, error: "add <workspaceId> webhook <url> [options]" };
  const problem = urlProblem(url, settings.allowLinkLocal);
  if (problem !== undefined) return { ok: false, error: `url: ${problem}` };
  const headers: Record<string, string> = {};
  for (const line of values.header ?? []) {
    const colon = line.indexOf(":");
    if (colon <= 0) return { ok: false, error: `--header ${JSON.stringify(line)}: write it "Name: value"` };
    const [name, value] = [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
    const bad = headerProblem(name, value);
    if (bad !== undefined) return { ok: false, error: bad };
    headers[name] = value;
  }
  const types = csv(values.types);
  if (types?.some((t) => !(MESSAGE_TYPES as readonly string[]).includes(t)))
    return { ok: false, error: `--types: one of ${MESSAGE_TYPES.join(", ")}` };
  const destinationId = values.id ?? `d-${randomBytes(4).toString("hex")}`;
  if (!ID_PATTERN.test(destinationId)) return { ok: false, error: "--id: lowercase letters, digits and -, at most 63" };
  const batchSize = Number(values["batch-size"] ?? "1");
  const batchWaitMs = Number(values["batch-wait-ms"] ?? "1000");
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000) return { ok: false, error: "--batch-size: 1 to 1000" };
  if (!Number.isInteger(batchWaitMs) || batchWaitMs < 0 || batchWaitMs > 60_000) return { ok: false, error: "--batch-wait-ms: 0 to 60000" };
  let secret: string | undefined;
  let generatedSecret: string | undefined;
  if (values["secret-env"] !== undefined && values["generate-secret"] === true)
    return { ok: false, error: "--secret-env or --generate-secret, not both" };
  if (values["secret-env"] !== undefined) {
    secret = settings.env[values["secret-env"]];
    if (!secret) return { ok: false, error: `--secret-env: ${values["secret-env"]} is not set` };
  } else if (values["generate-secret"] === true) secret = generatedSecret = randomBytes(24).toString("base64url");
  if (secret !== undefined && (settings.secretKey === undefined || settings.secretKey.length < SECRET_KEY_MIN_CHARS))
    return { ok: false, error: `a secret needs DESTINATIONS_SECRET_KEY (at least ${SECRET_KEY_MIN_CHARS} characters)` };
  const at = now.toISOString();
  const destination: WebhookDestination = {
    destinationId,
    workspaceId,
    kind: "webhook",
    name: values.name ?? "Webhooks",
    url,
    headers,
    ...(secret === undefined ? {} : { secret: sealSecret(secret, destinationId, settings.secretKey!) }),
    ...(types === undefined ? {} : { types: types as MessageType[] }),
    ...(values.events === undefined ? {} : { events: csv(values.events)! }),
    ...(values.categories === undefined ? {} : { categories: csv(values.categories)! }),
    batchSize,
    batchWaitMs,
    paused: false,
    createdAt: at,
    updatedAt: at,
  };
  return { ok: true, destination, ...(generatedSecret === undefined ? {} : { generatedSecret }) };
}

/** One line of `list`: no header value, no secret. */
export function listLine(d: WebhookDestination): string {
  const shown = listed(d);
  const filters = [
    d.types ? `types=${d.types.join(",")}` : "",
    d.events ? `events=${d.events.length}` : "",
    d.categories ? `categories=${d.categories.join(",")}` : "",
  ].filter(Boolean);
  return [
    shown.destinationId,
    shown.workspaceId,
    shown.paused ? "paused" : "active",
    shown.url,
    `batch=${shown.batchSize}/${shown.batchWaitMs}ms`,
    `headers=${Object.keys(shown.headers).join(",") || "-"}`,
    `secret=${shown.secret ? "yes" : "no"}`,
    ...filters,
  ].join("\t");
}

/**
 * Why `add` must not write `d`, when its id was chosen (`--id`) and belongs to another workspace's
 * destination now; undefined when it is free or the same workspace's. A generated id is not
 * looked up (32 random bits).
 */
async function idTaken(
  d: WebhookDestination,
  args: string[],
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
): Promise<string | undefined> {
  if (!args.some((a) => a === "--id" || a.startsWith("--id="))) return undefined;
  const current = (await readDestinations(kafka, settings.kafka.destinationsTopic, settings.kafka.clientId, log)).get(d.destinationId);
  if (current === undefined || current.workspaceId === d.workspaceId) return undefined;
  return `--id ${d.destinationId}: that id is a destination of another workspace; choose another id (or remove that destination first)`;
}

/** Runs `destinations <action> ...` (see the module comment). */
export async function destinationsCommand(
  args: string[],
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  io: Output,
): Promise<number> {
  const [action, ...rest] = args;
  const topic = settings.kafka.destinationsTopic;
  const usage = (error: string) => {
    io.err(`destinations: ${error}\n`);
    return 2;
  };
  if (action === "add") {
    let made: ReturnType<typeof destinationOf>;
    try {
      made = destinationOf(rest, settings, new Date());
    } catch (error) {
      return usage((error as Error).message); // parseArgs: an unknown option or a missing value
    }
    if (!made.ok) return usage(made.error);
    const refusal = await idTaken(made.destination, rest, settings, kafka, log);
    if (refusal !== undefined) return usage(refusal);
    await publish(kafka, topic, made.destination.destinationId, made.destination);
    io.out(`${made.destination.destinationId}\n`);
    if (made.generatedSecret !== undefined) {
      io.out(`${made.generatedSecret}\n`);
      io.err("destinations: the shared secret above is shown only now\n");
    }
    return 0;
  }
  if (action === "list") {
    const json = rest.includes("--json");
    const workspaceId = rest.find((a) => a !== "--json");
    const all = [...(await readDestinations(kafka, topic, settings.kafka.clientId, log)).values()].filter(
      (d) => workspaceId === undefined || d.workspaceId === workspaceId,
    );
    for (const d of all) io.out(json ? `${JSON.stringify({ ...listed(d), headers: Object.keys(d.headers) })}\n` : `${listLine(d)}\n`);
    return 0;
  }
  if ((action === "pause" || action === "resume" || action === "remove") && rest.length === 1) {
    const destinationId = rest[0]!;
    const current = (await readDestinations(kafka, topic, settings.kafka.clientId, log)).get(destinationId);
    if (current === undefined) {
      io.err(`destinations: no destination ${destinationId}\n`);
      return 1;
    }
    const next = action === "remove" ? null : { ...current, paused: action === "pause", updatedAt: new Date().toISOString() };
    await publish(kafka, topic, destinationId, next);
    io.err(`destinations: ${destinationId} ${action === "remove" ? "removed" : action === "pause" ? "paused" : "resumed"}\n`);
    return 0;
  }
  return usage("add | list | pause <id> | resume <id> | remove <id>");
}
