/**
 * The route table of the ingest: the paths (the spec's and Segment's) and, for each, how a parsed
 * body becomes the messages to accept and the items to reject; then the records produced of them
 * (suppressed users taken out). Pure but for the suppression metric; a whole-request refusal (too
 * many messages, shared fields too large, a message over a size limit) throws its named HttpError
 * from errors.ts.
 */
import type { CompiledPlan } from "../../schemas/plans";
import { applyPlan } from "../records/plan";
import type { EventRecord } from "../../schemas/envelope";
import { MESSAGE_TYPES, type Message, type MessageType } from "../../schemas/messages";
import { nonFinitePath } from "../../schemas/wellformed";
import { type PrivacyList, itemIds } from "../../schemas/privacy/list";
import type { Limits } from "../admission/limits";
import { type BatchDefaults, type ContextPolicy, type Receipt, buildRecords } from "../records/build";
import { type HttpError, invalidBody, messageTooLarge, sharedFieldsTooLarge, tooManyMessages } from "./errors";
import type { IngestMetrics } from "../metrics";
import { buildRejected } from "../records/rejected";
import { issuesOf, sortBatch, validateSingle, type RejectedItem, type Validation, type ValidationIssue } from "../records/validate";

/** The route prefixes: the spec's (Dittofeed) and Segment's. */
export const PREFIXES = ["/api/public/apps", "/v1"] as const;

/** What a route's body holds: messages to accept, items refused, and the batch defaults. */
export interface Sorted {
  messages: Message[];
  rejected: RejectedItem[];
  defaults: BatchDefaults;
  /** Per message, the tracking plan's violations as row text (ingest/records/plan.ts); absent: none. */
  violations?: (string[] | undefined)[];
}

/**
 * Other names SDKs post to, under `/v1`. analytics.js posts each message to the first letter of
 * its type and, with its batching strategy, to `b`; the mobile SDKs (analytics-kotlin,
 * analytics-swift, React Native) upload to `b`; several server libraries post batches to `import`.
 */
export const ALIASES: Readonly<Record<string, MessageType | "batch">> = {
  i: "identify",
  t: "track",
  p: "page",
  s: "screen",
  g: "group",
  a: "alias",
  b: "batch",
  import: "batch",
};

/**
 * The body of a 200 on Segment's routes, as Segment's API answers (Content-Type
 * application/json): analytics-java parses it and, on an empty body, retries the batch for ever.
 */
export const SEGMENT_SUCCESS: Readonly<{ success: true }> = Object.freeze({ success: true });

/** One POST route: its path, what it takes, and how its body is sorted (frame issues refuse the body). */
export interface Route {
  path: string;
  /** The message type of a single-message route, or "batch". */
  kind: MessageType | "batch";
  sort: (body: unknown) => Validation<Sorted>;
  /** The body of its 200: SEGMENT_SUCCESS under /v1, empty under the spec's prefix (the spec says empty). */
  successBody: typeof SEGMENT_SUCCESS | "";
}

/** Every POST route: both prefixes' named routes, and the aliases under `/v1`. */
export function routeTable(limits: { maxBatchMessages: number; maxRequestBytes: number }): Route[] {
  const batch = batchSorter(limits);
  const sorters = Object.fromEntries(MESSAGE_TYPES.map((type) => [type, singleSorter(type)])) as Record<MessageType, Route["sort"]>;
  const route = (path: string, kind: MessageType | "batch"): Route => ({
    path,
    kind,
    sort: kind === "batch" ? batch : sorters[kind],
    successBody: path.startsWith("/v1/") ? SEGMENT_SUCCESS : "",
  });
  return [
    ...PREFIXES.flatMap((prefix) => [route(`${prefix}/batch`, "batch"), ...MESSAGE_TYPES.map((type) => route(`${prefix}/${type}`, type))]),
    ...Object.entries(ALIASES).map(([alias, kind]) => route(`/v1/${alias}`, kind)),
  ];
}

/**
 * A batch body: items checked one by one (Segment: 2,500 messages per batch at most). The batch's
 * shared fields are copied into each accepted item: past MAX_REQUEST_BYTES of copies the whole
 * batch is refused (sharedFieldsTooLarge) before any record is built.
 */
