/**
 * The route table of the ingest: the paths (the spec's and Segment's) and, for each, how a parsed
 * body becomes the messages to accept and the items to reject. Pure; a whole-request refusal
 * (too many messages) throws its named HttpError from errors.ts.
 */
import type { Message, MessageType } from "../schemas/messages";
import type { BatchDefaults } from "./envelope";
import { tooManyMessages } from "./errors";
import { sortBatch, validateSingle, type RejectedItem, type Validation } from "./validate";

/** The route prefixes: the spec's (Dittofeed) and Segment's. */
export const PREFIXES = ["/api/public/apps", "/v1"] as const;

/** The single-message routes. */
export const SINGLE_TYPES: readonly MessageType[] = ["identify", "track", "page", "screen", "group", "alias"];

/** What a route's body holds: messages to accept, items refused, and the batch defaults. */
export interface Sorted {
  messages: Message[];
  rejected: RejectedItem[];
  defaults: BatchDefaults;
}

/** One POST route: its path and how its body is sorted (frame issues: the whole body is refused). */
export interface Route {
  path: string;
  sort: (body: unknown) => Validation<Sorted>;
}

/** Every POST route, for both prefixes. */
export function routeTable(limits: { maxBatchMessages: number }): Route[] {
  const batch = batchSorter(limits.maxBatchMessages);
  return PREFIXES.flatMap((prefix) => [
    { path: `${prefix}/batch`, sort: batch },
    ...SINGLE_TYPES.map((type) => ({ path: `${prefix}/${type}`, sort: singleSorter(type) })),
  ]);
}

/** A batch body: items checked one by one (Segment: 2,500 messages per batch at most). */
function batchSorter(maxBatchMessages: number): Route["sort"] {
  return (body) => {
    const items = (body as { batch?: unknown } | undefined)?.batch;
    if (Array.isArray(items) && items.length > maxBatchMessages) throw tooManyMessages(items.length, maxBatchMessages);
    const result = sortBatch(body);
    if (!result.ok) return result;
    const { frame, accepted, rejected } = result.value;
    return { ok: true, value: { messages: accepted, rejected, defaults: { context: frame.context, sentAt: frame.sentAt } } };
  };
}

/** A single-message body of `type`: accepted, or one rejected item (a non-object is malformed). */
function singleSorter(type: MessageType): Route["sort"] {
  return (body) => {
    const result = validateSingle(type, body);
    if (result.ok) return { ok: true, value: { messages: [result.value], rejected: [], defaults: {} } };
    if (body === null || typeof body !== "object" || Array.isArray(body)) return result;
    return { ok: true, value: { messages: [], rejected: [{ index: 0, item: body, issues: result.issues }], defaults: {} } };
  };
}
