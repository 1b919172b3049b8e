/**
 * `cli regulations ...` (deploy/commands/regulations-command.ts) without servers: usage errors
 * exit 2 before anything is read or written, `create` prints the regulateId then the final status
 * and exits 0 on FINISHED and 1 on FAILED, a refused body exits 2 naming its field, and the text
 * of `list` and `show`. `list` and `show` against a real admin topic: test/live/regulations.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { Kafka } from "kafkajs";
import type { RegulationRecord } from "../../../../schemas/admin/records";
import { privacyConfig } from "../../../../deploy/setup/config";
import type { PrivacyRequest } from "../../../../deploy/commands/privacy";
import { regulationOf, type RegulationsContext } from "../../../../deploy/commands/regulations";
import { listText, regulationsCommand, showText, statusLine } from "../../../../deploy/commands/regulations-command";
import { regulationsContext, runRequestInto } from "../../../support/admin-fixtures";

/** A context whose admin topic is an array and whose Kafka, if reached, fails the test. */
function world(run: (r: PrivacyRequest) => Promise<void> = async () => {}, env: Record<string, string> = { USER: "tester" }) {
  const published: RegulationRecord[] = [];
  const requests: PrivacyRequest[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const ctx = regulationsContext(published, {
    kafka: new Proxy({} as Kafka, {
      get: () => {
        throw new Error("Kafka reached");
      },
    }),
    config: privacyConfig(env),
    run: { retryPauseMs: 1 },
    runRequest: runRequestInto(requests, run),
  });
  const io = { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) };
  return { ctx, io, published, requests, out, err };
}

test("create: prints the regulateId, runs it here, prints FINISHED, exits 0; --by is the requester", async () => {
  const w = world();
  const code = await regulationsCommand(["create", "ws1", "SUPPRESS_WITH_DELETE", "u1", "u2", "--by", "ticket-42"], w.ctx, w.io);
  assert.is(code, 0, w.err.join(""));
  const [id, status] = w.out;
  assert.match(id!, /^reg_[0-9a-f]{16}\n$/);
  assert.is(status, "FINISHED 2/2\n");
  assert.equal(
    w.published.map((r) => [r.regulateId, r.overallStatus]),
    [
      [id!.trim(), "INITIALIZED"],
      [id!.trim(), "RUNNING"],
      [id!.trim(), "RUNNING"],
      [id!.trim(), "FINISHED"],
    ],
  );
  assert.equal(
    w.requests.map((r) => [r.userId, r.action, r.suppress, r.requestedBy]),
    [
      ["u1", "delete", true, "ticket-42"],
      ["u2", "delete", true, "ticket-42"],
    ],
  );
});

test("create without --by records the login as cli:<user>; with no login it is a usage error", async () => {
  const w = world();
  assert.is(await regulationsCommand(["create", "ws1", "SUPPRESS_ONLY", "u1"], w.ctx, w.io), 0);
  assert.is(w.published[0]!.createdBy, "cli:tester");
  const none = world(undefined, {});
  none.ctx.config = { ...none.ctx.config, operator: undefined } as RegulationsContext["config"];
  assert.is(await regulationsCommand(["create", "ws1", "SUPPRESS_ONLY", "u1"], none.ctx, none.io), 2);
  assert.match(none.err.join(""), /--by <who> is required/);
  assert.is(none.published.length, 0);
});

test("create: a failing subject exits 1 after FAILED, with the reason on stderr", async () => {
  const w = world(async () => {
    throw new Error("ws1/u1 has no suppression to lift");
  });
  assert.is(await regulationsCommand(["create", "ws1", "UNSUPPRESS", "u1", "--by", "me"], w.ctx, w.io), 1);
  assert.is(w.out[1], "FAILED 0/1\n");
  assert.match(w.err.join(""), /u1: Error: ws1\/u1 has no suppression to lift/);
});

test("usage errors exit 2 and touch nothing: refused type, missing parts, unknown flags and actions, bad filters", async () => {
  const cases: [string[], RegExp][] = [
    [["create", "ws1", "DELETE_INTERNAL", "u1", "--by", "me"], /regulationType: regulationType DELETE_INTERNAL is not supported/],
    [["create", "ws1", "OBJECT", "u1", "--by", "me"], /regulationType: .*one of/],
    [["create", "ws 1", "DELETE_ONLY", "u1", "--by", "me"], /workspaceId: /],
    [["create", "ws1", "DELETE_ONLY"], /create <workspaceId> <TYPE> <userId>/],
    [["create", "ws1", "DELETE_ONLY", "u1", "--force"], /Unknown option '--force'/],
    [["list", "ws1", "ws2"], /at most one workspaceId/],
    [["list", "--status", "DONE"], /--status "DONE": one of INITIALIZED/],
    [["list", "--type", "DELETE_ONLY,OBJECT"], /--type "OBJECT": one of/],
    [["show"], /show <regulateId>/],
    [["purge"], /unknown action "purge"/],
    [[], /unknown action ""/],
  ];
  for (const [args, error] of cases) {
    const w = world();
    assert.is(await regulationsCommand(args, w.ctx, w.io), 2, args.join(" "));
    assert.match(w.err.join(""), error, args.join(" "));
    assert.match(w.err.join(""), /regulations create <workspaceId>/, "the usage lines follow");
    assert.equal(w.published, [], args.join(" "));
    assert.equal(w.requests, []);
  }
});

const record = (patch: Partial<RegulationRecord> = {}): RegulationRecord => {
  const made = regulationOf(
    { regulationType: "DELETE_ONLY", subjectType: "USER_ID", subjectIds: Array.from({ length: 25 }, (_, i) => `u${i}`) },
    "ws1",
    "cli:jane",
    new Date("2026-03-01T12:00:00.000Z"),
  );
  if (!made.ok) throw new Error(made.error);
  return { ...made.value, regulateId: "reg_00000000000000aa", ...patch };
};

test("list and show text: a header and a line each; show cuts long subject lists and shows the error only when there is one", () => {
  const r = record({ overallStatus: "RUNNING", finished: 3 });
  assert.is(statusLine(r), "RUNNING 3/25");
  assert.is(
    listText([r]),
    "regulateId\tworkspaceId\tregulationType\tstatus\tcreatedAt\tcreatedBy\n" +
      "reg_00000000000000aa\tws1\tDELETE_ONLY\tRUNNING 3/25\t2026-03-01T12:00:00.000Z\tcli:jane\n",
  );
  const shown = showText(r);
  assert.match(shown, /^regulateId\treg_00000000000000aa\n/);
  assert.match(shown, /\nsubjectIds\tu0, u1, .*, u19 … \(5 more; --json lists all\)\n/);
  assert.not.match(shown, /\nerror\t/);
  assert.match(showText(record({ overallStatus: "FAILED", error: "u0: boom" })), /\nerror\tu0: boom\n/);
});

test.run();
