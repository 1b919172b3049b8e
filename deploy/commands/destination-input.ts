/**
 * What `destinations add` (deploy/commands/destinations.ts) and the admin API ask for, as one
 * DestinationInput: the CLI's argv read into one (`destinationInputOf`), and one checked and made
 * into the destination the topic will hold (`destinationFrom`), each refusal naming the input
 * field at fault (`url`, `headers.X-Foo`, `batchSize`). `cliRefusal` words a refusal with the
 * CLI's option names (`--batch-size`), as the CLI has always printed it. Pure but for the random
 * id and secret.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import type { OpResult, Refusal } from "../../schemas/admin/result";
import { done, refuse } from "../../schemas/admin/result";
import { MESSAGE_TYPES, type MessageType } from "../../schemas/messages";
import { headerProblem, sealSecret, SECRET_KEY_MIN_CHARS, type WebhookDestination } from "../../schemas/destinations";
import { urlProblem } from "../../sink/deliver/address";

/** A destination as an operator describes it: what `destinations add` takes. Absent: the default. */
export interface DestinationInput {
  workspaceId: string;
  url: string;
  /** Lowercase letters, digits and -, at most 63; absent: `d-` and 8 random hex digits. */
  id?: string;
  /** Default "Webhooks". */
  name?: string;
  headers?: Record<string, string>;
  /** The shared secret in clear; true: generate one (returned once). */
  secret?: string | true;
  types?: string[];
  events?: string[];
  categories?: string[];
  /** 1 to 1000, default 1. */
  batchSize?: number;
  /** 0 to 60000, default 1000. */
  batchWaitMs?: number;
}

/** What making a destination reads of the settings: the secret key, and whether link-local addresses are allowed. */
export interface InputSettings {
  secretKey?: string;
  allowLinkLocal: boolean;
}

/** A destination made from its input, with the secret generated for it (in clear, to show once). */
export interface MadeDestination {
  destination: WebhookDestination;
  generatedSecret?: string;
}

const ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** The options of `add`. */
const ADD_OPTIONS = {
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
} as const;

/** The CLI's option for an input field, where its name differs. */
const OPTION_OF: Record<string, string> = {
  id: "--id",
  name: "--name",
  types: "--types",
  events: "--events",
  categories: "--categories",
  batchSize: "--batch-size",
  batchWaitMs: "--batch-wait-ms",
};

const csv = (text: string | undefined): string[] | undefined =>
  text === undefined
    ? undefined
    : text
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");

/** `--header "Name: value"` lines as headers (the value as given; checked by destinationFrom), or the usage error. */
function headersOf(lines: string[]): OpResult<Record<string, string>> {
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) return refuse(400, `--header ${JSON.stringify(line)}: write it "Name: value"`, "headers");
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return done(headers);
}

/**
 * `add`'s arguments (after `add`) as an input: `<workspaceId> webhook <url>` and the options of
 * the module comment of destinations.ts; a secret read from the environment variable
 * `--secret-env` names. A usage error is a 400 worded for the command line. Never throws.
 */
export function destinationInputOf(args: string[], env: Record<string, string | undefined>): OpResult<DestinationInput> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true, options: ADD_OPTIONS });
  } catch (error) {
    return refuse(400, (error as Error).message); // an unknown option or a missing value
  }
  const { values, positionals } = parsed;
  const [workspaceId, kind, url] = positionals;
  if (positionals.length !== 3 || !workspaceId || kind !== "webhook" || !url)
    return refuse(400, "add <workspaceId> webhook <url> [options]");
  const headers = headersOf(values.header ?? []);
  if (!headers.ok) return headers;
  const secretEnv = values["secret-env"];
  if (secretEnv !== undefined && values["generate-secret"] === true) return refuse(400, "--secret-env or --generate-secret, not both");
  const secret = secretEnv === undefined ? (values["generate-secret"] === true ? true : undefined) : env[secretEnv];
  if (secretEnv !== undefined && !secret) return refuse(400, `--secret-env: ${secretEnv} is not set`, "secret");
  const optional = {
    id: values.id,
    name: values.name,
    secret,
    types: csv(values.types),
    events: csv(values.events),
    categories: csv(values.categories),
    batchSize: values["batch-size"] === undefined ? undefined : Number(values["batch-size"]),
    batchWaitMs: values["batch-wait-ms"] === undefined ? undefined : Number(values["batch-wait-ms"]),
  };
  const present = Object.entries(optional).filter(([, v]) => v !== undefined);
  return done({ workspaceId, url, headers: headers.value, ...(Object.fromEntries(present) as Partial<DestinationInput>) });
}

