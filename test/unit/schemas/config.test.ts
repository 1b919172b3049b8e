import { createServer } from "node:http";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { DEFAULT_RETENTION_MS, privacyConfig, setupConfig } from "../../../deploy/setup/config";
import { ingestConfig, isLoopback } from "../../../ingest/config";
import { sinkConfig } from "../../../sink/config";

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
    refusal(() => ingestConfig({ RATE_LIMIT_BYTES_BURST: "100000" })),
    /RATE_LIMIT_BYTES_BURST \(100000\) is below MAX_REQUEST_BYTES \(512000\)/,
  );
  assert.is(
    refusal(() => ingestConfig({ RATE_LIMIT_BYTES_BURST: "1", RATE_LIMIT_BYTES_PER_SECOND: "0" })),
    "",
    "bytes bucket off",
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
    /PRODUCE_TIMEOUT_MS \(40000\) must be below INGEST_REQUEST_TIMEOUT_MS \(30000\)/,
  );
  assert.match(
    refusal(() => ingestConfig({ INGEST_KEEPALIVE_TIMEOUT_MS: "20000" })),
    /INGEST_KEEPALIVE_TIMEOUT_MS \(20000\) must be below INGEST_HEADERS_TIMEOUT_MS \(10000\)/,
  );
  assert.match(
    refusal(() => sinkConfig({ SINK_RETRY_MIN_MS: "5000", SINK_RETRY_MAX_MS: "100" })),
    /SINK_RETRY_MIN_MS/,
  );
});

test("a headers timeout above the request timeout is refused at start, naming both values (production's 66000 over 30000)", () => {
  assert.match(
    refusal(() => ingestConfig({ INGEST_KEEPALIVE_TIMEOUT_MS: "65000", INGEST_HEADERS_TIMEOUT_MS: "66000" })),
    /^INGEST_HEADERS_TIMEOUT_MS \(66000\) is above INGEST_REQUEST_TIMEOUT_MS \(30000\)/,
  );
  assert.is(
    refusal(() =>
      ingestConfig({ INGEST_KEEPALIVE_TIMEOUT_MS: "65000", INGEST_HEADERS_TIMEOUT_MS: "66000", INGEST_REQUEST_TIMEOUT_MS: "70000" }),
    ),
    "",
  );
});

test("the typed config refuses exactly the timeouts node:http's createServer refuses", () => {
  for (const [headers, request] of [
    [66_000, 30_000],
    [30_001, 30_000],
    [30_000, 30_000],
    [10_000, 30_000],
    [2_000, 1_000],
  ] as const) {
    let nodeRefuses = false;
    try {
      createServer({ headersTimeout: headers, requestTimeout: request });
    } catch {
      nodeRefuses = true;
    }
    const ours = refusal(() =>
      ingestConfig({
        INGEST_HEADERS_TIMEOUT_MS: String(headers),
        INGEST_REQUEST_TIMEOUT_MS: String(request),
        INGEST_KEEPALIVE_TIMEOUT_MS: "500",
        PRODUCE_TIMEOUT_MS: "900",
      }),
    );
    assert.is(ours !== "", nodeRefuses, `headers ${headers}, request ${request}: ${ours}`);
  }
});

test("PRIVACY_SINK_WAIT_MS is a typed setting: 60 s by default, 0 allowed, a typo refused at start", () => {
  assert.is(privacyConfig({}).sinkWaitMs, 60_000);
  assert.is(privacyConfig({ PRIVACY_SINK_WAIT_MS: "3000" }).sinkWaitMs, 3_000);
  assert.is(privacyConfig({ PRIVACY_SINK_WAIT_MS: "0" }).sinkWaitMs, 0);
  for (const typo of ["60s", "1e3", "-5", "-1", "3000ms"]) {
    assert.match(
      refusal(() => privacyConfig({ PRIVACY_SINK_WAIT_MS: typo })),
      /sinkWaitMs/,
      typo,
    );
  }
});

