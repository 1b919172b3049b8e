/**
 * Ceilings of the two servers, measured in the same run with the same corpus: a producer that
 * only sends pre-built records with sendBatch (acks=all), and direct inserts of the same rows.
 * Both loop for a bounded time; throughput is counted from acknowledged sends only.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import type { Kafka } from "kafkajs";
import type { EventRecord } from "../../schemas/envelope";
import type { EventRow } from "../../schemas/row";
import { KeyPartitioner } from "../../schemas/kafka/partitioner";

/** Records per second acknowledged by the broker; `inFlight` sendBatch calls of `batchSize`. */
export async function kafkaCeiling(
  kafka: Kafka,
  topic: string,
  records: EventRecord[],
  seconds: number,
  batchSize = 2_000,
  inFlight = 4,
): Promise<number> {
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: KeyPartitioner });
  await producer.connect();
  const end = Date.now() + seconds * 1000;
  let sent = 0;
  let next = 0;
  const worker = async () => {
    while (Date.now() < end) {
      const batch: EventRecord[] = [];
      for (let i = 0; i < batchSize; i++) {
        const r = records[next++ % records.length]!;
        batch.push({ key: `${r.key}-${next}`, value: r.value });
      }
      await producer.sendBatch({ topicMessages: [{ topic, messages: batch }], acks: -1 });
      sent += batch.length;
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsed = (Date.now() - started) / 1000;
  await producer.disconnect();
  return sent / elapsed;
}

/** Rows per second acknowledged by ClickHouse, inserting `batchRows` rows at a time. */
export async function clickhouseCeiling(
  client: ClickHouseClient,
  table: string,
  rows: EventRow[],
  seconds: number,
  batchRows = 20_000,
): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let inserted = 0;
  let n = 0;
  const started = Date.now();
  while (Date.now() < end) {
    const values: EventRow[] = [];
    for (let i = 0; i < batchRows; i++) {
      const row = rows[n++ % rows.length]!;
      values.push({ ...row, message_id: `${row.message_id}-${n}` });
    }
    await client.insert({ table, values, format: "JSONEachRow", clickhouse_settings: { date_time_input_format: "best_effort" } });
    inserted += values.length;
  }
  return inserted / ((Date.now() - started) / 1000);
}