/** The first problem of the input's headers, naming the header (`headers.X-Foo`), or undefined. */
function headersRefusal(headers: Record<string, string>): Refusal | undefined {
  for (const [name, value] of Object.entries(headers)) {
    const bad = typeof value === "string" ? headerProblem(name, value) : `header ${name}: its value is not a string`;
    if (bad !== undefined) return refuse(400, bad, `headers.${name}`);
  }
  return undefined;
}

/** The first problem of the input's fields but its secret, or undefined (checked in the order the CLI always checked them). */
function fieldsRefusal(input: DestinationInput, settings: InputSettings): Refusal | undefined {
  const text = (v: unknown, max: number) => typeof v === "string" && v.length >= 1 && v.length <= max;
  if (!text(input.workspaceId, 200)) return refuse(400, "workspaceId: 1 to 200 characters", "workspaceId");
  const problem = input.url.length > 2048 ? "at most 2048 characters" : urlProblem(input.url, settings.allowLinkLocal);
  if (problem !== undefined) return refuse(400, `url: ${problem}`, "url");
  const headers = headersRefusal(input.headers ?? {});
  if (headers !== undefined) return headers;
  if (input.types?.some((t) => !(MESSAGE_TYPES as readonly string[]).includes(t)))
    return refuse(400, `types: one of ${MESSAGE_TYPES.join(", ")}`, "types");
  if (input.id !== undefined && !ID_PATTERN.test(input.id)) return refuse(400, "id: lowercase letters, digits and -, at most 63", "id");
  const { batchSize = 1, batchWaitMs = 1000 } = input;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000) return refuse(400, "batchSize: 1 to 1000", "batchSize");
  if (!Number.isInteger(batchWaitMs) || batchWaitMs < 0 || batchWaitMs > 60_000)
    return refuse(400, "batchWaitMs: 0 to 60000", "batchWaitMs");
  if (input.name !== undefined && !text(input.name, 100)) return refuse(400, "name: 1 to 100 characters", "name");
  for (const field of ["events", "categories"] as const)
    if (input[field]?.some((e) => typeof e !== "string")) return refuse(400, `${field}: a list of strings`, field);
  return undefined;
}

/**
 * The destination `input` describes, created and updated `now`, its secret sealed (and, when
 * `secret: true`, generated and returned in clear); or a 400 naming the field at fault. A secret
 * needs `settings.secretKey` of at least SECRET_KEY_MIN_CHARS characters (field `secret`).
 */
export function destinationFrom(input: DestinationInput, settings: InputSettings, now: Date): OpResult<MadeDestination> {
  const refusal = fieldsRefusal(input, settings);
  if (refusal !== undefined) return refusal;
  if (input.secret === "") return refuse(400, "secret: empty", "secret");
  const generatedSecret = input.secret === true ? randomBytes(24).toString("base64url") : undefined;
  const secret = generatedSecret ?? (input.secret as string | undefined);
  const key = settings.secretKey;
  if (secret !== undefined && (key === undefined || key.length < SECRET_KEY_MIN_CHARS))
    return refuse(400, `a secret needs DESTINATIONS_SECRET_KEY (at least ${SECRET_KEY_MIN_CHARS} characters)`, "secret");
  const destinationId = input.id ?? `d-${randomBytes(4).toString("hex")}`;
  const at = now.toISOString();
  const destination: WebhookDestination = {
    destinationId,
    workspaceId: input.workspaceId,
    kind: "webhook",
    name: input.name ?? "Webhooks",
    url: input.url,
    headers: { ...input.headers },
    ...(secret === undefined ? {} : { secret: sealSecret(secret, destinationId, key!) }),
    ...(input.types === undefined ? {} : { types: input.types as MessageType[] }),
    ...(input.events === undefined ? {} : { events: input.events }),
    ...(input.categories === undefined ? {} : { categories: input.categories }),
    batchSize: input.batchSize ?? 1,
    batchWaitMs: input.batchWaitMs ?? 1000,
    paused: false,
    createdAt: at,
    updatedAt: at,
  };
  return done(generatedSecret === undefined ? { destination } : { destination, generatedSecret });
}

/** A refusal's sentence as the CLI words it: a field with an option of another name is called by the option (`batchSize: ...` -> `--batch-size: ...`). */
export function cliRefusal(refusal: Refusal): string {
  const option = refusal.field === undefined ? undefined : OPTION_OF[refusal.field];
  return option !== undefined && refusal.error.startsWith(refusal.field!)
    ? option + refusal.error.slice(refusal.field!.length)
    : refusal.error;
}
