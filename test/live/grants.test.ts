/**
 * The sink's rights check against servers: live on 18.16, sinks logged in as the local server's
 * test users (deploy/local/clickhouse.sh writes them into users.xml): `sink_readonly` (readonly=1)
 * and `sink_no_ddl` (allow_ddl=0) refuse to start, naming each right they lack, in one message.
 * The probe's statement on current ClickHouse (chdb, which has no users to refuse).
 */
import { suite } from "uvu";
import { Chdb } from "../support/chdb";
import { tableDdl } from "../../schemas/clickhouse/events";
import { rejectedTableDdl } from "../../schemas/clickhouse/tables";
import { probeQuery, PROBE_BODY, clickhouseProbe } from "../../sink/loop/writer";
import { EVENT_ROW_COLUMNS, REJECTED_ROW_COLUMNS } from "../../schemas/row";
import * as assert from "uvu/assert";
import { LiveStack, type Service, waitFor, stopService } from "../support/harness";
import { type ClickHouseClient, createClient, ClickHouseLogLevel } from "@clickhouse/client";
import { clickhouseConfig } from "../../schemas/config";
import { isRefusal } from "../../sink/upkeep/grants";

const current = suite("rights check statements on current ClickHouse (chdb)");
let chdb: Chdb;
current.before(async () => {
  chdb = new Chdb();
  await chdb.start();
  for (const ddl of [...tableDdl("current", "g", "events"), ...rejectedTableDdl("current", "g")]) await chdb.command(ddl);
});
current.after(() => chdb.close());

current("the probe (an insert of no rows, with the sink's columns) is accepted and inserts nothing; a missing table fails", async () => {
  // As the HTTP interface reads it: the statement, a newline, then the request's body.
  const probe = (table: string, columns?: readonly string[]) => chdb.command(`${probeQuery(table, columns)}\n${PROBE_BODY}`);
  await probe("g.events", EVENT_ROW_COLUMNS);
  await probe("g.rejected_messages", REJECTED_ROW_COLUMNS);
  await probe("g.events");
  const [row] = await chdb.rows<{ n: string }>("SELECT count() AS n FROM g.events");
  assert.is(Number(row!.n), 0);
  const missing = await probe("g.nothing_here").then(
    () => undefined,
    (error: Error) => error.message,
  );
  assert.match(missing ?? "", /UNKNOWN_TABLE|doesn't exist/);
});

current.run();

const stack = new LiveStack();
const live = suite("rights check (live, 18.16 users.xml)");

live.before(() => stack.start());
live.after(() => stack.stop());

/** A ClickHouse client of this stack's database as `user` (no password). */
function clientAs(user: string): ClickHouseClient {
  const c = clickhouseConfig(stack.env);
  // The client's own error log would repeat every refusal the test provokes.
  return createClient({ url: c.url, username: user, password: "", database: stack.database, log: { level: ClickHouseLogLevel.OFF } });
}

/** Whether the server knows the test user (a server not started by deploy/local/clickhouse.sh may not). */
async function hasUser(user: string): Promise<boolean> {
  const client = clientAs(user);
  try {
    await (await client.query({ query: "SELECT 1", format: "JSONEachRow" })).json();
    return true;
  } catch (error) {
    console.log(
      `\n  skipped: the ClickHouse server has no user ${user} (${String(error).split("\n")[0]}); deploy/local/clickhouse.sh adds it`,
    );
    return false;
  } finally {
    await client.close();
  }
}

/** Starts a sink as `user` (its own group) and waits until it exits or consumes. */
async function sinkAs(user: string, extra: Record<string, string> = {}): Promise<{ sink: Service; started: boolean }> {
  const sink = stack.spawn("sink/main.js", { CLICKHOUSE_USER: user, SINK_GROUP_ID: `grants-${stack.id}-${user}`, ...extra });
  const started = await waitFor(
    "the sink to start or exit",
    async () => {
      if (sink.child.exitCode !== null) return false;
      return sink.output().includes('"msg":"sink consuming"') ? true : undefined;
    },
    30_000,
  );
  return { sink, started };
}

/** The message of the sink's one fatal line. */
function fatalMessage(sink: Service): string {
  const lines = sink
    .output()
    .split("\n")
    .filter((l) => l.includes('"msg":"sink failed to start"'));
  assert.is(lines.length, 1, sink.output());
  return (JSON.parse(lines[0]!) as { err: { message: string } }).err.message;
}

live("a readonly user: the sink refuses to start, naming every right it lacks in one message", async () => {
  if (!(await hasUser("sink_readonly"))) return;
  const { sink, started } = await sinkAs("sink_readonly", { RETENTION_DAYS: "30" });
  assert.not.ok(started, sink.output());
  assert.is(sink.child.exitCode, 1);
  const message = fatalMessage(sink);
  for (const right of [
    `INSERT on ${stack.database}.events`,
    `INSERT on ${stack.database}.rejected_messages`,
    "changing the settings date_time_input_format and input_format_skip_unknown_fields in a query",
    `ALTER ... DROP PARTITION on ${stack.database}.events (for RETENTION_DAYS)`,
  ]) {
    assert.ok(message.includes(right), `${right} named in: ${message}`);
  }
  assert.ok(message.startsWith('ClickHouse user "sink_readonly" lacks what the sink needs: '), message);
  assert.not.ok(message.includes("SELECT on"), "a readonly user may read");
  console.log(`\n  ${message}`);
});

live("allow_ddl=0: refused only for RETENTION_DAYS (the partition drop); without it the sink starts", async () => {
  if (!(await hasUser("sink_no_ddl"))) return;
  const refused = await sinkAs("sink_no_ddl", { RETENTION_DAYS: "30" });
  assert.not.ok(refused.started, refused.sink.output());
  const message = fatalMessage(refused.sink);
  assert.match(message, /: ALTER \.\.\. DROP PARTITION on \S+\.events \(for RETENTION_DAYS\) \(Code: 392[^;]*\)\. Grant each one/);
  const { sink, started } = await sinkAs("sink_no_ddl");
  try {
    assert.ok(started, sink.output());
  } finally {
    assert.is((await stopService(sink)).code, 0, sink.output());
  }
});

live("the insert probe needs only INSERT: it inserts nothing where allowed, and is a refusal where not", async () => {
  const table = `\`${stack.database}\`.events`;
  const count = async () => Number((await stack.select<{ n: string }>(`SELECT count() AS n FROM ${table}`))[0]!.n);
  const before = await count();
  await clickhouseProbe(stack.ch, table, ["workspace_id", "message_id"])();
  await clickhouseProbe(stack.ch, table)();
  assert.is(await count(), before);
  if (!(await hasUser("sink_readonly"))) return;
  const readonly = clientAs("sink_readonly");
  try {
    const error = await clickhouseProbe(readonly, table)().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error !== undefined && isRefusal(error), String(error));
  } finally {
    await readonly.close();
  }
});

live.run();