function batchSorter({ maxBatchMessages, maxRequestBytes }: { maxBatchMessages: number; maxRequestBytes: number }): Route["sort"] {
  return (body) => {
    const items = (body as { batch?: unknown } | undefined)?.batch;
    if (Array.isArray(items) && items.length > maxBatchMessages) throw tooManyMessages(items.length, maxBatchMessages);
    const result = sortBatch(body);
    if (!result.ok) return result;
    const { frame, accepted, rejected } = result.value;
    const fields = batchFields(frame);
    const shared = sharedBytes(frame.context, fields);
    if (shared * accepted.length > maxRequestBytes) throw sharedFieldsTooLarge(shared, accepted.length, maxRequestBytes);
    const defaults: BatchDefaults = { context: frame.context, sentAt: frame.sentAt, ...(fields === undefined ? {} : { fields }) };
    return { ok: true, value: { messages: accepted, rejected, defaults } };
  };
}

/** The batch body's own fields that are not copied into each item's `extra` (the writeKey never reaches the topic). */
const FRAME_KEYS = new Set(["batch", "context", "sentAt", "writeKey"]);

/** A batch body's fields other than FRAME_KEYS, or undefined when it has none. */
function batchFields(frame: object): Record<string, unknown> | undefined {
  let fields: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(frame)) {
    if (FRAME_KEYS.has(key)) continue;
    (fields ??= Object.create(null) as Record<string, unknown>)[key] = value; // no prototype: "__proto__" stays data
  }
  return fields;
}

/** UTF-8 bytes of the fields a batch shares with its items, as JSON (0 without any). */
function sharedBytes(context: unknown, fields: Record<string, unknown> | undefined): number {
  const contextBytes = context == null ? 0 : Buffer.byteLength(JSON.stringify(context), "utf8");
  return contextBytes + (fields === undefined ? 0 : Buffer.byteLength(JSON.stringify(fields), "utf8"));
}

/** The issue of a single route's body that is not one message object (an array, a scalar). */
const NOT_ONE_MESSAGE: ValidationIssue = { path: "$", expected: "an object: one message (a list of messages goes to /v1/batch)" };

/** A single-message body of `type`: accepted, or one rejected item (a non-object is malformed). */
function singleSorter(type: MessageType): Route["sort"] {
  return (body) => {
    if (body === null || typeof body !== "object" || Array.isArray(body)) return { ok: false, issues: [NOT_ONE_MESSAGE] };
    const result = validateSingle(type, body);
    if (result.ok) return { ok: true, value: { messages: [result.value], rejected: [], defaults: {} } };
    return { ok: true, value: { messages: [], rejected: [{ index: 0, item: body, issues: result.issues }], defaults: {} } };
  };
}

/**
 * The messages holding a number JSON.parse read as Infinity (its text past Number.MAX_VALUE:
 * `1e400`) refused as items naming it, the rest kept: stored, it would have become null. Called
 * only for a body whose text may hold one (validate.ts jsonShape's mayOverflow).
 */
export function withoutNonFinite(sorted: Sorted): Sorted {
  const messages: Message[] = [];
  const rejected = [...sorted.rejected];
  for (const message of sorted.messages) {
    const path = nonFinitePath(message);
    if (path === undefined) messages.push(message);
    else rejected.push({ index: rejected.length, item: message, issues: [{ path, expected: NON_FINITE_EXPECTED }] });
  }
  return messages.length === sorted.messages.length ? sorted : { ...sorted, messages, rejected };
}

const NON_FINITE_EXPECTED = "a number within ±1.8e308 (this one would be stored as null)";

/**
 * A body refused whole (its batch frame, or a single route's body that is no object): each item
 * of its `batch` array, else the body itself, as a refused item with the body's issues, so what
 * was refused is kept where an operator can query it (rejected_messages) as any refused item is.
 * None for a body that parsed to nothing.
 */
export function refusedWhole(body: unknown, issues: readonly ValidationIssue[]): Sorted {
  const batch = (body as { batch?: unknown } | null | undefined)?.batch;
  const items = Array.isArray(batch) && batch.length > 0 ? batch : body === undefined ? [] : [body];
  return { messages: [], rejected: items.map((item, index) => ({ index, item, issues: [...issues] })), defaults: {} };
}

