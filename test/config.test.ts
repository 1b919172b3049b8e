import { test } from "uvu";
import * as assert from "uvu/assert";
import { ingestConfig, sinkConfig } from "../schemas/config";

const refusal = (parse: () => unknown): string => {
  try {
    parse();
    return "";
  } catch (error) {
    return (error as Error).message;
  }
};

test("defaults parse, and settings that contradict each other are refused at start, naming both", () => {
  assert.is(
    refusal(() => ingestConfig({})),
    "",
  );
  assert.is(
    refusal(() => sinkConfig({})),
    "",
  );
  assert.match(
    refusal(() => ingestConfig({ RATE_LIMIT_BURST: "100" })),
    /RATE_LIMIT_BURST \(100\) is below MAX_BATCH_MESSAGES \(2500\)/,
  );
  assert.is(
    refusal(() => ingestConfig({ RATE_LIMIT_BURST: "100", RATE_LIMIT_PER_SECOND: "0" })),
    "",
    "no rate limit, no contradiction",
  );
  assert.match(
    refusal(() => ingestConfig({ MAX_MESSAGE_BYTES: "600000" })),
    /MAX_MESSAGE_BYTES .* MAX_REQUEST_BYTES/,
  );
  assert.match(
    refusal(() => ingestConfig({ INGEST_MAX_INFLIGHT_BYTES: "1000" })),
    /INGEST_MAX_INFLIGHT_BYTES/,
  );
  assert.match(
    refusal(() => ingestConfig({ PRODUCE_TIMEOUT_MS: "40000" })),
    /PRODUCE_TIMEOUT_MS must be below INGEST_REQUEST_TIMEOUT_MS/,
  );
  assert.match(
    refusal(() => ingestConfig({ INGEST_KEEPALIVE_TIMEOUT_MS: "20000" })),
    /INGEST_KEEPALIVE_TIMEOUT_MS/,
  );
  assert.match(
    refusal(() => sinkConfig({ SINK_RETRY_MIN_MS: "5000", SINK_RETRY_MAX_MS: "100" })),
    /SINK_RETRY_MIN_MS/,
  );
});

test("CLICKHOUSE_TABLE may not be one of the analyst views or rejected_messages", () => {
  for (const table of ["users", "tracks", "rejected_messages"])
    assert.match(
      refusal(() => sinkConfig({ CLICKHOUSE_TABLE: table })),
      table,
    );
  assert.is(
    refusal(() => sinkConfig({ CLICKHOUSE_TABLE: "events_v2" })),
    "",
  );
});

test("CLICKHOUSE_CLUSTER chooses cluster mode; there CLICKHOUSE_TABLE may not be a _local table's name either", () => {
  assert.is(sinkConfig({}).clickhouse.cluster, undefined);
  assert.is(sinkConfig({ CLICKHOUSE_CLUSTER: "pipeline" }).clickhouse.cluster, "pipeline");
  assert.match(
    refusal(() => sinkConfig({ CLICKHOUSE_CLUSTER: "pipeline", CLICKHOUSE_TABLE: "users_local" })),
    "users_local",
  );
  assert.match(
    refusal(() => sinkConfig({ CLICKHOUSE_CLUSTER: "pipeline", CLICKHOUSE_TABLE: "rejected_messages_local" })),
    "choose another",
  );
  assert.is(
    refusal(() => sinkConfig({ CLICKHOUSE_TABLE: "users_local" })),
    "",
    "one server has no _local tables",
  );
});

test("SINK_BATCH_RECORDS counts rows and dead letters; SINK_BATCH_ROWS, its former name, still works", () => {
  assert.is(sinkConfig({}).batchRecords, 10_000);
  assert.is(sinkConfig({ SINK_BATCH_ROWS: "500" }).batchRecords, 500);
  assert.is(sinkConfig({ SINK_BATCH_RECORDS: "700", SINK_BATCH_ROWS: "500" }).batchRecords, 700);
});

test("TRUST_PROXY is a count of trusted hops; true is one, unset none", () => {
  assert.is(ingestConfig({}).trustedProxies, 0);
  assert.is(ingestConfig({ TRUST_PROXY: "true" }).trustedProxies, 1);
  assert.is(ingestConfig({ TRUST_PROXY: "2" }).trustedProxies, 2);
  assert.match(
    refusal(() => ingestConfig({ TRUST_PROXY: "yes" })),
    /trustedProxies/,
  );
});

test.run();