test("RETENTION_DAYS: at most 36,500 days (100 years), so a TTL's date stays before 2149; SINK_RETENTION_JITTER_MS at most an hour", () => {
  assert.is(sinkConfig({ RETENTION_DAYS: "36500" }).clickhouse.retentionDays, 36_500);
  assert.match(
    refusal(() => sinkConfig({ RETENTION_DAYS: "36501" })),
    /retentionDays/,
  );
  assert.match(
    refusal(() => setupConfig({ RETENTION_DAYS: "100000" })),
    /retentionDays/,
  );
  assert.is(sinkConfig({ SINK_RETENTION_JITTER_MS: "0" }).retentionJitterMs, 0);
  assert.is(sinkConfig({}).retentionJitterMs, 600_000);
  assert.match(
    refusal(() => sinkConfig({ SINK_RETENTION_JITTER_MS: "3600001" })),
    /retentionJitterMs/,
  );
});

test("topic retention: unset is absent (30 days on creation), -1 is for ever, less than an hour or a typo is refused", () => {
  assert.is(DEFAULT_RETENTION_MS, 2_592_000_000);
  const unset = setupConfig({ KAFKA_EVENTS_RETENTION_MS: " " });
  assert.is("eventsRetentionMs" in unset || "rejectedRetentionMs" in unset || "dlqRetentionMs" in unset, false);
  const set = setupConfig({
    KAFKA_EVENTS_RETENTION_MS: "604800000",
    KAFKA_REJECTED_RETENTION_MS: "-1",
    KAFKA_DLQ_RETENTION_MS: "7776000000", // 90 days: above uint32
  });
  assert.equal([set.eventsRetentionMs, set.rejectedRetentionMs, set.dlqRetentionMs], [604_800_000, -1, 7_776_000_000]);
  for (const [name, field] of [
    ["KAFKA_EVENTS_RETENTION_MS", "eventsRetentionMs"],
    ["KAFKA_REJECTED_RETENTION_MS", "rejectedRetentionMs"],
    ["KAFKA_DLQ_RETENTION_MS", "dlqRetentionMs"],
  ]) {
    for (const bad of ["30", "0", "-2", "30d", "7 days", "1.5e9"]) {
      assert.match(
        refusal(() => setupConfig({ [name]: bad })),
        field,
        `${name}=${bad}`,
      );
    }
  }
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

test("the admin port: 127.0.0.1 whatever INGEST_HOST says; beyond loopback a published or weak ADMIN_TOKEN stops the start", () => {
  assert.is(ingestConfig({ INGEST_HOST: "0.0.0.0" }).metricsHost, "127.0.0.1");
  assert.is(
    ingestConfig({ INGEST_HOST: "0.0.0.0", ADMIN_TOKEN: "dev-admin-token-change-me" }).adminToken,
    "dev-admin-token-change-me",
    "loopback: the development token is fine",
  );
  for (const host of ["127.0.0.1", "127.1.2.3", "::1", "localhost", "[::1]", "::ffff:127.0.0.1"]) assert.ok(isLoopback(host), host);
  for (const host of ["0.0.0.0", "::", "192.0.2.2", "10.0.0.1", "ingest.internal", "::ffff:10.0.0.1"])
    assert.not.ok(isLoopback(host), host);
  const beyond = (token: string) => refusal(() => ingestConfig({ INGEST_METRICS_HOST: "0.0.0.0", ADMIN_TOKEN: token }));
  assert.match(
    beyond("dev-admin-token-change-me"),
    /^ADMIN_TOKEN is a published development token, and the admin port listens beyond loopback \(INGEST_METRICS_HOST=0\.0\.0\.0\)/,
  );
  assert.match(beyond("replace-this-development-admin-token"), /published development token/);
  assert.match(beyond("0123456789abcdef0123"), /ADMIN_TOKEN has 20 characters, fewer than 24/);
  assert.match(beyond("abababababababababababababab"), /fewer than 8 distinct characters/);
  assert.is(beyond("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c"), "", "openssl rand -hex 24");
  assert.is(
    refusal(() => ingestConfig({ INGEST_METRICS_HOST: "0.0.0.0" })),
    "",
    "no token: the live view is off, /metrics is served",
  );
  assert.match(
    refusal(() => ingestConfig({ INGEST_METRICS_MAX_CONNECTIONS: "12" })),
    /INGEST_METRICS_MAX_CONNECTIONS \(12\) must exceed LIVE_MAX_VIEWERS \+ LIVE_MAX_RECENT \(12\)/,
  );
});

test.run();
