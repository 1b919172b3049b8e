/**
 * The mutations of a deletion (`users delete`, deploy/commands/privacy.ts): sent, waited for until
 * ClickHouse applied them, and the rows they match counted again (schemas/privacy/list.ts
 * deletionTargets makes the statements).
 */
import { mutationWaiter } from "../../schemas/clickhouse/mutations";
import { countOf, type Sql } from "../../schemas/clickhouse/client";
import { pollUntil } from "../../schemas/runtime/poll";
import type { DeletionTarget } from "../../schemas/privacy/deletion";

/** How often the wait for ClickHouse's mutations asks again, ms. */
const MUTATION_POLL_MS = 200;

/**
 * Rows a deletion's statements still matched after DELETION_ROUNDS rounds (18.16 reporting its
 * mutations applied too early, or rows stored meanwhile). Retriable: the request run again deletes
 * them. `before` is what each target matched before the first round.
 */
export class RowsRemainError extends Error {
  readonly retriable = true;
  constructor(
    readonly tables: string[],
    readonly before: number[],
  ) {
    super(`rows remain in ${tables.join(", ")} after ${DELETION_ROUNDS} rounds of their deletion: run it again`);
    this.name = "RowsRemainError";
  }
}

/**
 * Deletes the targets' rows: counts each (refused items by key, once), sends the mutations of
 * those with rows one after the other without waiting in between, then waits until ClickHouse has
 * applied them all (they run in the background: 18.16 has no lightweight delete and no
 * mutations_sync), on a cluster on every replica (schemas/clickhouse/mutations.ts). A part takes
 * every mutation queued after its version in its next rewrite, so the statements sent while one
 * rewrite runs share the next; waiting after each made a rewrite per statement on 18.16, and
 * linked ids, which any writeKey holder can plant, spread a deletion over many statements. A
 * mutation covers the parts that exist when it starts; rows stored later are the second pass's.
 * Once applied, the targets are counted again and those still holding rows sent again (at most
 * DELETION_ROUNDS rounds): 18.16 sometimes reports every mutation done while rows one of them
 * matched remain (the engines test saw 3-5 of 31 planted rows left in 2 of 5 runs, with
 * statements queued during a rewrite). Rows an `unbounded` target (users, identities: a user's new
 * events rebuild their row) still holds after the last round are an error only when
 * `recheckUnbounded` (the user is suppressed, so none of their new events is stored); otherwise
 * they are the rows the user's later events made. Returns the rows matched before, per target. Throws on
 * ClickHouse errors, when the mutations are not applied within `waitMs`, and RowsRemainError when
 * rows remain after the last round.
 */
export async function deleteRows(
  sql: Sql,
  database: string,
  targets: readonly DeletionTarget[],
  waitMs: number,
  cluster?: string,
  recheckUnbounded = true,
): Promise<number[]> {
  const before: number[] = [];
  const seen = new Set<string>();
  for (const target of targets) {
    if (target.keys === undefined) before.push(await countOf(sql, target.count));
    else {
      // Only rows no earlier target of the table matched: none is applied yet, so they would count twice.
      const keys = (await sql.rows<{ id: string }>(target.keys)).map((r) => `${target.table}\u0000${r.id}`);
      before.push(keys.filter((key) => !seen.has(key)).length);
      for (const key of keys) seen.add(key);
    }
  }
  let sent = targets.filter((_, i) => before[i]! > 0);
  for (let round = 1; sent.length > 0; round++) {
    await sendAndWait(sql, database, sent, waitMs, cluster);
    const remaining: DeletionTarget[] = [];
    for (const target of sent) if ((await countOf(sql, target.count)) > 0) remaining.push(target);
    if (round === DELETION_ROUNDS) {
      const left = remaining.filter((target) => recheckUnbounded || !target.unbounded);
      if (left.length > 0) throw new RowsRemainError([...new Set(left.map((t) => t.table))], before);
      break;
    }
    sent = remaining;
  }
  return before;
}

/** Rounds of a deletion's statements deleteRows sends before it reports rows that remain. */
const DELETION_ROUNDS = 3;

/**
 * Sends `targets`' mutations one after the other, each returning once queued (current ClickHouse
 * may refuse concurrent ALTERs of a replicated table, code 517; the background work starts
 * meanwhile), then waits until their tables have no mutation left to apply.
 */
async function sendAndWait(
  sql: Sql,
  database: string,
  targets: readonly DeletionTarget[],
  waitMs: number,
  cluster?: string,
): Promise<void> {
  for (const target of targets) await sql.command(target.mutation);
  const storages = [...new Set(targets.map((target) => target.storage))];
  const waiters = await Promise.all(storages.map((storage) => mutationWaiter(sql, database, storage, cluster)));
  let left: string[] = [];
  const applied = async () => ((left = (await Promise.all(waiters.map((pending) => pending()))).flat()).length === 0 ? true : undefined);
  if (!(await pollUntil(applied, { intervalMs: MUTATION_POLL_MS, timeoutMs: waitMs })))
    throw new Error(`the deletion of ${storages.join(", ")} was not applied within ${waitMs} ms (waiting: ${left.join(", ")})`);
}