/**
 * The workspace's tracking plan applied (ingest/records/plan.ts): blocked messages refused as
 * items, omitted ones trimmed, violations kept for the rows; each outcome counted. Without a
 * plan, `sorted` as it is.
 */
export function withPlan(sorted: Sorted, plan: CompiledPlan | undefined, metrics: IngestMetrics): Sorted {
  if (plan === undefined) return sorted;
  const planned = applyPlan(sorted, plan);
  for (const [outcome, n] of Object.entries(planned.counts)) metrics.planMessages.inc({ outcome }, n);
  return planned.violations.length === 0 ? planned.sorted : { ...planned.sorted, violations: planned.violations };
}

/**
 * The messages and refused items of suppressed users taken out: the request is still answered
 * 2xx (an SDK would otherwise retry them for ever) and they are not stored (schemas/privacy/list.ts).
 */
export function withoutSuppressed(sorted: Sorted, workspaceId: string, list: PrivacyList, metrics: IngestMetrics): Sorted {
  if (list.size === 0) return sorted;
  // Infinity: a new message is dropped only for a suppression (a deletion covers what came before it).
  const drops = (item: unknown) => list.drops(workspaceId, ...itemIds(item), Number.POSITIVE_INFINITY);
  const kept = sorted.messages.map((m) => !drops(m));
  const messages = sorted.messages.filter((_, i) => kept[i]);
  const rejected = sorted.rejected.filter((r) => !drops(r.item));
  const dropped = sorted.messages.length - messages.length + sorted.rejected.length - rejected.length;
  if (dropped === 0) return sorted;
  metrics.messagesSuppressed.inc(dropped);
  const violations = sorted.violations?.filter((_, i) => kept[i]);
  return { ...sorted, messages, rejected, ...(violations === undefined ? {} : { violations }) };
}

/**
 * The records of the accepted messages and of the refused items. A message over a size limit (its
 * own, Segment's 32 KB, or its Kafka record's) is refused as an item too, its text cut to fit
 * (buildRejected), so it never costs the messages beside it; `oversized` lists them, with the 413
 * the caller answers when no message is left (messageTooLarge).
 */
export function toRecords(
  sorted: Sorted,
  receipt: Receipt,
  limits: Limits,
  policy: ContextPolicy,
): { records: EventRecord[]; refusals: EventRecord[]; listedShapes: Set<string>; oversized: HttpError[] } {
  const built = buildRecords(
    sorted.messages,
    sorted.defaults,
    receipt,
    limits.maxMessageBytes,
    policy,
    limits.maxRecordBytes,
    sorted.violations,
  );
  const refused = sorted.rejected.map((r) => ({ item: r.item, reasons: r.issues.map((i) => `${i.path}: ${i.expected}`) }));
  for (const o of built.oversized) {
    const message = sorted.messages[o.index]!;
    const what =
      o.over === "message"
        ? `${o.bytes} bytes, over the limit of ${o.limit} bytes per message`
        : `a Kafka record of ${o.bytes} bytes (its JSON escaped again), over the limit of ${o.limit} bytes per record`;
    refused.push({ item: message, reasons: [`$input: ${what}`] });
  }
  const refusals = buildRejected(refused, receipt, limits.maxMessageBytes, policy.anonymizeIp, limits.maxRecordBytes);
  const oversized = built.oversized.map((o) => messageTooLarge(o.index, o.bytes, o.limit, o.over));
  return { records: built.records, refusals, listedShapes: built.listedShapes, oversized };
}

/**
 * The refusal a request is answered with once its records and refused items are stored, or
 * undefined (200): a body refused whole, 400 naming each bad field of it; no item accepted, the
 * first oversized message's 413, else 400 naming every refused item's fields. A suppressed user's
 * valid messages count as accepted (they are not stored). Decided before the wait for Kafka, so
 * that nothing after it refers to the parsed body, which may then be collected while the broker
 * acknowledges.
 */
export function refusalOf(sorted: Validation<Sorted>, value: Sorted, oversized: readonly HttpError[]): HttpError | undefined {
  if (!sorted.ok) return invalidBody(sorted.issues);
  if (value.messages.length > oversized.length) return undefined;
  return oversized[0] ?? invalidBody(issuesOf(value.rejected));
}
