/**
 * A Kafka record value -> a row, or the reason it cannot be one (a DLQ decision). Pure. Rows the
 * ingest wrote pass through unparsed; an envelope is checked again with the envelope guard:
 * records may come from producers other than our ingest (replays, tools, an older ingest), and
 * one bad record must not stop a partition.
 * Lone surrogates are replaced here too (schemas/wellformed.ts), in envelopes and rows, for
 * records already on the topic before the ingest replaced them.
 */
import type { IValidation } from "typia";
import { validateEnvelope, validateRejectedEnvelope } from "../../schemas/guards";
import { isRowValue, rowStringField, toRow, type EventRow, type RejectedRow } from "../../schemas/row";
import { mayHoldLoneSurrogate, wellFormed } from "../../schemas/wellformed";

/** A row to insert, or why the record goes to the DLQ instead. */
export type DecodeResult<Row = EventRow> = { ok: true; row: Row } | { ok: false; reason: string };

/**
 * One record value of the events topic -> its JSONEachRow line (UTF-8, no newline). A row
 * (format 2, what the ingest writes) is passed on as it is, without parsing, once its message_id
 * and received_at are found (rowStringField; else a dead letter): ClickHouse checks the rest at
 * the insert, and one it refuses is narrowed to and dead-lettered alone (sink/loop/writer.ts).
 * A row holding a lone surrogate escape (an earlier ingest's, which ClickHouse refuses with code
 * 25 however often it is replayed) is parsed, repaired (wellFormed) and written again, keys in
 * their order. An envelope (format 1) is parsed, checked and mapped to its row.
 */
export function decode(value: Buffer | null): DecodeResult<Buffer> {
  if (value !== null && isRowValue(value)) {
    if (!rowStringField(value, "message_id") || rowStringField(value, "received_at") === undefined) return NOT_A_ROW;
    return mayNeedRepair(value) ? repairRow(value) : { ok: true, row: value };
  }
  const row = decodeEnvelope(value);
  return row.ok ? { ok: true, row: Buffer.from(JSON.stringify(row.row)) } : row;
}

/**
 * A value that starts like a row without a non-empty message_id or a received_at string: stored,
 * it would get message_id '' (current ClickHouse skips a misspelt key by default), and distinct
 * records would collapse into one row under FINAL.
 */
const NOT_A_ROW: DecodeResult<Buffer> = { ok: false, reason: "a row without a message_id or a received_at string" };

/** One value of either format -> its row, parsed (tests and tools; the sink keeps lines as bytes). */
export function decodeRow(value: Buffer | null): DecodeResult<EventRow> {
  if (value === null || !isRowValue(value)) return decodeEnvelope(value);
  const text = value.toString("utf8");
  try {
    const row = JSON.parse(text) as EventRow;
    return { ok: true, row: mayHoldLoneSurrogate(text) ? wellFormed(row) : row };
  } catch (error) {
    return { ok: false, reason: `invalid JSON: ${(error as Error).message}` };
  }
}

/** JSON.stringify writes `\u` only for control characters and lone surrogates: one native scan keeps other rows unparsed. */
function mayNeedRepair(value: Buffer): boolean {
  return value.includes("\\u") && mayHoldLoneSurrogate(value.toString("utf8"));
}

/** A row line with a surrogate escape -> the line with lone surrogates as U+FFFD (the same buffer if it had none). */
function repairRow(value: Buffer): DecodeResult<Buffer> {
  let row: unknown;
  try {
    row = JSON.parse(value.toString("utf8"));
  } catch (error) {
    return { ok: false, reason: `invalid JSON: ${(error as Error).message}` };
  }
  const repaired = wellFormed(row);
  return { ok: true, row: repaired === row ? value : Buffer.from(JSON.stringify(repaired)) };
}

/** One format-1 value (UTF-8 JSON Envelope) -> its row. */
export function decodeEnvelope(value: Buffer | null): DecodeResult<EventRow> {
  const checked = parseChecked(value, validateEnvelope);
  return checked.ok ? { ok: true, row: toRow(checked.row) } : checked;
}

/** Decodes one record value of the rejected topic (UTF-8 JSON RejectedEnvelope). */
export function decodeRejected(value: Buffer | null): DecodeResult<RejectedRow> {
  const checked = parseChecked(value, validateRejectedEnvelope);
  if (!checked.ok) return checked;
  const r = checked.row;
  return {
    ok: true,
    row: {
      workspace_id: r.workspaceId,
      received_at: r.receivedAt,
      rejection_id: r.rejectionId,
      message_id: r.messageId,
      type: r.type,
      reasons: r.reasons,
      raw: r.raw,
    },
  };
}

/** UTF-8 JSON -> well-formed value -> guard. */
function parseChecked<T>(value: Buffer | null, validate: (input: unknown) => IValidation<T>): DecodeResult<T> {
  if (value === null || value.length === 0) return { ok: false, reason: "empty value" };
  const text = value.toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `invalid JSON: ${(error as Error).message}` };
  }
  if (mayHoldLoneSurrogate(text)) parsed = wellFormed(parsed);
  const checked = validate(parsed);
  if (!checked.success) {
    const first = checked.errors.slice(0, 3).map((e) => `${e.path} expected ${e.expected}`);
    return { ok: false, reason: `not an envelope: ${first.join("; ")}` };
  }
  return { ok: true, row: checked.data };
}
