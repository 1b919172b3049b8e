/**
 * The sink's start-up check of its ClickHouse rights (sink/grants.ts): how refusals are told from
 * other failures, which rights are checked where; and live on 18.16, sinks logged in as the local
 * server's test users (deploy/local/clickhouse.sh writes them into users.xml): `sink_readonly`
 * (readonly=1) and `sink_no_ddl` (allow_ddl=0) refuse to start, naming each right they lack, in
 * one message. The probe's statement on current ClickHouse (chdb, which has no users to refuse).
 */
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from "@clickhouse/client";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { rejectedTableDdl } from "../schemas/clickhouse/tables";
import { tableDdl } from "../schemas/clickhouse/events";
import { clickhouseConfig } from "../schemas/config";
import { EVENT_ROW_COLUMNS, REJECTED_ROW_COLUMNS } from "../schemas/row";
import { isRefusal, MissingRightsError, missingRights, sinkRightChecks } from "../sink/grants";
import { clickhouseProbe, PROBE_BODY, probeQuery } from "../sink/writer";
import { Chdb } from "./chdb";
import { LiveStack, stopService, waitFor, type Service } from "./harness";

const unit = suite("rights check");

const chError = (text: string) => new Error(text);

unit("refusals are told from other failures, in 18.16's words and current ClickHouse's codes", () => {
  assert.ok(isRefusal(chError("Code: 164, e.displayText() = DB::Exception: Cannot insert into table in readonly mode")));
  assert.ok(
    isRefusal(chError("Code: 392, e.displayText() = DB::Exception: Cannot execute query. DDL queries are prohibited for the user")),
  );
  assert.ok(isRefusal(Object.assign(new Error("default: Not enough privileges."), { code: "497", type: "ACCESS_DENIED" })));
  assert.ok(isRefusal(Object.assign(new Error("Setting date_time_input_format should not be changed"), { code: "452" })));
  assert.not.ok(isRefusal(chError("Code: 60, e.displayText() = DB::Exception: Table db.events doesn't exist")));
  assert.not.ok(isRefusal(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8123"), { code: "ECONNREFUSED" })));
  assert.not.ok(isRefusal(chError("Code: 516, e.displayText() = DB::Exception: default: Authentication failed")));
});

unit("every refusal is collected; a missing table or column is passed over; any other failure is thrown", async () => {
  const refuse = (text: string) => async () => {
    throw chError(text);
  };
  const missing = await missingRights([
    { right: "A", attempt: async () => {} },
    { right: "B", attempt: refuse("Code: 164, e.displayText() = DB::Exception: Cannot insert into table in readonly mode\nmore") },
    { right: "C", attempt: refuse("Code: 60, e.displayText() = DB::Exception: Table x.y doesn't exist") },
    { right: "C2", attempt: refuse("Code: 16, e.displayText() = DB::Exception: No such column extra in table events") },
    { right: "D", attempt: refuse("Code: 497. DB::Exception: u: Not enough privileges. (ACCESS_DENIED)") },
  ]);
  assert.equal(
    missing.map((m) => m.right),
    ["B", "D"],
  );
  assert.is(missing[0]!.reason, "Code: 164, e.displayText() = DB::Exception: Cannot insert into table in readonly mode");
  const thrown = await missingRights([{ right: "E", attempt: refuse("socket hang up") }]).catch((error: Error) => error);
  assert.instance(thrown, Error);
  assert.is((thrown as Error).message, "socket hang up");
  const error = new MissingRightsError("sink", missing);
  assert.is(error.retriable, false);
  assert.match(error.message, /^ClickHouse user "sink" lacks what the sink needs: B \(Code: 164.*\); D \(Code: 497/);
});

unit("the rights checked: the partition drop only with RETENTION_DAYS on 18.16 on one server", () => {
  const client = {} as ClickHouseClient; // the checks are only built here, not run
  const config = clickhouseConfig({ CLICKHOUSE_DATABASE: "db" });
  const rights = (c: typeof config, version: string) => sinkRightChecks(client, c, version).map((r) => r.right);
  const always = [
    "SELECT on system.columns",
    "SELECT on system.settings",
    "changing the setting date_time_input_format in a query",
    "INSERT on db.events",
    "INSERT on db.rejected_messages",
  ];
  assert.equal(rights(config, "18.16.1"), always);
  const retained = { ...config, retentionDays: 30 };
  assert.equal(rights(retained, "18.16.1"), [
    ...always.slice(0, 2),
    "SELECT on system.parts",
    ...always.slice(2),
    "ALTER ... DROP PARTITION on db.events (for RETENTION_DAYS)",
  ]);
  assert.not.ok(
    rights(retained, "24.8.4.13").some((r) => r.startsWith("ALTER")),
    "current ClickHouse: the TTL drops months",
  );
  assert.not.ok(
    rights({ ...retained, cluster: "c" }, "18.16.1").some((r) => r.startsWith("ALTER")),
    "a cluster: ON CLUSTER, not tried",
  );
});

unit.run();

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
    "changing the setting date_time_input_format in a query",
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
