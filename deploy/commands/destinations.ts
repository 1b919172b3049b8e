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
 * Each operation is also a function answering a value (addDestination, listDestinations,
 * setDestinationPaused, removeDestination; schemas/admin/result.ts), which the admin API calls
 * too, scoped to a workspace: another workspace's destination is answered as one that does not
 * exist. The command resolves with the exit code: 0 done, 1 an unknown destination, 2 a usage or
 * setting error. Throws what Kafka throws (an infrastructure failure).
 */
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { done, refuse, type OpResult } from "../../schemas/admin/result";
import type { KafkaConfig } from "../../schemas/config";
import { listed, type WebhookDestination } from "../../schemas/destinations";
import { publishRecords } from "../../schemas/kafka/producer";
import { cliRefusal, destinationFrom, destinationInputOf, type DestinationInput } from "./destination-input";

import { readDestinations, type DestinationView } from "./destination-view";

export type { DestinationInput } from "./destination-input";

/** What the command reads of the environment. */
export interface DestinationsSettings {
  kafka: KafkaConfig;
  /** DESTINATIONS_SECRET_KEY: seals secrets (at least SECRET_KEY_MIN_CHARS characters); absent: no secrets. */
  secretKey?: string;
  /** DESTINATIONS_ALLOW_LINK_LOCAL=true: link-local and metadata addresses allowed. */
  allowLinkLocal: boolean;
  env: Record<string, string | undefined>;
  /** Where the topic's state is read (destination-view.ts); absent: read whole by each call. */
  view?: DestinationView;
}

