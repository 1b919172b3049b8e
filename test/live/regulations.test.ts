/**
 * Regulations (deploy/commands/regulations.ts and its -run and -command files) against the real local stack: a
 * SUPPRESS_WITH_DELETE regulation goes INITIALIZED -> RUNNING -> FINISHED on the admin topic (as
 * a follower and readAdmin see it), the user's events are gone under FINAL while another user's
 * stay, a later event of the user is not stored (another user's later one is), and an UNSUPPRESS
 * regulation lets the user's events in again; the same through `regulations create|list|show`; a
 * workspace-scoped status of another workspace's regulation is 404, as an absent one. Both
 * engines: the deletion statements runPrivacyRequest issues run and delete on ClickHouse 18.16
 * (the stack's server) and on current ClickHouse (chdb, with the same statements through its Sql).
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import pino from "pino";
import { AdminBook, followAdmin, readAdmin } from "../../schemas/admin/book";
import { parseAdminRecord } from "../../schemas/admin/records";
import { clientSql, createClickHouse, type Sql } from "../../schemas/clickhouse/client";
import { createKafka } from "../../schemas/kafka/client";
import type { Message } from "../../schemas/messages";
import { EVENT_ROW_COLUMNS, messageRow } from "../../schemas/row";
import { privacyConfig } from "../../deploy/setup/config";
import { migrate } from "../../deploy/setup/migrate";
import { createRegulation, regulationStatus, type RegulationsContext } from "../../deploy/commands/regulations";
import { runRegulation } from "../../deploy/commands/regulations-run";
import { regulationsCommand } from "../../deploy/commands/regulations-command";
import { LiveStack, sqlList, waitFor } from "../support/harness";
import { Chdb } from "../support/chdb";

const stack = new LiveStack();
const live = suite("regulations (live)");
const WS = "ws-test";
const log = pino({ level: "silent" });
let ctx: RegulationsContext;
let close: () => Promise<void>;

live.before(async () => {
  await stack.start();
  const config = privacyConfig({ ...stack.env, PRIVACY_SINK_WAIT_MS: "10000" });
  const client = createClickHouse(config.clickhouse);
  ctx = { kafka: createKafka(config.kafka, "regulations-test"), config, sql: clientSql(client), log, now: () => new Date() };
  close = () => client.close();
});
live.after(async () => {
  await close?.();
  await stack.stop();
});

const id = () => randomUUID();

/** Posts tracks (and an identify) of each user with the test key (ws-test); returns their messageIds by user. */
async function send(users: string[], tracks = 2, event = "Clicked"): Promise<Map<string, string[]>> {
  const batch = users.flatMap((userId) => [
    { type: "identify", userId, traits: { plan: "pro" }, messageId: id() },
    ...Array.from({ length: tracks }, (_, i) => ({ type: "track", event, userId, properties: { i }, messageId: id() })),
  ]);
  const posted = await stack.post("/v1/batch", { batch });
  assert.is(posted.status, 200, posted.text);
  return new Map(users.map((u) => [u, batch.filter((m) => m.userId === u).map((m) => m.messageId)]));
}

/** Rows of the user under FINAL in the test workspace. */
async function rowsOf(userId: string): Promise<number> {
  const [row] = await stack.select<{ n: string }>(
    `SELECT count() AS n FROM ${stack.table} FINAL WHERE workspace_id = '${WS}' AND user_id = '${userId}'`,
  );
  return Number(row!.n);
}

/** A follower of the admin topic that keeps every state each regulation was published in, in order. */
class History extends AdminBook {
  readonly seen = new Map<string, string[]>();
  override apply(key: string, value: Buffer | string | null): void {
    super.apply(key, value);
    const r = parseAdminRecord(key, value);
    if (r?.kind !== "regulation") return;
    const states = this.seen.get(r.regulateId) ?? [];
    const state = `${r.overallStatus} ${r.finished}`;
    if (states.at(-1) !== state) states.push(state); // a heartbeat repeats the state
    this.seen.set(r.regulateId, states);
  }
}

const book = () => readAdmin(ctx.kafka, ctx.config.kafka.adminTopic, "regulations-test-read", log);

