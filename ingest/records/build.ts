/**
 * Validated messages -> Kafka records (key = messageId, value = the events row, JSON). Pure.
 * Rules, with their sources:
 * - a missing timestamp is the time the request arrived (spec §2.1);
 * - with sentAt, timestamp = receivedAt - (sentAt - timestamp), correcting client clock skew;
 *   the client's value is kept as originalTimestamp (Segment); a message without timestamp but
 *   with originalTimestamp (RudderStack SDKs) is corrected from that;
 * - batch context is merged under each item's own context, the item's keys winning (Dittofeed);
 *   `context.ip` is the client address when the message has none (Segment);
 * - every time is rewritten in canonical UTC form (`2026-01-02T03:04:05.678Z`): RFC 3339 allows
 *   forms (lowercase `t`, offsets) that ClickHouse refuses or reads differently;
 * - the writeKey never reaches the topic;
 * - one stored message is at most `maxMessageBytes` of JSON (Segment: 32 KB per message), and its
 *   Kafka record at most the producer's limit.
 * Segment: https://segment.com/docs/connections/sources/catalog/libraries/server/http-api/
 * Dittofeed: https://github.com/dittofeed/dittofeed (packages/api, the public apps routes)
 */
import type { EventRecord } from "../../schemas/envelope";
import { STORABLE_TIME_END_MS, type JsonObject, type Message } from "../../schemas/messages";
import { EVENT_ROW_COLUMNS, messageRow, type EventRow, type RowStamp } from "../../schemas/row";
import { withAnonymizedIp, type Enricher } from "./enrich";
import { sentShape, type SentShapes } from "./catalog";
import { RECORD_OVERHEAD_BYTES, recordBytes } from "../../schemas/kafka/limits";

/** Who sent the request, from where, and when it arrived. */
export interface Receipt {
  workspaceId: string;
  /** ISO 8601 server time of arrival. */
  receivedAt: string;
  /** Client address (Koa's ctx.ip: X-Forwarded-For only when the proxy is trusted). */
  clientIp?: string;
}

/** Fields of a batch that apply to every item. */
export interface BatchDefaults {
  context?: JsonObject | null;
  sentAt?: string | null;
  /** The batch body's other fields (`integrations`, ...): kept in each item's `extra` (schemas/row.ts). */
  fields?: Readonly<Record<string, unknown>>;
}

/** What the ingest does with each stored context, set once per process. */
export interface ContextPolicy {
  /** Derives the enrichment columns (ingest/records/enrich.ts); absent: every row gets the defaults. */
  enricher?: Enricher;
  /**
   * IP_ANONYMIZE: context.ip is stored with its host part zeroed (anonymizeIp), in events and in
   * refused items; a value that is not an address is not stored. The country is looked up first.
   */
  anonymizeIp: boolean;
  /** Shapes whose key list was sent lately (ingest/records/catalog.ts); absent: every row carries its list. */
  shapes?: SentShapes;
}

/** No enrichment, addresses kept as sent. */
export const PLAIN_CONTEXT: ContextPolicy = { anonymizeIp: false };

/**
 * A message over a size limit: its position in the messages given, `bytes` of it measured as
 * `over` counts them (`message`: its row's values unescaped; `record`: its Kafka record,
 * recordBytes), `limit` the bound it passed.
 */
export interface Oversized {
  index: number;
  bytes: number;
  limit: number;
  over: "message" | "record";
}

/** The records of the messages within the limits, and those over them (no record built). */
export interface BuildResult {
  records: EventRecord[];
  /** Shapes whose key list these records carry (ingest/records/catalog.ts). */
  listedShapes: Set<string>;
  oversized: Oversized[];
}

/**
 * Builds one record per message, in order: key = messageId, value = the message's events row as
 * one JSONEachRow line (schemas/row.ts, format 2). The sink passes the
 * value to ClickHouse as it is. A message's size is the UTF-8 bytes of its row before the JSON
 * text columns are escaped into the line (close to the message's own JSON), at most
 * `maxMessageBytes`. Its record, whose line escapes quotes and backslashes again (2x) and control
 * characters (up to 6x), is also at most `maxRecordBytes` as schemas/kafka/limits.ts recordBytes
 * counts it (key + value + overhead): a record over the producer's limit would be refused by the
 * broker on every retry. A message over either limit gets no record and is listed in `oversized`
 * (its caller refuses it as an item, the others go on). `violations[i]`, when given, are the
 * tracking plan's violations of message i (ingest/records/plan.ts), stored in its row.
 */
