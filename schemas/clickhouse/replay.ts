/**
 * Reading a workspace's stored events back for a replay to a destination (`cli destinations
 * replay`): pages of the events table as `FINAL` sees it (one row per messageId and type, the
 * latest retry), in (received_at, message_id, type) order, from a position onward. The order is
 * total: a messageId a client sent again under another type is two rows under FINAL (type is in
 * the table's key), and both are read, one after the other, even across a page boundary. The range is on
 * `received_at`, the pipeline's own clock (a client's `timestamp` can be anything). Times come
 * back as ms since the epoch on both engines (DateTime64(3) current, whole seconds on 18.16) and
 * become the ISO 8601 text the ingest wrote, so a replayed message reads as a delivered one.
 */
import { EVENT_ROW_COLUMNS, type EventRow } from "../row";
import { type Dialect, quoteIdent, quoteString } from "./sql";

/** The time columns, read as ms since the epoch. */
const TIME_COLUMNS = ["timestamp", "original_timestamp", "sent_at", "received_at"] as const;
/** The other columns a message is built from (the catalog's are not needed). */
const TEXT_COLUMNS = EVENT_ROW_COLUMNS.filter(
  (c) => !(TIME_COLUMNS as readonly string[]).includes(c) && c !== "catalog_keys" && c !== "catalog_shape" && c !== "violations",
);

/** What is replayed: one workspace's events received in [fromMs, toMs). */
export interface ReplayRange {
  workspaceId: string;
  fromMs: number;
  toMs: number;
}

/** Where a replay is: every row up to this one (in received_at, message_id, type order) is done. */
export interface ReplayPosition {
  receivedMs: number;
  messageId: string;
  /** The row's type ('' in a position written before types were part of it: every type of that messageId follows it). */
  type: string;
}

/** A row of a page as ClickHouse answers it: times as `<column>_ms` (numbers, or text for 64-bit integers). */
export type ReplayRawRow = Record<string, string | number | null>;

/** `column` as ms since the epoch. */
function msOf(d: Dialect, column: string): string {
  return d === "current" ? `toUnixTimestamp64Milli(${column})` : `toUInt64(toUnixTimestamp(${column})) * 1000`;
}

/** A time literal of `ms`, rounded down (18.16 keeps whole seconds) or up when `up`. */
function timeAt(d: Dialect, ms: number, up = false): string {
  const whole = Math.trunc(ms);
  if (d === "current") return `fromUnixTimestamp64Milli(toInt64(${whole}), 'UTC')`;
  return `toDateTime(${up ? Math.ceil(whole / 1000) : Math.floor(whole / 1000)})`;
}

/** The WHERE of a range: the workspace, received in [from, to) (on 18.16 `to` rounded up to its second). */
function rangeWhere(d: Dialect, range: ReplayRange): string {
  return `workspace_id = ${quoteString(range.workspaceId)}
  AND received_at >= ${timeAt(d, range.fromMs)} AND received_at < ${timeAt(d, range.toMs, true)}`;
}

/**
 * What follows `after` in (received_at, message_id, type) order, spelled out with OR and AND (18.16
 * compares no tuples).
 */
function resumeWhere(d: Dialect, after: ReplayPosition): string {
  const at = timeAt(d, after.receivedMs);
  const [id, type] = [quoteString(after.messageId), quoteString(after.type)];
  return `(received_at > ${at} OR (received_at = ${at} AND (message_id > ${id} OR (message_id = ${id} AND type > ${type}))))`;
}

/**
 * The next page of `range` after `after` (from its start when undefined), at most `limit` rows, in
 * (received_at, message_id, type) order, under FINAL. Works on both dialects and on a cluster's
 * Distributed table (rows of one messageId share a shard).
 */
export function replayPageQuery(
  d: Dialect,
  database: string,
  table: string,
  range: ReplayRange,
  after: ReplayPosition | undefined,
  limit: number,
): string {
  const times = TIME_COLUMNS.map((c) => `${msOf(d, c)} AS ${c}_ms`);
  const resume = after === undefined ? "" : `\n  AND ${resumeWhere(d, after)}`;
  return `SELECT ${[...TEXT_COLUMNS, ...times].join(", ")}
FROM ${quoteIdent(database)}.${quoteIdent(table)} FINAL
WHERE ${rangeWhere(d, range)}${resume}
ORDER BY received_at, message_id, type
LIMIT ${Math.max(1, Math.floor(limit))}`;
}

/** How many rows under FINAL `range` holds (one per messageId and type: the replay's progress total). */
export function replayCountQuery(d: Dialect, database: string, table: string, range: ReplayRange): string {
  return `SELECT count() AS n FROM (SELECT message_id FROM ${quoteIdent(database)}.${quoteIdent(table)} FINAL
WHERE ${rangeWhere(d, range)})`;
}

/** A page's row -> the events row it was (times as ISO 8601 UTC) and its position. */
export function replayRow(raw: ReplayRawRow): { row: EventRow; position: ReplayPosition } {
  const row: Record<string, unknown> = {};
  for (const c of TEXT_COLUMNS) if (raw[c] !== null && raw[c] !== undefined) row[c] = raw[c];
  for (const c of TIME_COLUMNS) {
    const ms = raw[`${c}_ms`];
    if (ms !== null && ms !== undefined) row[c] = new Date(Number(ms)).toISOString();
  }
  const receivedMs = Number(raw.received_at_ms);
  return { row: row as unknown as EventRow, position: { receivedMs, messageId: String(raw.message_id), type: String(raw.type ?? "") } };
}

/**
 * A position as an operator passes it back (`--after`): `<receivedMs>/<messageId>/<type>`, the
 * messageId and type percent-encoded (encodeURIComponent): a client chose them, and the text is
 * printed on an operator's terminal, so it holds no control character, space or slash.
 */
export function positionText(p: ReplayPosition): string {
  return `${p.receivedMs}/${encodeURIComponent(p.messageId)}/${encodeURIComponent(p.type)}`;
}

/** `--after`'s text -> a position; undefined when it is not one. `<receivedMs>/<messageId>` (before types) is read with type ''. */
export function parsePosition(text: string): ReplayPosition | undefined {
  const [ms, id, type = "", ...rest] = text.split("/");
  const receivedMs = Number(ms);
  if (rest.length > 0 || !/^\d+$/.test(ms ?? "") || !Number.isSafeInteger(receivedMs) || !id) return undefined;
  try {
    const messageId = decodeURIComponent(id);
    return { receivedMs, messageId, type: decodeURIComponent(type) };
  } catch {
    return undefined; // a malformed escape
  }
}
