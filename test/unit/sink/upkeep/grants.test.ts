/**
 * The sink's start-up check of its ClickHouse rights (sink/upkeep/grants.ts), pure: how refusals are told
 * from other failures, and which rights are checked where.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isRefusal, missingRights, MissingRightsError, sinkRightChecks } from "../../../../sink/upkeep/grants";
import { type ClickHouseClient } from "@clickhouse/client";
import { clickhouseConfig } from "../../../../schemas/config";

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
    "changing the settings date_time_input_format and input_format_skip_unknown_fields in a query",
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
