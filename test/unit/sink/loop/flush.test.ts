/**
 * The write-then-commit step (sink/loop/flush.ts) with fakes for ClickHouse, the DLQ and the commit:
 * what is committed, and when nothing may be.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { DeadLetter, PartitionBatch } from "../../../../sink/loop/batch";
import { Flusher, FlusherAbandonedError, type CommitOffset, type FlushDeps } from "../../../../sink/loop/flush";
import type { EventRow } from "../../../../schemas/row";

/** A partition's batch of rows `ids`, the last at `lastOffset`. */
const batch = (partition: number, ids: string[], lastOffset: number, deadLetters: DeadLetter[] = []): PartitionBatch<EventRow> => ({
  partition,
  items: ids.map((id, i) => ({
    row: { message_id: id } as EventRow,
    partition,
    offset: String(lastOffset - ids.length + 1 + i),
    key: Buffer.from(id),
    value: null,
    timestamp: 0,
  })),
  deadLetters,
  lastOffset: String(lastOffset),
  openedAt: 0,
});

/** A log of what the fakes saw, in order, and the deps built on it. */
function fakes(overrides: Partial<FlushDeps<EventRow>> = {}) {
  const log: string[] = [];
  const commits: CommitOffset[][] = [];
  const deps: FlushDeps<EventRow> = {
    topic: "events",
    insert: async (rows) => void log.push(`insert ${rows.map((r) => r.message_id).join(",")}`),
    probe: async () => {},
    sendDeadLetters: async (letters) => void log.push(`dlq ${letters.length}`),
    commit: async (offsets) => {
      log.push("commit");
      commits.push(offsets);
    },
    retry: (_what, fn) => fn(),
    ...overrides,
  };
  return { log, commits, deps };
}

test("every partition commits its last offset + 1, after the insert", async () => {
  const { log, commits, deps } = fakes();
  const result = await new Flusher(deps).write([batch(0, ["a", "b"], 11), batch(3, ["c"], 40)]);
  assert.equal(log, ["insert a,b,c", "commit"]);
  assert.equal(commits, [
    [
      { topic: "events", partition: 0, offset: "12" },
      { topic: "events", partition: 3, offset: "41" },
    ],
  ]);
  assert.is(result.inserted, 3);
  assert.ok(result.committed);
});

test("with chunk, each group is one insert retried alone; a group acknowledged is not sent again; commit after the last", async () => {
  const { log, commits, deps } = fakes();
  let failures = 1;
  deps.chunk = (items) => [items.slice(0, 2), items.slice(2)];
  deps.insert = async (rows) => {
    const ids = rows.map((r) => r.message_id).join(",");
    if (ids === "c" && failures-- > 0) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    log.push(`insert ${ids}`);
  };
  deps.retry = async (_what, fn) => {
    for (;;) {
      try {
        return await fn();
      } catch {
        log.push("retry");
      }
    }
  };
  const result = await new Flusher(deps).write([batch(0, ["a", "b"], 11), batch(3, ["c"], 40)]);
  assert.equal(log, ["insert a,b", "retry", "insert c", "commit"]);
  assert.is(commits.length, 1);
  assert.is(result.inserted, 3);
});

test("insert refused (infrastructure) -> no commit", async () => {
  const { log, commits, deps } = fakes({
    insert: async () => {
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    },
  });
  const error = await new Flusher(deps).write([batch(0, ["a"], 5)]).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.match(String(error?.message), /ECONNREFUSED/);
  assert.equal(commits, []);
  assert.not.ok(log.includes("commit"));
});

test("DLQ send refused -> no commit, though the rows were inserted", async () => {
  const letter: DeadLetter = { partition: 0, offset: "4", key: null, value: null, reason: "invalid JSON", step: "decode" };
  const { log, commits, deps } = fakes({
    sendDeadLetters: async () => {
      throw new Error("KafkaJSNumberOfRetriesExceeded");
    },
  });
  const error = await new Flusher(deps).write([batch(0, ["a"], 5, [letter])]).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(error, Error);
  assert.equal(log, ["insert a"]);
  assert.equal(commits, []);
});

test("rows ClickHouse refuses go to the DLQ with the decode dead letters, then the commit covers them all", async () => {
  const letter: DeadLetter = { partition: 1, offset: "7", key: null, value: null, reason: "invalid JSON", step: "decode" };
  const sent: DeadLetter[] = [];
  const { log, commits, deps } = fakes({
    insert: async (rows) => {
      if (rows.some((r) => r.message_id === "poison"))
        throw new Error("Code: 25, e.displayText() = DB::Exception: missing second part of surrogate pair");
      log.push(`insert ${rows.map((r) => r.message_id).join(",")}`);
    },
    sendDeadLetters: async (letters) => {
      sent.push(...letters);
      log.push(`dlq ${letters.length}`);
    },
  });
  const result = await new Flusher(deps).write([batch(1, ["a", "poison", "b"], 9, [letter])]);
  assert.equal(
    sent.map((l) => l.step),
    ["decode", "insert"],
  );
  assert.is(log[log.length - 1], "commit", "the commit comes last");
  assert.ok(log.indexOf("dlq 2") < log.indexOf("commit"));
  assert.equal(commits, [[{ topic: "events", partition: 1, offset: "10" }]]);
  assert.is(result.inserted, 2);
});

test("after a flush is abandoned, no later flush writes or commits (it would cover the abandoned offsets)", async () => {
  let down = true;
  const { log, commits, deps } = fakes({
    insert: async (rows) => {
      if (down) throw Object.assign(new Error("Timeout error."), {});
      log.push(`insert ${rows.length}`);
    },
  });
  const flusher = new Flusher(deps);
  await flusher.write([batch(0, ["a"], 5)]).catch(() => {});
  down = false; // ClickHouse is back, but offset 5 was never written
  const error = await flusher.write([batch(0, ["b"], 6)]).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(error, FlusherAbandonedError);
  assert.ok(flusher.isAbandoned);
  assert.equal(commits, []);
  assert.equal(log, []);
});

test("a failed commit is reported, not thrown: the rows are stored and will be read again", async () => {
  const { deps } = fakes({
    commit: async () => {
      throw new Error("The coordinator is not aware of this member");
    },
  });
  const result = await new Flusher(deps).write([batch(0, ["a"], 1)]);
  assert.not.ok(result.committed);
});

test.run();
