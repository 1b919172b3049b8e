/**
 * The admin CLI (deploy/commands/admin-cli.ts): its usage and refusal paths that answer before
 * Kafka is read (a stand-in Kafka whose producer() and consumer() throw), with the refusals
 * audited to a stand-in ClickHouse client as `cli:<user>`. The commands against Kafka and
 * ClickHouse are test/live/admin-api.test.ts.
 */
import pino from "pino";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { AuditRow } from "../../../../schemas/clickhouse/audit";
import { auditCli, keysCli, tokensCli, type AdminCliContext } from "../../../../deploy/commands/admin-cli";

const cli = suite("admin cli");

const never = () => {
  throw new Error("Kafka must not be used");
};

function contextOf(extra: Partial<AdminCliContext> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const rows: AuditRow[] = [];
  const c = {
    kafka: { producer: never, consumer: never, admin: never },
    adminTopic: "admin",
    clientId: "test",
    clickhouse: {
      insert: async ({ values }: { values: AuditRow[] }) => void rows.push(...values),
      query: () => {
        throw new Error("ClickHouse must not be read");
      },
    },
    database: "d",
    writeKeys: "",
    operator: "jane",
    log: pino({ level: "silent" }),
    io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) },
    ...extra,
  } as unknown as AdminCliContext;
  return { c, out, err, rows };
}

cli("keys: an unknown action or missing arguments print usage and exit 2", async () => {
  for (const args of [["bogus"], [], ["create"], ["create", "ws1", "extra"], ["revoke", "ws1"]]) {
    const { c, out, err } = contextOf();
    assert.is(await keysCli(args, c), 2, JSON.stringify(args));
    assert.match(err.join(""), /^usage: /);
    assert.equal(out, []);
  }
});

cli("keys --file without WRITE_KEYS_FILE exits 2 saying so", async () => {
  const { c, err } = contextOf();
  assert.is(await keysCli(["create", "ws", "--file"], c), 2);
  assert.match(err.join(""), "set WRITE_KEYS_FILE");
  const withFile = contextOf({ keysFile: "/nonexistent/keys" });
  assert.is(await keysCli(["bogus", "--file"], withFile.c), 2, "a bad --file action is usage, before the file is read");
  assert.match(withFile.err.join(""), /^usage: /);
});

cli("keys create refuses a bad workspaceId (exit 1), audited as cli:<user> with status 400", async () => {
  const { c, out, err, rows } = contextOf();
  assert.is(await keysCli(["create", "a/b"], c), 1);
  assert.equal(out, [], "no key printed");
  assert.match(err.join(""), "workspaceId");
  assert.equal(
    rows.map((r) => [r.actor, r.action, r.status, r.source_ip, r.workspace_id]),
    [["cli:jane", "keys.create", 400, "cli", "a/b"]],
  );
});

cli("tokens: usage exits 2; a workspace token without --workspace is refused (exit 1), audited", async () => {
  for (const args of [["bogus"], ["create"], []]) {
    const { c } = contextOf();
    assert.is(await tokensCli(args, c), 2, JSON.stringify(args));
  }
  const { c, out, err, rows } = contextOf();
  assert.is(await tokensCli(["create", "jane"], c), 1);
  assert.equal(out, []);
  assert.match(err.join(""), "workspaceId");
  assert.equal(
    rows.map((r) => [r.action, r.status, r.params]),
    [["tokens.create", 400, '{"name":"jane","scope":"workspace"}']],
  );
  const both = contextOf();
  assert.is(await tokensCli(["create", "x", "--workspace", "a b"], both.c), 1);
  assert.equal(both.rows[0]?.workspace_id, "a b");
});

cli("audit: a limit outside 1..1000 or not whole is usage (2), before ClickHouse is read", async () => {
  for (const limit of ["0", "1001", "2.5", "many"]) {
    const { c, err } = contextOf();
    assert.is(await auditCli(["--limit", limit], c), 2, limit);
    assert.match(err.join(""), /^usage: /);
  }
  const { c } = contextOf();
  try {
    await auditCli(["--limit", "5"], c);
    assert.unreachable("a good limit reads ClickHouse");
  } catch (error) {
    assert.match((error as Error).message, "must not be read");
  }
});

cli.run();
