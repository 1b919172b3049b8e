/**
 * What the processes need of a ClickHouse connection (Sql: run a statement, read rows), over
 * @clickhouse/client, and the server facts they read through it (version, partitions per insert).
 * Throws what the client throws when ClickHouse is unreachable or refuses a statement.
 */
import { type ClickHouseClient } from "@clickhouse/client";
import { PARTITIONS_PER_INSERT_QUERY, partitionsPerInsert } from "./events";

/** What migrate needs of a ClickHouse connection: run a statement, read rows (JSONEachRow). */
export interface Sql {
  command(query: string): Promise<void>;
  rows<T>(query: string): Promise<T[]>;
}

/** An Sql over @clickhouse/client. */
export function clientSql(client: ClickHouseClient): Sql {
  return {
    command: async (query) => {
      await client.command({ query });
    },
    rows: async <T>(query: string) => (await client.query({ query, format: "JSONEachRow" })).json<T>(),
  };
}

/** The most partitions one of our inserts may touch on this server (schemas/clickhouse/ partitionsPerInsert). */
export async function serverPartitionsPerInsert(sql: Sql): Promise<number> {
  const [row] = await sql.rows<{ value: string }>(PARTITIONS_PER_INSERT_QUERY);
  return partitionsPerInsert(row?.value);
}

/** `SELECT version()`, e.g. `18.16.1` or `24.8.4.13`. */
export async function serverVersion(sql: Sql): Promise<string> {
  const [row] = await sql.rows<{ version: string }>("SELECT version() AS version");
  return row?.version ?? "";
}