export function buildRecords(
  messages: readonly Message[],
  defaults: BatchDefaults,
  receipt: Receipt,
  maxMessageBytes: number,
  policy: ContextPolicy = PLAIN_CONTEXT,
  maxRecordBytes = Number.POSITIVE_INFINITY,
  violations: readonly (string[] | undefined)[] = [],
): BuildResult {
  const records: EventRecord[] = [];
  const listedShapes = new Set<string>();
  const oversized: Oversized[] = [];
  // A line of n UTF-16 units has at most 3n bytes and is longer than the row it encodes.
  const measureOver = Math.floor(maxMessageBytes / 3);
  const recordMeasureOver = Math.floor((maxRecordBytes - RECORD_OVERHEAD_BYTES) / 3);
  // The request's own budget of user agent parsing (ingest/records/enrich.ts forRequest), caches shared.
  const requestPolicy = policy.enricher === undefined ? policy : { ...policy, enricher: policy.enricher.forRequest() };
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    const listedBefore = listedShapes.size;
    const row = messageRow(message, stamp(message, defaults, receipt, requestPolicy, listedShapes));
    const flagged = violations[index];
    if (flagged !== undefined) row.violations = flagged;
    const record: EventRecord = { key: message.messageId, value: JSON.stringify(row) };
    let over: Oversized | undefined;
    if (record.value.length > measureOver) {
      const bytes = rowBytes(row);
      if (bytes > maxMessageBytes) over = { index, bytes, limit: maxMessageBytes, over: "message" };
    }
    if (over === undefined && record.value.length + record.key.length > recordMeasureOver) {
      const bytes = recordBytes(record);
      if (bytes > maxRecordBytes) over = { index, bytes, limit: maxRecordBytes, over: "record" };
    }
    if (over === undefined) {
      records.push(record);
      continue;
    }
    oversized.push(over);
    // Its shape's key list goes unsent: a later message of the shape must carry it.
    if (listedShapes.size > listedBefore) listedShapes.delete([...listedShapes].at(-1)!);
  }
  return { records, listedShapes, oversized };
}

/** UTF-8 bytes of a row's values, unescaped (its size as a message). */
function rowBytes(row: EventRow): number {
  let bytes = 0;
  for (const column of EVENT_ROW_COLUMNS) {
    const value = row[column];
    if (typeof value === "string") bytes += Buffer.byteLength(value, "utf8");
  }
  return bytes;
}

/**
 * How far from its arrival a client's time may lie and still place the event (its day and
 * partition, schemas/clickhouse/ EVENT_DATE), in whole UTC days: the client's UTC day from the
 * arrival's UTC day minus 5 x 366 days (historical imports, Segment's /v1/import) to the
 * arrival's UTC day plus 1. Outside, the message is stored with the day it arrived and the
 * client's text is kept in `extra` under its own name: a device's broken clock (1970, 2040) or a
 * hostile client cannot spread rows over thousands of monthly partitions (on 18.16 a FINAL read
 * of 1,000 parts runs out of memory; current ClickHouse refuses an insert over 100). Days, not
 * ms: the retries of a message get the same decision unless they straddle a UTC midnight (an
 * ms bound let a retry seconds later flip from client day to arrival day: two rows). PostHog
 * replaces a client time over 23 h in the future with the time of arrival; here the future
 * reaches the end of the next UTC day (24 to 48 h).
 */
export const CLIENT_TIME_WINDOW = { pastDays: 5 * 366, futureDays: 1 } as const;

const DAY_MS = 86_400_000;

/**
 * Whether a client time (epoch ms) may place an event received at `receivedMs` (epoch ms): its
 * UTC day lies in CLIENT_TIME_WINDOW around the arrival's UTC day.
 */
export function inClientTimeWindow(timeMs: number, receivedMs: number): boolean {
  const day = Math.floor(timeMs / DAY_MS);
  const arrivalDay = Math.floor(receivedMs / DAY_MS);
  return day >= arrivalDay - CLIENT_TIME_WINDOW.pastDays && day <= arrivalDay + CLIENT_TIME_WINDOW.futureDays;
}

/**
 * What the ingest stores with a message, computed without copying it: its sentAt (its own, else
 * the batch's), the client's timestamp (`timestamp`, else RudderStack's `originalTimestamp`), the
 * stored timestamp, and the context (batch context merged under its own; ip filled). A client
 * time outside CLIENT_TIME_WINDOW (whole UTC days) is not the original_timestamp (the row gets the
 * day it arrived); its text stays in `extra`, and the stored timestamp is its skew correction
 * when that lies in the window (a wrong clock that sent sentAt too), else receivedAt. A client
 * time in the window whose correction is not (a wrong sentAt alone) is stored uncorrected.
 */
