/**
 * The one ClickHouse client factory, what the processes need of a connection (Sql: run a
 * statement, read rows), and the server facts they read through it (version, partitions per
 * insert). Throws what the client throws when ClickHouse is unreachable or refuses a statement.
 */
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import type { ClickHouseConfig } from "../config";
import { PARTITIONS_PER_INSERT_QUERY, partitionsPerInsert } from "./partitions";
import { clusterSettings } from "./sql";

/** What a process asks of its client beyond the config. */
export interface ClientOptions {
  /** Unqualified names resolve in CLICKHOUSE_DATABASE (the sink); setup creates it, so it has none. */
  useDatabase?: boolean;
  /** How long one request may take, ms (the client's default is 30 s; ON CLUSTER DDL needs more). */
  requestTimeoutMs?: number;
  /** Settings sent with every request, beside the cluster's (clusterSettings). */
  settings?: Record<string, string | number>;
}

/**
 * A client for the server of `config`, with its credentials; on a cluster every insert waits for
 * each shard (clusterSettings). Not connected until its first request.
 */
export function createClickHouse(config: ClickHouseConfig, options: ClientOptions = {}): ClickHouseClient {
  return createClient({
    url: config.url,
    username: config.username,
    password: config.password,
    ...(options.useDatabase ? { database: config.database } : {}),
    ...(options.requestTimeoutMs === undefined ? {} : { request_timeout: options.requestTimeoutMs }),
    clickhouse_settings: { ...clusterSettings(config.cluster), ...progressHeaders(options.requestTimeoutMs), ...options.settings },
  });
}

/**
 * For a client that waits more than a minute for an answer (migrations, the CLI's long
 * statements): ClickHouse's progress headers every max(50 s, timeout / 40), so a proxy or load
 * balancer that closes a connection idle for 60 s keeps it open while a statement runs
 * (@clickhouse/client's advice, and its start-up warning without them). At most 40 headers of
 * about 250 bytes, well under Node's 16 KB of response headers. 18.16 knows both settings.
 */
function progressHeaders(requestTimeoutMs: number | undefined): {
  send_progress_in_http_headers?: 1;
  http_headers_progress_interval_ms?: string;
} {
  if (requestTimeoutMs === undefined || requestTimeoutMs <= 60_000) return {};
  return {
    send_progress_in_http_headers: 1,
    http_headers_progress_interval_ms: String(Math.max(50_000, Math.ceil(requestTimeoutMs / 40))),
  };
}

/** What migrate needs of a ClickHouse connection: run a statement, read rows (JSONEachRow). */
export interface Sql {
  command(query: string): Promise<void>;
  rows<T>(query: string): Promise<T[]>;
}

/** The `n` column of a query's first row as a number (a `count() AS n`), 0 without a row. Throws on ClickHouse errors. */
export async function countOf(sql: Sql, query: string): Promise<number> {
  return Number((await sql.rows<{ n: string | number }>(query))[0]?.n ?? 0);
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
