/**
 * The SQL of a user's deletion (GDPR art. 17, CCPA), pure: the ids linked to the user, and the
 * ALTER ... DELETE statements over the events, refused items, users and identities tables, their
 * id lists packed under the server's query size. The list of deleted users, and the entries that
 * ask for a deletion, are schemas/privacy/list.ts; deploy/commands/privacy.ts runs the SQL.
 */
import { IDENTITIES_TABLE, USERS_TABLE } from "../clickhouse/analyst";
import { REJECTED_TABLE } from "../clickhouse/tables";
import { DELIVERY_FAILURES_TABLE } from "../clickhouse/deliveries";
import { onCluster, quoteIdent, quoteString, storageName } from "../clickhouse/sql";
import { anonymousMatches, anonymousRefused, ownRefused } from "./refused";

/**
 * The ids linked to a user in a workspace: anonymousIds of their identities rows and of their
 * identify messages, previousIds of their aliases (one column `id`, the userId not included).
 */
export function linkedIdsQuery(database: string, table: string, workspaceId: string, userId: string): string {
  const w = quoteString(workspaceId);
  const u = quoteString(userId);
  const q = (name: string) => `${quoteIdent(database)}.${quoteIdent(name)}`;
  return `SELECT DISTINCT id FROM (
  SELECT anonymous_id AS id FROM ${q(IDENTITIES_TABLE)} WHERE workspace_id = ${w} AND user_id = ${u}
  UNION ALL
  SELECT anonymous_id AS id FROM ${q(table)} WHERE workspace_id = ${w} AND user_id = ${u}
  UNION ALL
  SELECT previous_id AS id FROM ${q(table)} WHERE workspace_id = ${w} AND user_id = ${u} AND type = 'alias'
)
WHERE id != '' AND id != ${u}`;
}

/** One table a deletion covers: its name (reads, counts) and the ALTER that deletes the rows. */
export interface DeletionTarget {
  table: string;
  /** The table the mutation alters: `table`, or on a cluster `<table>_local` on every server. */
  storage: string;
  /** `WHERE` condition of the rows (the user's, received up to the request where the table has the time). */
  where: string;
  /** Reads the rows still there: `SELECT count() AS n FROM <table> WHERE <where>`. */
  count: string;
  /**
   * Where a row can match more than one target of its table (a refused item naming one linked id
   * as anonymousId and another as previousId), the keys of the rows matched (`id` column), so
   * each is counted once: `SELECT rejection_id AS id FROM rejected_messages WHERE <where>`.
   */
  keys?: string;
  /** The mutation: `ALTER TABLE <storage> [ON CLUSTER <cluster>] DELETE WHERE <where>`. */
  mutation: string;
  /**
   * True where rows stored after the request can match too (`users` and `identities` have no
   * receive time: a user's new events rebuild their row): a count after the mutation then tells
   * nothing unless the user is suppressed, so no new event of theirs is stored.
   */
  unbounded: boolean;
}

/**
 * The most bytes of id text one deletion statement carries (its id list, or its refused-item
 * matches), so with the rest of it the statement stays under max_query_size (262,144 bytes by
 * default, both engines). Counted in bytes, not ids: an id of 200 control characters is 1,400
 * bytes in a match (`\u0001` each), and 200 such ids made a 564 KB statement ClickHouse refused.
 */
export const DELETION_IDS_BYTES = 200_000;

/** The most ids one deletion statement carries, for max_ast_elements (50,000 by default): a refused-item statement costs about 14 elements an id. */
export const IDS_PER_DELETION = 2_000;

/** `ids` in order, in groups of at most IDS_PER_DELETION whose `cost`s (bytes) add up to at most DELETION_IDS_BYTES. Pure. */
function packed(ids: readonly string[], cost: (id: string) => number): string[][] {
  const groups: string[][] = [];
  let bytes = Number.POSITIVE_INFINITY;
  for (const id of ids) {
    const c = cost(id);
    if (bytes + c > DELETION_IDS_BYTES || groups.at(-1)!.length >= IDS_PER_DELETION) {
      groups.push([]);
      bytes = 0;
    }
    groups.at(-1)!.push(id);
    bytes += c;
  }
  return groups;
}

/**
 * What `users delete` removes, by the identity rules (docs/PRIVACY.md): events received up to
 * `before` (seconds since the epoch, rounded up: 18.16 keeps received_at in seconds) whose userId
 * is the user's, or that have no userId and an anonymousId that is the userId or one of the
 * linked ids (never another user's identified rows, whatever ids were linked); the user's `users`
 * and `identities` rows (by userId only); refused items whose text begins with the userId, or,
 * without a non-empty userId first, naming it as userId or an id as anonymousId or previousId
 * (schemas/privacy/refused.ts: what else that deletes), received up to `before`; and the kept
 * delivery failures of those messages (delivery_failures: the same rule as events). The linked ids are spread
 * over statements of at most DELETION_IDS_BYTES of id text and IDS_PER_DELETION ids each, so any
 * number of them, of any characters, can be deleted.
 * Events received after the request stay unless the user is suppressed. On a `cluster` the counts
 * read the Distributed tables and the mutations alter each shard's Replicated `_local` table ON
 * CLUSTER (one replica of a shard runs it, ZooKeeper hands it to the others).
 */
export function deletionTargets(
  database: string,
  table: string,
  workspaceId: string,
  userId: string,
  linkedIds: readonly string[],
  before: number,
  cluster?: string,
): DeletionTarget[] {
  const w = `workspace_id = ${quoteString(workspaceId)}`;
  const u = quoteString(userId);
  const anonymous = [userId, ...linkedIds.filter((id) => id !== userId)];
  const received = `received_at <= toDateTime(${Math.ceil(before)})`;
  const bytes = (text: string) => Buffer.byteLength(text) + 4; // with the separator
  const chunks = packed(anonymous, (id) => bytes(quoteString(id)));
  const rejectedChunks = packed(anonymous, (id) => anonymousMatches(id).reduce((n, m) => n + bytes(m), 0));
  const byIds = (name: string) =>
    chunks.map((ids, i): [string, string] => {
      const list = `(${ids.map(quoteString).join(", ")})`;
      return [name, `${w} AND (${i === 0 ? `user_id = ${u} OR ` : ""}(user_id = '' AND anonymous_id IN ${list})) AND ${received}`];
    });
  const targets: [string, string][] = [
    ...byIds(table),
    [USERS_TABLE, `${w} AND user_id = ${u}`],
    [IDENTITIES_TABLE, `${w} AND user_id = ${u}`],
    ...rejectedChunks.map((ids, i): [string, string] => [
      REJECTED_TABLE,
      `${w} AND (${i === 0 ? `${ownRefused(userId)} OR ` : ""}${anonymousRefused(ids)}) AND ${received}`,
    ]),
    ...byIds(DELIVERY_FAILURES_TABLE),
  ];
  return targets.map(([name, where]) => {
    const storage = storageName(name, cluster);
    const from = `FROM ${quoteIdent(database)}.${quoteIdent(name)} WHERE ${where}`;
    return {
      table: name,
      storage,
      where,
      count: `SELECT count() AS n ${from}`,
      ...(name === REJECTED_TABLE ? { keys: `SELECT rejection_id AS id ${from}` } : {}),
      mutation: `ALTER TABLE ${quoteIdent(database)}.${quoteIdent(storage)}${onCluster(cluster)} DELETE WHERE ${where}`,
      unbounded: name === USERS_TABLE || name === IDENTITIES_TABLE,
    };
  });
}
