/**
 * Unit twins: each source file of ingest/, sink/, schemas/ and deploy/ has its unit test beside the
 * tree (`ingest/http/app.ts` -> `test/unit/ingest/http/app.test.ts`), or is listed in NO_TWIN with why not:
 * wiring and entry points are run by the live tests against real servers, DDL by the migration's
 * live tests, types have nothing to run, and some modules are tested through the twin of the one
 * that uses them. A new file without a twin, or a listed one that gained a twin or went away,
 * fails the test, so the list stays true.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ROOT } from "../support/paths";

/** Source files without a twin of their own, and where they are tested instead. */
const NO_TWIN: Record<string, string> = {
  "deploy/admin/extension.ts":
    "wiring of real clients (ClickHouse, the regulation runner's timer): every call of test/live/admin-api.test.ts",
  "schemas/runtime/signals.ts": "process signals and exits: every stop of test/live/stop.test.ts (the sink) and test/live/deliver.test.ts",
  "deploy/commands/plans.ts": "plans draft | apply | show | diff | check over a live broker and server: test/live/plans.test.ts",
  "deploy/usage.ts": "text: the usage the CLI prints",
  "deploy/commands/deliveries.ts": "destinations test | replay-failures against receivers on 127.0.0.1: test/live/deliver.test.ts",
  "schemas/clickhouse/deliveries.ts":
    "DDL created by migrate on both engines and read back by replay-failures: test/live/deliver.test.ts, test/live/migrate.test.ts",
  "sink/deliver/config.ts": "settings: read by every start of the delivery process in test/live/deliver.test.ts",
  "sink/deliver/main.ts": "entry point: started by test/live/deliver.test.ts",
  "sink/deliver/metrics.ts": "prom-client registries: counted by the loops of test/live/deliver.test.ts",
  "sink/deliver/post.ts": "HTTP to receivers on 127.0.0.1: test/live/deliver.test.ts",
  "sink/deliver/service.ts": "wiring: started by test/live/deliver.test.ts",
  "deploy/cli.ts": "entry point: the command table; its commands run in test/live/ops.test.ts, privacy.test.ts, materialize.test.ts",
  "deploy/commands/destinations.ts": "destinations add | list | pause | resume | remove over a live broker: test/live/destinations.test.ts",
  "deploy/commands/deletion.ts": "mutations sent to and awaited on a live server: test/live/privacy.test.ts",
  "deploy/commands/privacy.ts": "users delete | suppress | unsuppress over Kafka and ClickHouse: test/live/privacy.test.ts",
  "deploy/commands/properties.ts": "properties materialize on a live server, both engines: test/live/materialize.test.ts",
  "deploy/setup/config.ts": "settings: test/unit/schemas/config.test.ts",
  "deploy/setup/main.ts": "entry point of the setup every live stack runs first (test/support/harness.ts)",
  "deploy/setup/migrate.ts": "DDL applied to live servers: test/live/migrate.test.ts, engines.test.ts",
  "ingest/records/agent-text.ts": "through test/unit/ingest/records/enrich.test.ts (every agent of test/fixtures/user-agents.txt)",
  "ingest/http/admin.ts":
    "the admin app with the live routes: test/unit/ingest/live/routes.test.ts; its timeouts and connection cap: test/live/live-admin.test.ts",
  "ingest/http/answer.ts": "every error answered through the app: test/unit/ingest/http/app.test.ts, refusals.test.ts",
  "ingest/http/app-deps.ts": "types only",
  "ingest/http/charset.ts": "through test/unit/ingest/http/body.test.ts and app.test.ts (charsets of bodies)",
  "ingest/config.ts": "settings: test/unit/schemas/config.test.ts",
  "ingest/http/json-body.ts": "through the app: test/unit/ingest/http/app.test.ts and body.test.ts (content types, encodings, nesting)",
  "ingest/admission/limits.ts": "types and defaults: through the twins of their users (records/build, admission/senders, records/rejected)",
  "ingest/live/feed.ts": "through test/unit/ingest/live/routes.test.ts",
  "ingest/live/page.ts": "the page's text and script: opened in Chromium by test/live/live-page.test.ts",
  "ingest/live/tail.ts": "a Kafka consumer: test/live/live.test.ts",
  "ingest/live/thread.ts": "the worker's owner: through test/unit/ingest/live/routes.test.ts and test/live/live.test.ts",
  "ingest/live/worker.ts": "a worker thread over Kafka: test/live/live.test.ts, live-admin.test.ts",
  "ingest/main.ts": "entry point (config, signals, workers): started by every live stack; test/live/ingest-workers.test.ts",
  "ingest/metrics.ts": "prom-client registries: through test/unit/ingest/http/refusals.test.ts and the live /metrics checks",
  "ingest/http/parsed-size.ts": "through test/unit/ingest/admission/budget.test.ts",
  "ingest/http/post.ts":
    "every POST through the app: test/unit/ingest/http/app.test.ts, refusals.test.ts, test/unit/ingest/admission/senders.test.ts",
  "ingest/service.ts": "wiring: started by every live stack (test/support/harness.ts)",
  "ingest/http/settings-route.ts": "through the app: test/unit/ingest/http/settings.test.ts",
  "ingest/stop.ts": "the stop order against real servers: test/live/stop.test.ts",
  "ingest/http/unkeyed.ts": "through the app: test/unit/ingest/admission/networks.test.ts, app.test.ts",
  "schemas/kafka/follow.ts":
    "a consumer over Kafka: through test/unit/schemas/privacy/follower.test.ts (its stand-in consumer) and test/live/destinations.test.ts",
  "schemas/clickhouse/analyst.ts":
    "DDL: read by test/unit/schemas/clickhouse/cluster.test.ts, aggregates.test.ts; applied by test/live/migrate.test.ts",
  "schemas/clickhouse/catalog.ts":
    "DDL and queries: test/unit/schemas/clickhouse/aggregates.test.ts, test/unit/deploy/commands/catalog.test.ts",
  "schemas/clickhouse/client.ts": "the client factory and the server's answers: every live test; test/live/engines.test.ts",
  "schemas/clickhouse/events.ts": "DDL: read by test/unit/schemas/clickhouse/cluster.test.ts; applied by test/live/migrate.test.ts",
  "schemas/clickhouse/mutations.ts": "waits on a live server's mutations: test/live/privacy.test.ts, migrate.test.ts",
  "schemas/clickhouse/tables.ts": "DDL: read by test/unit/schemas/clickhouse/cluster.test.ts; applied by test/live/migrate.test.ts",
  "schemas/enrichment.ts": "types and columns: through test/unit/sink/loop/decode.test.ts",
  "schemas/envelope.ts":
    "the record's shape and headers: through test/unit/ingest/records/build.test.ts, test/unit/ingest/producer.test.ts",
  "schemas/guards.ts": "typia-generated validators: through test/unit/ingest/records/validate.test.ts, test/unit/schemas/config.test.ts",
  "schemas/kafka/client.ts": "the Kafka client factory: every live test connects through it",
  "schemas/kafka/record-batch.ts": "byte for byte with kafkajs through test/unit/schemas/kafka/produce-encoding.test.ts",
  "schemas/messages.ts": "types: through test/unit/ingest/records/validate.test.ts, test/unit/ingest/http/routes.test.ts",
  "schemas/privacy/ids.ts": "through test/unit/schemas/privacy/list.test.ts (rowIds, itemIds)",
  "schemas/privacy/parts.ts": "through test/unit/schemas/privacy/list.test.ts",
  "schemas/row-extra.ts": "the extra column: through test/unit/ingest/records/build.test.ts, test/unit/sink/loop/decode.test.ts",
  "schemas/row.ts": "the row's columns: through test/unit/sink/loop/decode.test.ts, writer.test.ts, test/unit/ingest/records/build.test.ts",
  "sink/config.ts": "settings: test/unit/schemas/config.test.ts",
  "sink/loop/crash.ts": "the fault hook (SINK_CRASH_AT): test/live/pipeline.test.ts kills the sink with it",
  "sink/main.ts": "entry point (config, signals): started by every live stack",
  "sink/upkeep/maintenance.ts": "the schedule of retention.ts's steps on a live server: test/live/retention.test.ts",
  "sink/metrics.ts": "prom-client registries: through test/unit/sink/loop/consumer.test.ts and the live /metrics checks",
  "sink/monitors/start.ts": "timers over Kafka and ClickHouse: /metrics in test/live/ops.test.ts, dlq.test.ts",
  "sink/service.ts": "wiring: started by every live stack (test/support/harness.ts)",
};

const sources = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
  .split("\n")
  .filter((f) => /^(ingest|sink|schemas|deploy)\/.*\.ts$/.test(f));

/** A source file's unit twin. */
const twinOf = (file: string) => join("test", "unit", file.replace(/\.ts$/, ".test.ts"));

test("every source file has its unit twin, or is listed with where it is tested instead", () => {
  const missing = sources.filter((f) => !existsSync(join(ROOT, twinOf(f))) && NO_TWIN[f] === undefined);
  assert.equal(missing, [], `no twin and not in NO_TWIN:\n${missing.join("\n")}`);
});

test("NO_TWIN lists only files that exist and have no twin", () => {
  const stale = Object.keys(NO_TWIN).filter((f) => !sources.includes(f) || existsSync(join(ROOT, twinOf(f))));
  assert.equal(stale, [], `take off NO_TWIN:\n${stale.join("\n")}`);
});

test.run();