/** Where the command writes: its answer (stdout) and its notes (stderr). */
export interface Output {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** The destinations on the topic now: the settings' view, or the topic read whole (the CLI). Throws what Kafka throws. */
function destinationsNow(settings: DestinationsSettings, kafka: Kafka, log: Logger): Promise<ReadonlyMap<string, WebhookDestination>> {
  return settings.view?.current() ?? readDestinations(kafka, settings.kafka.destinationsTopic, settings.kafka.clientId, log);
}

/** Writes `value` (a destination, or null to remove it) under `destinationId`, acknowledged by every in-sync replica. */
function publish(kafka: Kafka, topic: string, destinationId: string, value: WebhookDestination | null): Promise<void> {
  return publishRecords(kafka, topic, [{ key: destinationId, value: value === null ? null : JSON.stringify(value) }]);
}

/** A destination as `list --json` prints it and the admin API answers it: its headers' names only, whether it has a secret. */
export type ListedDestination = Omit<WebhookDestination, "secret" | "headers"> & { headers: string[]; secret: boolean };

/** `d` as listed: no header value, no secret. */
export function listedDestination(d: WebhookDestination): ListedDestination {
  return { ...listed(d), headers: Object.keys(d.headers) };
}

/** One line of `list`: no header value, no secret. */
export function listLine(d: ListedDestination): string {
  const filters = [
    d.types ? `types=${d.types.join(",")}` : "",
    d.events ? `events=${d.events.length}` : "",
    d.categories ? `categories=${d.categories.join(",")}` : "",
  ].filter(Boolean);
  return [
    d.destinationId,
    d.workspaceId,
    d.paused ? "paused" : "active",
    d.url,
    `batch=${d.batchSize}/${d.batchWaitMs}ms`,
    `headers=${d.headers.join(",") || "-"}`,
    `secret=${d.secret ? "yes" : "no"}`,
    ...filters,
  ].join("\t");
}

/**
 * The destination `destinationId` as the topic holds it now, or a 404 when there is none, or it
 * is another workspace's than `workspaceId` (when given: answered exactly as if there were none).
 * Throws what Kafka throws.
 */
export async function findDestination(
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  destinationId: string,
  workspaceId?: string,
): Promise<OpResult<WebhookDestination>> {
  const d = (await destinationsNow(settings, kafka, log)).get(destinationId);
  if (d === undefined || (workspaceId !== undefined && d.workspaceId !== workspaceId))
    return refuse(404, `no destination ${destinationId}`, "destinationId");
  return done(d);
}

/**
 * Adds (or, with the id of one of the same workspace's, replaces) the destination `input`
 * describes, acknowledged by every in-sync replica: the destination as listed, and the secret
 * when one was generated (`secret: true`; in clear, shown only now). 400 a field of the input
 * (destination-input.ts); 409 `id` is another workspace's destination's (a chosen id is looked up,
 * a generated one not: 32 random bits). Throws what Kafka throws.
 */
export async function addDestination(
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  input: DestinationInput,
  now: Date,
): Promise<OpResult<{ destination: ListedDestination; secret?: string }>> {
  const made = destinationFrom(input, settings, now);
  if (!made.ok) return made;
  const d = made.value.destination;
  if (input.id !== undefined) {
    const current = (await destinationsNow(settings, kafka, log)).get(d.destinationId);
    if (current !== undefined && current.workspaceId !== d.workspaceId)
      return refuse(
        409,
        `id ${d.destinationId}: that id is a destination of another workspace; choose another id (or remove that destination first)`,
        "id",
      );
  }
  await publish(kafka, settings.kafka.destinationsTopic, d.destinationId, d);
  const secret = made.value.generatedSecret;
  return done({ destination: listedDestination(d), ...(secret === undefined ? {} : { secret }) });
}

/** The destinations on the topic now, as listed (no header value, no secret): all, or `workspaceId`'s. Throws what Kafka throws. */
export async function listDestinations(
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  workspaceId?: string,
): Promise<ListedDestination[]> {
  return [...(await destinationsNow(settings, kafka, log)).values()]
    .filter((d) => workspaceId === undefined || d.workspaceId === workspaceId)
    .map(listedDestination);
}

/**
 * Pauses (`paused: true`) or resumes a destination, updated `now`, acknowledged by every in-sync
 * replica: the destination as listed. 404 as findDestination. Throws what Kafka throws.
 */
export async function setDestinationPaused(
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  destinationId: string,
  paused: boolean,
  workspaceId?: string,
  now: Date = new Date(),
): Promise<OpResult<ListedDestination>> {
  const found = await findDestination(settings, kafka, log, destinationId, workspaceId);
  if (!found.ok) return found;
  const next = { ...found.value, paused, updatedAt: now.toISOString() };
  await publish(kafka, settings.kafka.destinationsTopic, destinationId, next);
  return done(listedDestination(next));
}

/** Removes a destination (a tombstone), acknowledged by every in-sync replica. 404 as findDestination. Throws what Kafka throws. */
export async function removeDestination(
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  destinationId: string,
  workspaceId?: string,
): Promise<OpResult<{ removed: string }>> {
  const found = await findDestination(settings, kafka, log, destinationId, workspaceId);
  if (!found.ok) return found;
  await publish(kafka, settings.kafka.destinationsTopic, destinationId, null);
  return done({ removed: destinationId });
}

/** Runs `destinations <action> ...` (see the module comment): the functions above, their answers printed. */
export async function destinationsCommand(
  args: string[],
  settings: DestinationsSettings,
  kafka: Kafka,
  log: Logger,
  io: Output,
): Promise<number> {
  const [action, ...rest] = args;
  const usage = (error: string) => {
    io.err(`destinations: ${error}\n`);
    return 2;
  };
  if (action === "add") {
    const input = destinationInputOf(rest, settings.env);
    const added = input.ok ? await addDestination(settings, kafka, log, input.value, new Date()) : input;
    if (!added.ok) return usage(cliRefusal(added));
    io.out(`${added.value.destination.destinationId}\n`);
    if (added.value.secret !== undefined) {
      io.out(`${added.value.secret}\n`);
      io.err("destinations: the shared secret above is shown only now\n");
    }
    return 0;
  }
  if (action === "list") {
    const json = rest.includes("--json");
    const workspaceId = rest.find((a) => a !== "--json");
    for (const d of await listDestinations(settings, kafka, log, workspaceId)) io.out(json ? `${JSON.stringify(d)}\n` : `${listLine(d)}\n`);
    return 0;
  }
  if ((action === "pause" || action === "resume" || action === "remove") && rest.length === 1) {
    const destinationId = rest[0]!;
    const answer =
      action === "remove"
        ? await removeDestination(settings, kafka, log, destinationId)
        : await setDestinationPaused(settings, kafka, log, destinationId, action === "pause");
    if (!answer.ok) return (io.err(`destinations: ${answer.error}\n`), 1);
    io.err(`destinations: ${destinationId} ${action === "remove" ? "removed" : action === "pause" ? "paused" : "resumed"}\n`);
    return 0;
  }
  return usage("add | list | pause <id> | resume <id> | remove <id>");
}
