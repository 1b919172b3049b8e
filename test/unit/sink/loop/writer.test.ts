import { test } from "uvu";
import * as assert from "uvu/assert";
import type { BatchItem } from "../../../../sink/loop/batch";
import { createClient, type ClickHouseClient } from "@clickhouse/client";
import { Readable } from "node:stream";
import {
  classifyInsertError,
  clickhouseInsert,
  clickhouseInsertLines,
  clickhouseProbe,
  insertOrBisect,
  insertSettings,
  isDataError,
} from "../../../../sink/loop/writer";
import type { EventRow } from "../../../../schemas/row";

const items = (ids: string[]): BatchItem<EventRow>[] =>
  ids.map((id, i) => ({
    row: { message_id: id } as EventRow,
    partition: 0,
    offset: String(i),
    key: Buffer.from(id),
    value: Buffer.from(`v-${id}`),
    timestamp: 0,
  }));

test("ClickHouse data errors are not retriable, in the current and the 18.16 message forms", () => {
  assert.ok(isDataError(Object.assign(new Error("Cannot parse input"), { code: "27" })));
  assert.ok(isDataError(new Error("Code: 41, e.displayText() = DB::Exception: Cannot parse datetime")));
  assert.not.ok(isDataError(new Error("connect ECONNREFUSED 127.0.0.1:8123")));
  assert.not.ok(isDataError(Object.assign(new Error("Memory limit exceeded"), { code: "241" })));
});

const healthy = async () => {};
const insertOrSplit = (insert: (rows: EventRow[]) => Promise<void>, batch: BatchItem<EventRow>[]) => insertOrBisect(insert, batch, healthy);

test("failures are sorted: no answer or an infrastructure code is infra, other codes data or unknown", () => {
  assert.is(classifyInsertError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })), "infra");
  assert.is(classifyInsertError(new Error("Timeout error.")), "infra");
  assert.is(classifyInsertError(Object.assign(new Error("Table default.events doesn't exist"), { code: "60" })), "infra");
  assert.is(classifyInsertError(new Error("Code: 252, e.displayText() = DB::Exception: Too many parts")), "infra");
  // The same code over max_partitions_per_insert_block (current ClickHouse's text): a smaller slice is accepted.
  assert.is(
    classifyInsertError(
      Object.assign(
        new Error(
          "Too many partitions for single INSERT block (more than 100). The limit is controlled by 'max_partitions_per_insert_block' setting.",
        ),
        { code: "252" },
      ),
    ),
    "data",
  );
  assert.is(classifyInsertError(new Error("Code: 279, e.displayText() = DB::NetException: All connection tries failed. Log:")), "infra");
  assert.is(classifyInsertError(new Error("Code: 25, e.displayText() = DB::Exception: missing second part of surrogate pair")), "data");
  assert.is(classifyInsertError(Object.assign(new Error("something new"), { code: "4242" })), "unknown");
});

test("write-path and transport codes are infra: the zero-row probe writes no part and passes while they fail (review)", () => {
  // CANNOT_WRITE_TO_FILE_DESCRIPTOR, CANNOT_OPEN_FILE, CANNOT_READ_FROM_SOCKET, CANNOT_WRITE_TO_SOCKET, CANNOT_FSYNC,
  // CANNOT_WRITE_TO_FILE, DEADLOCK_AVOIDED, NO_REMOTE_SHARD_AVAILABLE, TABLE_IS_BEING_RESTARTED
  for (const code of [75, 76, 95, 96, 204, 294, 473, 519, 733]) {
    assert.is(classifyInsertError(Object.assign(new Error(`Code: ${code}. DB::Exception: x`), { code: String(code) })), "infra", `${code}`);
    assert.is(classifyInsertError(new Error(`Code: ${code}, e.displayText() = DB::Exception: x, e.what() = DB::Exception`)), "infra");
  }
});

test("code 32 is infra when a connection was read (a shard gone mid-insert), data when a JSONEachRow field ends early", () => {
  // Connection::receivePacket's addition, 18.16 and current message forms.
  const shard18 =
    "Code: 32, e.displayText() = DB::Exception: Attempt to read after eof: while receiving packet from ch2:9000, e.what() = DB::Exception";
  assert.is(classifyInsertError(new Error(shard18)), "infra");
  const shardNow = "Attempt to read after eof: while receiving packet from ch2:9000. (ATTEMPT_TO_READ_AFTER_EOF)";
  assert.is(classifyInsertError(Object.assign(new Error(shardNow), { code: "32" })), "infra");
  // A truncated row (`{"a":"x","n":`), as 18.16 and current ClickHouse answer it.
  const field18 =
    "Code: 32, e.displayText() = DB::Exception: Attempt to read after eof: (while read the value of key n), e.what() = DB::Exception";
  assert.is(classifyInsertError(new Error(field18)), "data");
  const fieldNow =
    "Attempt to read after eof: (while reading the value of key n): While executing ParallelParsingBlockInputFormat. (ATTEMPT_TO_READ_AFTER_EOF)";
  assert.is(classifyInsertError(Object.assign(new Error(fieldNow), { code: "32" })), "data");
  // The phrase later in the text (a row's bytes quoted) does not count.
  const quoted = "Attempt to read after eof: (at row 1) before: Attempt to read after eof: while receiving packet from x";
  assert.is(classifyInsertError(Object.assign(new Error(quoted), { code: "32" })), "data");
});

