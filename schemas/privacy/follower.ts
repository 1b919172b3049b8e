/**
 * Follows the suppressions topic (schemas/privacy/list.ts) into a PrivacyList, in the ingest and in
 * the sink, through the one follower of compacted topics (schemas/kafka/follow.ts: read whole
 * before the process stores anything, then followed across Kafka outages).
 */
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import { parseEntry, type PrivacyList } from "./list";
import type { Backoff } from "../runtime/retry";
import { followCompacted, RECONNECT_BACKOFF, type Following } from "../kafka/follow";

/**
 * Reads `topic` whole into `list`, then keeps following it. A value that is not an entry is logged
 * and applied as a removal. Throws when the topic cannot be read to its end within `timeoutMs` (an
 * infrastructure failure: the process does not start).
 */
export async function followSuppressions(
  kafka: Kafka,
  topic: string,
  clientId: string,
  list: PrivacyList,
  log: Logger,
  timeoutMs = 60_000,
  backoff: Backoff = RECONNECT_BACKOFF,
): Promise<Following> {
  const following = await followCompacted(
    kafka,
    { topic, groupPrefix: `${clientId}-suppressions`, label: "suppressions", log, timeoutMs, backoff },
    (key, value, at) => {
      const entry = parseEntry(value);
      if (value !== null && entry === undefined) log.warn({ topic, ...at }, "suppressions: record ignored");
      list.apply(key, entry);
    },
  );
  log.info({ topic, users: list.size }, "suppressions read");
  return following;
}
