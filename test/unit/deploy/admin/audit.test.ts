/**
 * The audit trail's rows (deploy/admin/audit.ts): secrets left out at any depth, parameters cut
 * to AUDIT_PARAMS_CHARS, the row's fields, and writeAudit with a stand-in ClickHouse client (a
 * refused row is false, never a throw). Against ClickHouse: test/live/admin-api.test.ts.
 */
import type { ClickHouseClient } from "@clickhouse/client";
import pino from "pino";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AUDIT_PARAMS_CHARS, auditParams, auditRow, writeAudit, type AuditEntry } from "../../../../deploy/admin/audit";

const audit = suite("audit rows");

const entry: AuditEntry = {
  actor: "tok_000000000001",
  scope: "workspace",
  workspaceId: "ws1",
  action: "keys.create",
  target: "0123456789abcdef",
  params: { workspaceId: "ws1", writeKey: "wk_secret" },
  status: 201,
  sourceIp: "127.0.0.1",
  userAgent: "curl/8",
};

audit("secrets are left out at any depth; other members are kept", () => {
  const params = {
    name: "n",
    secret: "s1",
    token: "sat_x",
    writeKey: "wk_y",
    body: { destination: { url: "https://x", headers: { Authorization: "Basic z" }, password: "p" }, list: [{ authorization: "a" }] },
  };
  const text = auditParams(params);
  for (const secret of ["s1", "sat_x", "wk_y", "Basic z", '"p"', '"a"']) assert.not.ok(text.includes(secret), secret);
  assert.equal(JSON.parse(text), {
    name: "n",
    secret: "(left out)",
    token: "(left out)",
    writeKey: "(left out)",
    body: { destination: { url: "https://x", headers: "(left out)", password: "(left out)" }, list: [{ authorization: "(left out)" }] },
  });
  assert.is(auditParams(undefined), "{}");
  assert.is(auditParams(null), "{}");
});

audit("parameters past AUDIT_PARAMS_CHARS are cut, marked with …", () => {
  const long = auditParams({ plan: "x".repeat(AUDIT_PARAMS_CHARS) });
  assert.is(long.length, AUDIT_PARAMS_CHARS + 1);
  assert.ok(long.endsWith("…"));
  assert.ok(long.startsWith('{"plan":"xxx'));
  const fits = auditParams({ plan: "x".repeat(AUDIT_PARAMS_CHARS - 20) });
  assert.not.ok(fits.endsWith("…"));
  assert.ok(JSON.parse(fits));
});

audit("a row holds the entry's fields, stamped now, with a new id each time", () => {
  const now = new Date("2026-03-01T12:00:00.000Z");
  const row = auditRow({ ...entry, userAgent: "u".repeat(600) }, now);
  const { audit_id, ...rest } = row;
  assert.match(audit_id, /^[0-9a-f-]{36}$/);
  assert.is.not(auditRow(entry, now).audit_id, audit_id);
  assert.equal(rest, {
    at: "2026-03-01T12:00:00.000Z",
    actor: "tok_000000000001",
    scope: "workspace",
    workspace_id: "ws1",
    action: "keys.create",
    target: "0123456789abcdef",
    params: '{"workspaceId":"ws1","writeKey":"(left out)"}',
    status: 201,
    source_ip: "127.0.0.1",
    user_agent: "u".repeat(512),
  });
});

audit("writeAudit inserts one JSONEachRow row into the quoted table; a refused insert is false", async () => {
  const inserts: { table: string; values: unknown[]; format: string }[] = [];
  const client = {
    insert: async (i: { table: string; values: unknown[]; format: string }) => void inserts.push(i),
  } as unknown as ClickHouseClient;
  assert.is(await writeAudit(client, "d", entry, pino({ level: "silent" })), true);
  assert.is(inserts.length, 1);
  assert.equal([inserts[0]!.table, inserts[0]!.format, inserts[0]!.values.length], ["`d`.`admin_audit`", "JSONEachRow", 1]);
  const refusing = {
    insert: async () => {
      throw new Error("clickhouse down");
    },
  } as unknown as ClickHouseClient;
  assert.is(await writeAudit(refusing, "d", entry, pino({ level: "silent" })), false);
});

audit.run();