export function stamp(
  message: Message,
  defaults: BatchDefaults,
  receipt: Receipt,
  policy: ContextPolicy = PLAIN_CONTEXT,
  listedShapes = new Set<string>(),
): RowStamp {
  const { sentAt: ownSentAt, originalTimestamp: rudderTime } = message as Message & {
    sentAt?: string | null;
    originalTimestamp?: string | null;
  };
  const sentAt = canonical(ownSentAt ?? defaults.sentAt ?? undefined);
  const clientTime = canonical(message.timestamp ?? rudderTime ?? undefined);
  let originalTimestamp = clientTime;
  let timestamp = receipt.receivedAt;
  let clientTimeInExtra = false;
  if (clientTime !== undefined) {
    // Every item of a request shares receivedAt, and most share sentAt: each is parsed once.
    const receivedMs = receivedTimes.ms(receipt.receivedAt);
    const clientMs = Date.parse(clientTime);
    const correctedMs = sentAt === undefined ? clientMs : skewCorrectedMs(receivedMs, sentTimes.ms(sentAt), clientMs);
    const corrected = correctedMs === clientMs ? clientTime : new Date(correctedMs).toISOString();
    if (inClientTimeWindow(clientMs, receivedMs)) timestamp = inClientTimeWindow(correctedMs, receivedMs) ? corrected : clientTime;
    else {
      originalTimestamp = undefined;
      clientTimeInExtra = true;
      if (inClientTimeWindow(correctedMs, receivedMs)) timestamp = corrected;
    }
  }
  let context: JsonObject | null | undefined = message.context;
  const ip = context?.ip === undefined && receipt.clientIp !== undefined;
  if (defaults.context != null || ip) {
    context = { ...defaults.context, ...message.context };
    if (context.ip === undefined && receipt.clientIp !== undefined) context.ip = receipt.clientIp;
  }
  const enrichment = policy.enricher?.of(context);
  const catalog =
    policy.shapes === undefined
      ? undefined
      : sentShape(message, context, receipt.workspaceId, receipt.receivedAt.slice(0, 10), policy.shapes, listedShapes);
  if (policy.anonymizeIp && context != null && context.ip !== undefined) context = withAnonymizedIp(context);
  // Optional fields set one by one: spreads of conditional objects cost an allocation each, per message.
  const row: RowStamp = {
    workspaceId: receipt.workspaceId,
    receivedAt: receipt.receivedAt,
    sentAt: sentAt ?? null,
    originalTimestamp: originalTimestamp ?? null,
    timestamp,
    context,
  };
  if (clientTimeInExtra) row.clientTimeInExtra = true;
  if (defaults.fields !== undefined) row.batchFields = defaults.fields;
  if (enrichment !== undefined) row.enrichment = enrichment;
  if (catalog !== undefined) row.catalog = catalog;
  return row;
}

/**
 * Segment: timestamp = receivedAt - (sentAt - timestamp). ISO 8601 in, canonical ISO 8601 out.
 * A correction that would leave the storable range keeps the client's timestamp.
 */
export function skewCorrected(receivedAt: string, sentAt: string, timestamp: string): string {
  const corrected = Date.parse(receivedAt) - (Date.parse(sentAt) - Date.parse(timestamp));
  return storable(corrected) ? new Date(corrected).toISOString() : timestamp;
}

/** skewCorrected on epoch ms: the client's time when the correction would leave the storable range. */
function skewCorrectedMs(receivedMs: number, sentMs: number, timestampMs: number): number {
  const corrected = receivedMs - (sentMs - timestampMs);
  return storable(corrected) ? corrected : timestampMs;
}

const storable = (ms: number): boolean => ms >= 0 && ms < STORABLE_TIME_END_MS;

/** The epoch ms of the last time text asked for: one Date.parse per request for a time its items share. */
class LastParsed {
  private text: string | undefined;
  private value = 0;

  ms(text: string): number {
    if (text !== this.text) {
      this.value = Date.parse(text);
      this.text = text;
    }
    return this.value;
  }
}

const receivedTimes = new LastParsed();
const sentTimes = new LastParsed();

/** A validated time in canonical UTC form; undefined stays undefined. */
function canonical(time: string | null | undefined): string | undefined {
  if (time === null || time === undefined) return undefined;
  // A valid RFC 3339 time of this shape (what SDKs send) is already canonical: no parse needed.
  // Days 29-31 are parsed: Date.parse accepts 2026-02-30 (as March 2); the guards refuse such a
  // day (schemas/messages.ts CalendarDate), so only an unvalidated message reaches this.
  if (time.length === 24 && time[10] === "T" && time[19] === "." && time[23] === "Z" && time.slice(8, 10) < "29") return time;
  return new Date(Date.parse(time)).toISOString();
}
