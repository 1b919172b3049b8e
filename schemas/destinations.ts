/**
 * Webhook destinations: the entry an operator's CLI writes to the destinations topic (compacted,
 * key = destinationId, a tombstone removes it) and every delivery process follows, and the sealing
 * of a destination's shared secret. Pure, but for node:crypto.
 *
 * Rules, with their sources:
 * - a destination posts to one http or https URL (Segment's Webhooks destination takes up to five:
 *   here, one destination per URL), with the operator's headers;
 * - with a shared secret, each request carries `X-Signature`, the hex HMAC-SHA1 of the body keyed
 *   by it (Segment's Webhooks destination), so a receiver written for Segment verifies it as it is;
 * - the secret must be usable to sign, so it cannot be hashed: it is sealed with AES-256-GCM under
 *   a key derived from DESTINATIONS_SECRET_KEY (HKDF-SHA256), bound to its destinationId, and is
 *   never listed, logged or streamed.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";
import typia, { tags } from "typia";
import type { MessageType } from "./messages";

/** A destination's secret, sealed (AES-256-GCM; base64 fields). */
export interface SealedSecret {
  iv: string;
  tag: string;
  data: string;
}

/** One webhook destination of a workspace, as the destinations topic holds it. */
export interface WebhookDestination {
  /** Its id: the topic key, the metric label, the key of its kept failures. */
  destinationId: string & tags.Pattern<"^[a-z0-9][a-z0-9-]{0,62}$">;
  workspaceId: string & tags.MinLength<1> & tags.MaxLength<200>;
  kind: "webhook";
  /** The name Segment's `integrations` object names it by (default "Webhooks"). */
  name: string & tags.MinLength<1> & tags.MaxLength<100>;
  url: string & tags.MaxLength<2048>;
  /** Sent with every request (the receiver's own authorization, say). */
  headers: Record<string, string>;
  secret?: SealedSecret;
  /** The message types sent; absent: all. */
  types?: MessageType[];
  /** The track event names (and page and screen names) sent; absent: all. */
  events?: string[];
  /** Consent categories the destination is mapped to: a message with a consent object is sent only if it grants every one. */
  categories?: string[];
  /** Messages per request: 1 sends each message alone, more sends `{"batch": [...]}`. */
  batchSize: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<1000>;
  /** How long a batch may wait to fill, ms. */
  batchWaitMs: number & tags.Type<"uint32"> & tags.Maximum<60000>;
  paused: boolean;
  /** ISO 8601 UTC. */
  createdAt: string;
  updatedAt: string;
}

const isDestination = typia.createIs<WebhookDestination>();

/** A topic value -> a destination; undefined for a tombstone or a value that is not one. */
export function parseDestination(value: Buffer | string | null): WebhookDestination | undefined {
  if (value === null || value.length === 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString());
    return isDestination(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Bytes of DESTINATIONS_SECRET_KEY at least: it must carry 256 bits however it was typed. */
export const SECRET_KEY_MIN_CHARS = 32;

const keyOf = (secretKey: string): Buffer =>
  Buffer.from(hkdfSync("sha256", secretKey, "segment-ingest destinations", "webhook secret v1", 32));

/**
 * Seals `secret` for `destinationId` under DESTINATIONS_SECRET_KEY. Throws when the key is
 * shorter than SECRET_KEY_MIN_CHARS (a setting error, caught by the CLI before it writes).
 */
export function sealSecret(secret: string, destinationId: string, secretKey: string): SealedSecret {
  if (secretKey.length < SECRET_KEY_MIN_CHARS)
    throw new Error(`DESTINATIONS_SECRET_KEY must have at least ${SECRET_KEY_MIN_CHARS} characters`);
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(secretKey), iv);
  cipher.setAAD(Buffer.from(destinationId));
  const data = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return { iv: iv.toString("base64"), tag: cipher.getAuthTag().toString("base64"), data: data.toString("base64") };
}

/** The secret of `sealed`, or undefined when another key or another destination sealed it (or it was altered). */
export function openSecret(sealed: SealedSecret, destinationId: string, secretKey: string): string | undefined {
  try {
    const tag = Buffer.from(sealed.tag, "base64");
    if (tag.length !== 16) return undefined; // the whole 128-bit tag: a cut one would be easier to forge
    const decipher = createDecipheriv("aes-256-gcm", keyOf(secretKey), Buffer.from(sealed.iv, "base64"), { authTagLength: 16 });
    decipher.setAAD(Buffer.from(destinationId));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}

/** Segment's `X-Signature`: hex HMAC-SHA1 of the exact body bytes, keyed by the shared secret. */
export function signature(secret: string, body: Buffer | string): string {
  return createHmac("sha1", secret).update(body).digest("hex");
}

/** The destination as `destinations list` shows it: the secret's presence, never the secret. */
export function listed(d: WebhookDestination): Omit<WebhookDestination, "secret"> & { secret: boolean } {
  const { secret, ...rest } = d;
  return { ...rest, secret: secret !== undefined };
}

/** Headers the delivery sets itself: an operator's header of one of these names is refused. */
export const RESERVED_HEADERS = new Set(["content-type", "content-length", "host", "x-signature", "transfer-encoding", "connection"]);

/**
 * What is wrong with an operator's header, or undefined. RFC 9110: the name a token; the value
 * tabs and visible characters, Latin-1 above ASCII included (what Node's HTTP client sends), no
 * control character (C0, DEL or C1); at most 8 KB.
 */
export function headerProblem(name: string, value: string): string | undefined {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/.test(name)) return `header name ${JSON.stringify(name)} is not a token`;
  if (RESERVED_HEADERS.has(name.toLowerCase())) return `header ${name} is set by the delivery`;
  if (value.length > 8_192 || !/^[\t\x20-\x7e\xa0-\xff]*$/.test(value))
    return `header ${name}: its value has control or non-Latin-1 characters, or passes 8 KB`;
  return undefined;
}

/**
 * One delivery attempt of one message, as the delivery process writes it to the deliveries topic
 * (key = messageId) for the live view. `workspaceId` comes first, so a reader finds it without
 * parsing the record (ingest/live/items.ts). `status` is the HTTP status, 0 without an answer;
 * `outcome` is what the attempt meant: delivered, retry (it will be tried again) or failed (kept
 * in delivery_failures). `at` is ISO 8601.
 */
export interface DeliveryReport {
  workspaceId: string;
  destinationId: string;
  messageId: string;
  type: string;
  /** track: the event; page/screen: the name; '' otherwise. */
  event: string;
  userId: string;
  anonymousId: string;
  receivedAt: string;
  outcome: "delivered" | "retry" | "failed";
  status: number;
  attempt: number;
  at: string;
}

/** The reports of one attempt of `messages` (Segment messages as sent) to a destination, at `atMs`. */
export function deliveryReports(
  destination: Pick<WebhookDestination, "workspaceId" | "destinationId">,
  messages: readonly ({ messageId: string; type: string; receivedAt: string } & Record<string, unknown>)[],
  attempt: Pick<DeliveryReport, "outcome" | "status" | "attempt">,
  atMs: number,
): DeliveryReport[] {
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  const at = new Date(atMs).toISOString();
  return messages.map((m) => ({
    workspaceId: destination.workspaceId,
    destinationId: destination.destinationId,
    messageId: m.messageId,
    type: m.type,
    event: text(m.event) || text(m.name),
    userId: text(m.userId),
    anonymousId: text(m.anonymousId),
    receivedAt: m.receivedAt,
    outcome: attempt.outcome,
    status: attempt.status,
    attempt: attempt.attempt,
    at,
  }));
}
