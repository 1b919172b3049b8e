/**
 * The sink's start-up check of its ClickHouse rights. Each operation the sink runs is tried once
 * in a form that changes nothing (an insert of no rows, a read of no rows, a drop of a partition
 * that cannot exist), and each refusal names the right it lacks. Asking the server to do the
 * thing, rather than reading how rights are set up, works alike on 18.16, which has no GRANTs
 * (a user's profile in users.xml: `readonly`, `allow_ddl`; `allow_databases`), and on current
 * ClickHouse (GRANTs, roles, settings constraints). Without it a user that may not insert would
 * see every insert refused with a code the sink does not know as a data error, and retry for ever.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import { dialectFor, quoteIdent } from "../../schemas/clickhouse/sql";
import { REJECTED_TABLE } from "../../schemas/clickhouse/tables";
import type { ClickHouseConfig } from "../../schemas/config";
import { EVENT_ROW_COLUMNS, REJECTED_ROW_COLUMNS } from "../../schemas/row";
import { clientSql, serverVersion } from "../../schemas/clickhouse/client";
import { clickhouseCode, clickhouseProbe } from "../loop/writer";

/** One right the sink needs, and an attempt that needs it and changes nothing. */
export interface RightCheck {
  /** The right as an operator grants it, e.g. `INSERT on db.events`. */
  right: string;
  /** Resolves when ClickHouse allows it; throws ClickHouse's refusal otherwise. */
  attempt: () => Promise<void>;
}

/** A right ClickHouse refused, with its words. */
export interface MissingRight {
  right: string;
  /** ClickHouse's message (its first line, at most 300 characters). */
  reason: string;
}

/**
 * ClickHouse codes of "this user may not": READONLY (164: readonly=1 or 2 in the profile, or an
 * insert or setting a readonly user tried), DATABASE_ACCESS_DENIED (291: allow_databases),
 * QUERY_IS_PROHIBITED (392: allow_ddl=0), SETTING_CONSTRAINT_VIOLATION (452), ACCESS_DENIED (497:
 * a missing GRANT).
 */
const REFUSED_CODES = new Set([164, 291, 392, 452, 497]);

/**
 * NO_SUCH_COLUMN_IN_TABLE (16), UNKNOWN_TABLE (60), UNKNOWN_DATABASE (81): no right is missing;
 * the columns check that follows names what setup must add.
 */
const ABSENT_CODES = new Set([16, 60, 81]);

/** A partition id no events table holds (toYYYYMM of a Date starts at 197001): dropping it changes nothing. */
const NO_SUCH_MONTH = "190001";

/** Whether ClickHouse refused an operation because of the user's rights (REFUSED_CODES). Pure. */
export function isRefusal(error: unknown): boolean {
  const code = clickhouseCode(error);
  return code !== undefined && REFUSED_CODES.has(code);
}

/**
 * Runs every check in turn; resolves with the rights refused (none: all allowed). A check that
 * fails because its table, database or a column does not exist is passed over. Throws any other failure
 * (no answer, a timeout, bad credentials): not a missing right, and worth a retry.
 */
export async function missingRights(checks: readonly RightCheck[]): Promise<MissingRight[]> {
  const missing: MissingRight[] = [];
  for (const { right, attempt } of checks) {
    try {
      await attempt();
    } catch (error) {
      if (isRefusal(error))
        missing.push({
          right,
          reason: String((error as Error).message)
            .split("\n")[0]!
            .trim()
            .slice(0, 300),
        });
      else if (!ABSENT_CODES.has(clickhouseCode(error) ?? -1)) throw error;
    }
  }
  return missing;
}

/** The sink's ClickHouse user lacks rights it needs; not retriable: someone must grant them. */
export class MissingRightsError extends Error {
  readonly retriable = false;
  constructor(
    readonly user: string,
    readonly missing: readonly MissingRight[],
  ) {
    super(
      `ClickHouse user ${JSON.stringify(user)} lacks what the sink needs: ${missing.map((m) => `${m.right} (${m.reason})`).join("; ")}. ` +
        "Grant each one (current ClickHouse: GRANT ... TO the user or its role; 18.16: a profile in users.xml with readonly=0, " +
        "and allow_ddl=1 for RETENTION_DAYS), then start the sink again",
    );
    this.name = "MissingRightsError";
  }
}

/**
 * The rights the sink uses, as checks over `client` (whose database is `config.database`):
 * SELECT on the system tables it reads (columns, settings; parts with RETENTION_DAYS), a setting
 * per query (date_time_input_format, input_format_skip_unknown_fields), INSERT on the events table and `rejected_messages` with the
 * columns it writes, and with RETENTION_DAYS on 18.16 on one server, ALTER ... DROP PARTITION on
 * the events table. `version` is the server's (`SELECT version()`). On current ClickHouse the TTL
 * does the retention, and on a cluster the drop runs ON CLUSTER through the DDL queue, so neither
 * is tried at start: the hourly step logs a refusal there. Pure (the checks run only when called).
 */
export function sinkRightChecks(client: ClickHouseClient, config: ClickHouseConfig, version: string): RightCheck[] {
  const { database, table } = config;
  const qualified = (name: string) => `${quoteIdent(database)}.${quoteIdent(name)}`;
  const read =
    (query: string, settings: Record<string, string> = {}) =>
    async () => {
      const result = await client.query({ query, format: "JSONEachRow", clickhouse_settings: settings });
      await result.json();
    };
  const retention = config.retentionDays !== undefined;
  const dropsPartitions = retention && dialectFor(version) === "legacy" && config.cluster === undefined;
  return [
    { right: "SELECT on system.columns", attempt: read("SELECT name FROM system.columns WHERE 0") },
    { right: "SELECT on system.settings", attempt: read("SELECT value FROM system.settings WHERE 0") },
    ...(retention ? [{ right: "SELECT on system.parts", attempt: read("SELECT partition_id FROM system.parts WHERE 0") }] : []),
    {
      right: "changing the settings date_time_input_format and input_format_skip_unknown_fields in a query",
      attempt: read("SELECT 1", { date_time_input_format: "best_effort", input_format_skip_unknown_fields: "0" }),
    },
    { right: `INSERT on ${database}.${table}`, attempt: clickhouseProbe(client, qualified(table), EVENT_ROW_COLUMNS) },
    {
      right: `INSERT on ${database}.${REJECTED_TABLE}`,
      attempt: clickhouseProbe(client, qualified(REJECTED_TABLE), REJECTED_ROW_COLUMNS),
    },
    ...(dropsPartitions
      ? [
          {
            right: `ALTER ... DROP PARTITION on ${database}.${table} (for RETENTION_DAYS)`,
            attempt: async () => {
              await client.command({ query: `ALTER TABLE ${qualified(table)} DROP PARTITION ${NO_SUCH_MONTH}` });
            },
          },
        ]
      : []),
  ];
}

/**
 * Checks at start that the sink's ClickHouse user may do everything the sink does
 * (sinkRightChecks); throws MissingRightsError naming each right refused, or the failure of a
 * check that was not a refusal (ClickHouse unreachable: retriable).
 */
export async function checkSinkRights(client: ClickHouseClient, config: ClickHouseConfig): Promise<void> {
  const version = await serverVersion(clientSql(client));
  const missing = await missingRights(sinkRightChecks(client, config, version));
  if (missing.length > 0) throw new MissingRightsError(config.username, missing);
}