live(
  "SUPPRESS_WITH_DELETE: INITIALIZED -> RUNNING -> FINISHED; the user's rows go, another's stay; later events dropped; UNSUPPRESS lifts it",
  async () => {
    const suffix = id().slice(0, 8);
    const [gone, kept] = [`reg-gone-${suffix}`, `reg-kept-${suffix}`];
    const first = await send([gone, kept]);
    await stack.rowsLanded([...first.values()].flat());
    assert.equal([await rowsOf(gone), await rowsOf(kept)], [3, 3], "both users' rows are stored first");

    const history = new History();
    const following = await followAdmin(ctx.kafka, ctx.config.kafka.adminTopic, "regulations-test-history", history, log);
    try {
      const made = await createRegulation(
        ctx,
        { regulationType: "SUPPRESS_WITH_DELETE", subjectType: "USER_ID", subjectIds: [gone] },
        WS,
        "test-operator",
      );
      assert.ok(made.ok, JSON.stringify(made));
      if (!made.ok) return;
      const { regulateId } = made.value;
      assert.is((await book()).regulations.get(regulateId)?.overallStatus, "INITIALIZED", "created, not run");

      const started = Date.now();
      const last = await runRegulation(ctx, made.value);
      const seconds = (Date.now() - started) / 1000;
      console.log(`\n  SUPPRESS_WITH_DELETE of one user reached ${last.overallStatus} on 18.16 in ${seconds.toFixed(1)} s`);
      assert.is(last.overallStatus, "FINISHED", last.error);
      assert.is(last.finished, 1);
      await waitFor("the follower saw FINISHED", async () => (history.seen.get(regulateId)?.includes("FINISHED 1") ? true : undefined));
      assert.equal(history.seen.get(regulateId), ["INITIALIZED 0", "RUNNING 0", "FINISHED 1"]);
      const read = (await book()).regulations.get(regulateId);
      assert.equal(read, last, "readAdmin: the last state");

      assert.is(await rowsOf(gone), 0, "the user's events are gone under FINAL");
      assert.is(await rowsOf(kept), 3, "another user's stay");
      const [audit] = await stack.select<{ action: string; requested_by: string }>(
        `SELECT action, requested_by FROM ${stack.database}.privacy_requests WHERE user_id = '${gone}'`,
      );
      assert.equal(audit, { action: "delete+suppress", requested_by: "test-operator" });

      await new Promise((r) => setTimeout(r, 3_000)); // the ingest and sink follow the suppression (within a second here)
      const later = await send([gone, kept], 1, "Later");
      await stack.rowsLanded(later.get(kept)!);
      await stack.marker();
      assert.equal(await stack.finalRows(later.get(gone)!), [], "the suppressed user's later events are not stored");

      const lift = await createRegulation(
        ctx,
        { regulationType: "UNSUPPRESS", subjectType: "USER_ID", subjectIds: [gone] },
        WS,
        "test-operator",
      );
      assert.ok(lift.ok);
      if (!lift.ok) return;
      assert.is((await runRegulation(ctx, lift.value)).overallStatus, "FINISHED");
      await new Promise((r) => setTimeout(r, 3_000));
      const back = await send([gone], 1, "Back");
      await stack.rowsLanded(back.get(gone)!);
      assert.is(await rowsOf(gone), 2, "stored again: the identify and the track sent after UNSUPPRESS");
    } finally {
      await following.stop();
    }
  },
);

