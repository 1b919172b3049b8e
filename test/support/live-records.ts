/**
 * Records as the ingest puts them on its topics (ingest/records/build.ts buildRecords and
 * buildRejected), wrapped as the live tail keeps them (ingest/live/items.ts LiveRecord), for the
 * unit tests of the live view.
 */
import type { Message } from "../../schemas/messages";
import { buildRecords } from "../../ingest/records/build";
import { buildRejected } from "../../ingest/records/rejected";
import { recordWorkspace, type LiveRecord } from "../../ingest/live/items";

let offset = 0;

/** The accepted record of `message` in `workspaceId`. */
export function acceptedRecord(workspaceId: string, message: Record<string, unknown>): LiveRecord {
  const built = buildRecords([message as unknown as Message], {}, { workspaceId, receivedAt: new Date().toISOString() }, 32_768);
  if (built.oversized.length > 0) throw new Error("message too large");
  const value = Buffer.from(built.records[0]!.value);
  return { kind: "accepted", workspaceId: recordWorkspace("accepted", value)!, value, id: `events/0/${offset++}` };
}

/** The refused record of `item` in `workspaceId`, with `reasons`. */
export function refusedRecord(workspaceId: string, item: unknown, reasons: string[]): LiveRecord {
  const [record] = buildRejected([{ item, reasons }], { workspaceId, receivedAt: new Date().toISOString() }, 32_768);
  const value = Buffer.from(record!.value);
  return { kind: "refused", workspaceId: recordWorkspace("refused", value)!, value, id: `events-rejected/0/${offset++}` };
}
