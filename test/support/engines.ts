/**
 * The two engines a live suite runs on: ClickHouse 18.16 (the local server, as the sink connects:
 * ISO 8601 times read with best_effort, sink/loop/writer.ts) and current ClickHouse (chdb).
 */
import { createClient } from "@clickhouse/client";
import { clientSql, type Sql } from "../../schemas/clickhouse/client";
import { clickhouseConfig } from "../../schemas/config";
import { Chdb } from "./chdb";

/** An open engine: its Sql and how to close it. */
export interface OpenEngine {
  sql: Sql;
  close: () => Promise<void>;
}

/** The live 18.16 server of the local stack, with the sink's insert settings. */
export async function openLegacyServer(): Promise<OpenEngine> {
  const c = clickhouseConfig(process.env);
  const client = createClient({
    url: c.url,
    username: c.username,
    password: c.password,
    clickhouse_settings: { date_time_input_format: "best_effort" },
  });
  return { sql: clientSql(client), close: () => client.close() };
}

/** Current ClickHouse in a chdb process. */
export async function openCurrentEngine(): Promise<OpenEngine> {
  const chdb = new Chdb();
  await chdb.start();
  return { sql: chdb, close: () => chdb.close() };
}