test("a refusal with any unknown code is narrowed to its rows once the probe shows the table takes inserts", async () => {
  const inserted: string[] = [];
  let probes = 0;
  const insert = async (rows: EventRow[]) => {
    if (rows.some((r) => r.message_id.startsWith("bad")))
      throw new Error("Code: 4242, e.displayText() = DB::Exception: a reason nobody listed");
    inserted.push(...rows.map((r) => r.message_id));
  };
  const letters = await insertOrBisect(insert, items(["a", "b", "bad1", "c"]), async () => void probes++);
  assert.equal(inserted.sort(), ["a", "b", "c"]);
  assert.equal(
    letters.map((l) => l.key?.toString()),
    ["bad1"],
  );
  assert.is(probes, 1, "one probe, for the lone refused row");
});

test("a lone row refused with an unknown code while the probe fails too is thrown (retried), not dead-lettered", async () => {
  const insert = async () => {
    throw new Error("Code: 4242, e.displayText() = DB::Exception: the table is broken");
  };
  const probe = async () => {
    throw new Error("Code: 4242, e.displayText() = DB::Exception: the table is broken");
  };
  const error = await insertOrBisect(insert, items(["a", "b"]), probe).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.match(String(error?.message), /the table is broken/);
});

test("refused rows are isolated and dead-lettered; the rest are inserted", async () => {
  const inserted: string[] = [];
  const insert = async (rows: EventRow[]) => {
    if (rows.some((r) => r.message_id.startsWith("bad"))) throw new Error("Code: 27, e.displayText() = DB::Exception: Cannot parse input");
    inserted.push(...rows.map((r) => r.message_id));
  };
  const letters = await insertOrSplit(insert, items(["a", "bad1", "b", "c", "bad2", "d", "e"]));
  assert.equal(inserted.sort(), ["a", "b", "c", "d", "e"]);
  assert.equal(
    letters.map((l) => l.key?.toString()),
    ["bad1", "bad2"],
  );
  assert.equal(
    letters.map((l) => l.value?.toString()),
    ["v-bad1", "v-bad2"],
  );
  assert.ok(letters.every((l) => l.step === "insert" && l.reason.includes("Cannot parse")));
});

test("a retriable insert error is thrown, not dead-lettered", async () => {
  const insert = async () => {
    throw new Error("connect ECONNREFUSED");
  };
  const error = await insertOrSplit(insert, items(["a"])).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(error, Error);
});

test("once the stop has aborted, an insert or probe is not sent, and its error is infra: retried whole, never dead-lettered", async () => {
  // Nothing listens on port 9: a request that went out would fail with ECONNREFUSED instead.
  const client = createClient({ url: "http://127.0.0.1:9" });
  const stopped = new AbortController();
  stopped.abort();
  const insert = clickhouseInsertLines(client, "events", ["message_id"]);
  const refusals = await Promise.all([
    insert([Buffer.from('{"message_id":"m"}')], stopped.signal).then(
      () => undefined,
      (error: unknown) => error,
    ),
    clickhouseProbe(
      client,
      "events",
    )(stopped.signal).then(
      () => undefined,
      (error: unknown) => error,
    ),
  ]);
  for (const error of refusals) {
    assert.match(String((error as Error | undefined)?.message), "the sink is stopping");
    assert.is(classifyInsertError(error), "infra");
  }
  await client.close();
});

test("the sink's inserts refuse a key that names no column (current ClickHouse would skip it: message_id '', rows collapse)", async () => {
  const sent: Record<string, unknown>[] = [];
  const client = {
    exec: async (params: { clickhouse_settings?: Record<string, unknown> }) => {
      sent.push(params.clickhouse_settings ?? {});
      return { stream: Readable.from([]) };
    },
  } as unknown as ClickHouseClient;
  await clickhouseInsertLines(client, "events", ["message_id"])([Buffer.from('{"message_id":"m"}')]);
  assert.is(sent[0]?.input_format_skip_unknown_fields, 0);
});

test("insertSettings: async_insert 0 where the server knows it (a profile's async_insert=1 would answer before parsing), else nothing", async () => {
  assert.equal(insertSettings(["async_insert"]), { async_insert: 0 });
  assert.equal(insertSettings([]), {}, "18.16 refuses a setting it does not know");
  // Both of the sink's inserts carry them.
  const sent: Record<string, unknown>[] = [];
  const client = {
    exec: async (params: { clickhouse_settings?: Record<string, unknown> }) => {
      sent.push(params.clickhouse_settings ?? {});
      return { stream: Readable.from([]) };
    },
    insert: async (params: { clickhouse_settings?: Record<string, unknown> }) => void sent.push(params.clickhouse_settings ?? {}),
  } as unknown as ClickHouseClient;
  const settings = insertSettings(["async_insert"]);
  await clickhouseInsertLines(client, "events", ["message_id"], settings)([Buffer.from('{"message_id":"m"}')]);
  await clickhouseInsert(client, "rejected_messages", settings)([]);
  assert.equal(
    sent.map((s) => s.async_insert),
    [0, 0],
  );
});

test.run();