live("regulations create|list|show: prints the regulateId, then FINISHED; the rows go; list and show read it back", async () => {
  const suffix = id().slice(0, 8);
  const [gone, alsoGone, kept] = [`cli-gone-${suffix}`, `cli-also-${suffix}`, `cli-kept-${suffix}`];
  const sent = await send([gone, alsoGone, kept]);
  await stack.rowsLanded([...sent.values()].flat());
  const run = async (...args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await regulationsCommand(args, ctx, { out: (t) => void out.push(t), err: (t) => void err.push(t) });
    return { code, out: out.join(""), err: err.join("") };
  };
  const started = Date.now();
  const created = await run("create", WS, "SUPPRESS_WITH_DELETE", gone, alsoGone, "--by", "ticket-7");
  console.log(
    `\n  regulations create of two users ended ${created.out.trim().split("\n")[1]} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  assert.is(created.code, 0, created.err);
  const [regulateId, status] = created.out.trim().split("\n");
  assert.match(regulateId!, /^reg_[0-9a-f]{16}$/);
  assert.is(status, "FINISHED 2/2");
  assert.equal([await rowsOf(gone), await rowsOf(alsoGone), await rowsOf(kept)], [0, 0, 3]);

  const listed = await run("list", WS, "--json");
  assert.is(listed.code, 0);
  const records = JSON.parse(listed.out) as { regulateId: string; overallStatus: string; createdBy: string }[];
  const mine = records.find((r) => r.regulateId === regulateId);
  assert.equal([mine?.overallStatus, mine?.createdBy], ["FINISHED", "ticket-7"]);
  assert.equal((await run("list", "ws-nobody", "--json")).out.trim(), "[]", "another workspace lists none of them");
  const shown = await run("show", regulateId!);
  assert.is(shown.code, 0);
  assert.match(shown.out, new RegExp(`subjectIds\\t${gone}, ${alsoGone}\\n`));
  assert.match(shown.out, /overallStatus\tFINISHED 2\/2\n/);
  const missing = await run("show", "reg_0000000000000000");
  assert.equal([missing.code, missing.err], [1, "regulations: no regulation reg_0000000000000000\n"]);
});

live("regulationStatus scoped to a workspace: another workspace's regulation is 404, exactly as an absent one", async () => {
  const made = await createRegulation(
    ctx,
    { regulationType: "DELETE_ONLY", subjectType: "USER_ID", subjectIds: ["someone"] },
    "ws-other",
    "test-operator",
  );
  assert.ok(made.ok);
  if (!made.ok) return;
  const read = await book();
  assert.equal(regulationStatus(read, made.value.regulateId, "ws-other"), { ok: true, value: made.value }, "its own workspace sees it");
  const foreign = regulationStatus(read, made.value.regulateId, WS);
  const absent = regulationStatus(read, "reg_ffffffffffffffff", WS);
  assert.equal(foreign, { ok: false, status: 404, error: `no regulation ${made.value.regulateId}`, field: "regulateId" });
  assert.equal(absent, { ok: false, status: 404, error: "no regulation reg_ffffffffffffffff", field: "regulateId" });
});

live("current ClickHouse (chdb): a regulation's deletion statements run there and delete the user's rows only", async () => {
  const chdb = new Chdb();
  try {
    assert.ok(Number((await chdb.start()).split(".")[0]) >= 23, `current ClickHouse, got ${chdb.version}`);
    // As test/live/engines.test.ts: chdb embeds with mutations_sync = 1; a server's default is 0, which the deletion relies on.
    const sql: Sql = {
      command: (q) => chdb.command(/^ALTER TABLE .* DELETE WHERE /s.test(q) ? `${q} SETTINGS mutations_sync = 0` : q),
      rows: (q) => chdb.rows(q),
    };
    const database = `regulations_${stack.id}`;
    const clickhouse = { ...ctx.config.clickhouse, database, table: "events", cluster: undefined };
    await migrate(sql, clickhouse);
    const suffix = id().slice(0, 8);
    const [gone, kept] = [`chdb-gone-${suffix}`, `chdb-kept-${suffix}`];
    const at = new Date(Date.now() - 60_000).toISOString();
    const line = (m: Record<string, unknown>) =>
      JSON.stringify(
        messageRow(m as unknown as Message, {
          workspaceId: WS,
          receivedAt: at,
          sentAt: null,
          originalTimestamp: at,
          timestamp: at,
          context: undefined,
        }),
      );
    const lines = [gone, kept].flatMap((userId) => [
      line({ type: "identify", userId, anonymousId: `${userId}-device`, traits: { plan: "pro" }, messageId: id() }),
      line({ type: "track", userId, event: "E", messageId: id() }),
      line({ type: "page", anonymousId: `${userId}-device`, messageId: id() }),
    ]);
    await sql.command(
      `INSERT INTO \`${database}\`.events (${EVENT_ROW_COLUMNS.join(", ")}) SETTINGS date_time_input_format = 'best_effort' FORMAT JSONEachRow\n${lines.join("\n")}`,
    );
    const count = async (where: string) =>
      Number((await sql.rows<{ n: string }>(`SELECT count() AS n FROM \`${database}\`.events FINAL WHERE ${where}`))[0]!.n);
    const of = (u: string) => `user_id = '${u}' OR anonymous_id = '${u}-device'`;
    assert.equal([await count(of(gone)), await count(of(kept))], [3, 3], "both users' rows are stored first");

    const chdbCtx: RegulationsContext = { ...ctx, sql, config: { ...ctx.config, clickhouse } };
    const made = await createRegulation(
      chdbCtx,
      { regulationType: "SUPPRESS_WITH_DELETE", subjectType: "USER_ID", subjectIds: [gone] },
      WS,
      "test-operator",
    );
    assert.ok(made.ok);
    if (!made.ok) return;
    const last = await runRegulation(chdbCtx, made.value);
    assert.is(last.overallStatus, "FINISHED", last.error);
    assert.is(await count(of(gone)), 0, "the user's rows, the linked device's anonymous page included, are gone");
    assert.is(await count(of(kept)), 3, "another user's stay");
    const users = await sql.rows<{ user_id: string }>(
      `SELECT DISTINCT user_id FROM \`${database}\`.users WHERE user_id IN (${sqlList([gone, kept])})`,
    );
    assert.equal(
      users.map((u) => u.user_id),
      [kept],
    );
    const audit = await sql.rows<{ action: string }>(`SELECT action FROM \`${database}\`.privacy_requests WHERE user_id = '${gone}'`);
    assert.equal(audit, [{ action: "delete+suppress" }]);
  } finally {
    await chdb.close();
  }
});

live.run();
