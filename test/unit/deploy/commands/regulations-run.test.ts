/**
 * Running a regulation (deploy/commands/regulations-run.ts) with its seams: the admin topic an
 * array, each subject's request a function. The states published in order, the requests made,
 * retries of a retriable error only, a bounded FAILED reason, a resumed RUNNING one starting at
 * its progress, the heartbeat, and the runner: one at a time, only stale ones resumed, stop waits.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { AdminBook } from "../../../../schemas/admin/book";
import { adminKey, parseAdminRecord, type RegulationRecord } from "../../../../schemas/admin/records";
import { DeletionIncompleteError, type PrivacyRequest } from "../../../../deploy/commands/privacy";
import { regulationOf, type RunOptions } from "../../../../deploy/commands/regulations";
import { boundedError, MAX_ERROR_LENGTH, RegulationRunner, runRegulation } from "../../../../deploy/commands/regulations-run";
import { regulationsContext, runRequestInto } from "../../../support/admin-fixtures";

/** A world: what was published, what was requested, a clock a second a call. */
function world(run: (request: PrivacyRequest) => Promise<void> = async () => {}, options: Partial<RunOptions> = {}) {
  const published: RegulationRecord[] = [];
  const requests: PrivacyRequest[] = [];
  let clock = Date.parse("2026-03-01T12:00:00.000Z");
  const ctx = regulationsContext(published, {
    now: () => new Date((clock += 1000)),
    run: { retryPauseMs: 1, heartbeatMs: 60_000, ...options },
    runRequest: runRequestInto(requests, run),
  });
  return { ctx, published, requests };
}

function regulation(subjectIds: string[], regulationType: RegulationRecord["regulationType"] = "SUPPRESS_WITH_DELETE"): RegulationRecord {
  const made = regulationOf({ regulationType, subjectType: "USER_ID", subjectIds }, "ws1", "cli:jane", new Date("2026-03-01T11:00:00Z"));
  if (!made.ok) throw new Error(made.error);
  return made.value;
}

const states = (records: RegulationRecord[]) => records.map((r) => `${r.overallStatus} ${r.finished}`);

test("RUNNING, progress after each subject, FINISHED; each subject's request is the type's mapping, by the creator", async () => {
  const { ctx, published, requests } = world();
  const record = regulation(["u1", "u2", "u3"]);
  const last = await runRegulation(ctx, record);
  assert.equal(states(published), ["RUNNING 0", "RUNNING 1", "RUNNING 2", "FINISHED 3"]);
  assert.equal(last, published.at(-1));
  assert.equal(
    requests.map((r) => [r.action, r.suppress, r.userId, r.workspaceId, r.requestedBy]),
    ["u1", "u2", "u3"].map((u) => ["delete", true, u, "ws1", "cli:jane"]),
  );
  // every state is a record the admin topic takes under the regulation's key, each later than the one before
  for (const r of published) assert.ok(parseAdminRecord(adminKey(r), JSON.stringify(r)), JSON.stringify(r));
  const times = published.map((r) => Date.parse(r.updatedAt));
  assert.equal(
    times,
    [...times].sort((a, b) => a - b),
  );
  assert.ok(times[0]! > Date.parse(record.updatedAt));
  assert.is(new Set(published.map((r) => r.regulateId)).size, 1);
});

test("a retriable error is tried again and the regulation finishes; tries exhausted -> FAILED naming the user, later subjects not run", async () => {
  let failures = 1;
  const once = world(async (r) => {
    if (r.userId === "u2" && failures-- > 0) throw new DeletionIncompleteError(3000);
  });
  assert.is((await runRegulation(once.ctx, regulation(["u1", "u2", "u3"]))).overallStatus, "FINISHED");
  assert.equal(
    once.requests.map((r) => r.userId),
    ["u1", "u2", "u2", "u3"],
  );

  const always = world(
    async (r) => {
      if (r.userId === "u2") throw new DeletionIncompleteError(3000);
    },
    { tries: 3 },
  );
  const last = await runRegulation(always.ctx, regulation(["u1", "u2", "u3"]));
  assert.equal(states(always.published), ["RUNNING 0", "RUNNING 1", "FAILED 1"]);
  assert.equal(
    always.requests.map((r) => r.userId),
    ["u1", "u2", "u2", "u2"],
  );
  assert.match(last.error!, /^u2: DeletionIncompleteError: deletion incomplete/);
  assert.ok(parseAdminRecord(adminKey(last), JSON.stringify(last)));
});

test("a non-retriable error fails the regulation at once, without another try", async () => {
  const { ctx, requests, published } = world(async () => {
    throw new Error("ws1/u1 has no suppression to lift");
  });
  const last = await runRegulation(ctx, regulation(["u1", "u2"], "UNSUPPRESS"));
  assert.equal(states(published), ["RUNNING 0", "FAILED 0"]);
  assert.is(requests.length, 1);
  assert.is(requests[0]!.action, "unsuppress");
  assert.is(last.error, "u1: Error: ws1/u1 has no suppression to lift");
});

test("the reason is bounded: a long one is cut to MAX_ERROR_LENGTH characters and the record stays valid", async () => {
  assert.is(boundedError("short"), "short");
  const { ctx } = world(async () => {
    throw new Error("x".repeat(10_000));
  });
  const last = await runRegulation(ctx, regulation(["u1"]));
  assert.is(last.error!.length, MAX_ERROR_LENGTH);
  assert.ok(last.error!.endsWith("…"));
  assert.ok(parseAdminRecord(adminKey(last), JSON.stringify(last)), "the admin topic takes it");
});

test("a RUNNING regulation (its process died) resumes at its progress; an INITIALIZED one starts at the first subject", async () => {
  const { ctx, requests, published } = world();
  const record = regulation(["u1", "u2", "u3"]);
  await runRegulation(ctx, { ...record, overallStatus: "RUNNING", finished: 2 });
  assert.equal(
    requests.map((r) => r.userId),
    ["u3"],
  );
  assert.equal(states(published), ["RUNNING 2", "FINISHED 3"]);
  requests.length = 0;
  await runRegulation(ctx, { ...record, finished: 2 });
  assert.equal(
    requests.map((r) => r.userId),
    ["u1", "u2", "u3"],
  );
});

test("a subject's failure does not throw; the admin topic refusing a record does", async () => {
  const { ctx } = world(async () => {
    throw new Error("ClickHouse down");
  });
  assert.is((await runRegulation(ctx, regulation(["u1"]))).overallStatus, "FAILED");
  ctx.publish = async () => {
    throw new Error("KafkaJSNumberOfRetriesExceeded");
  };
  const thrown = await runRegulation(ctx, regulation(["u1"])).catch((e: unknown) => e);
  assert.instance(thrown, Error);
  assert.match((thrown as Error).message, /KafkaJSNumberOfRetriesExceeded/);
});

test("while a subject runs, the heartbeat publishes the same state with a newer updatedAt; none after the end", async () => {
  const { ctx, published } = world(() => new Promise((resolve) => setTimeout(resolve, 150)), { heartbeatMs: 20 });
  await runRegulation(ctx, regulation(["u1"]));
  const count = published.length;
  assert.ok(count >= 4, `RUNNING, heartbeats, FINISHED: ${states(published).join(", ")}`);
  assert.equal(states(published).slice(0, -1), Array(count - 1).fill("RUNNING 0"));
  assert.is(published.at(-1)!.overallStatus, "FINISHED");
  assert.is(new Set(published.map((r) => r.updatedAt)).size, count);
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.is(published.length, count, "no heartbeat after FINISHED");
});

test("the runner runs one at a time, in order; the same regulation is not queued twice; stop waits for the running one", async () => {
  let active = 0;
  let most = 0;
  const { ctx, requests, published } = world(async () => {
    most = Math.max(most, ++active);
    await new Promise((resolve) => setTimeout(resolve, 30));
    active--;
  });
  const runner = new RegulationRunner(ctx);
  const [a, b, c] = [regulation(["a1", "a2"]), regulation(["b1"]), regulation(["c1"])];
  assert.ok(runner.enqueue(a));
  assert.ok(runner.enqueue(b));
  assert.not.ok(runner.enqueue(a), "a is already held");
  await runner.idle();
  assert.is(most, 1);
  assert.equal(
    requests.map((r) => r.userId),
    ["a1", "a2", "b1"],
  );
  assert.ok(runner.enqueue(a), "done: it may be queued again");
  assert.ok(runner.enqueue(c));
  await new Promise((resolve) => setTimeout(resolve, 10)); // a is running
  await runner.stop();
  assert.is(published.at(-1)!.regulateId, a.regulateId);
  assert.is(published.at(-1)!.overallStatus, "FINISHED", "stop waited for a");
  assert.not.ok(
    requests.some((r) => r.userId === "c1"),
    "c stayed queued, not run",
  );
  assert.not.ok(runner.enqueue(c), "stopped: takes no more");
});

test("resume takes only INITIALIZED or RUNNING regulations unchanged for longer than the stale bound, oldest first", async () => {
  const { ctx, requests } = world();
  const now = Date.parse("2026-03-01T12:00:00.000Z");
  ctx.now = () => new Date(now);
  const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
  const book = new AdminBook();
  const put = (subject: string, patch: Partial<RegulationRecord>) => {
    const r = { ...regulation([subject]), ...patch };
    book.apply(adminKey(r), JSON.stringify(r));
    return r;
  };
  put("running-old", { overallStatus: "RUNNING", createdAt: at(30), updatedAt: at(11) });
  put("initialized-old", { createdAt: at(40), updatedAt: at(40) });
  put("running-fresh", { overallStatus: "RUNNING", createdAt: at(50), updatedAt: at(2) });
  put("finished-old", { overallStatus: "FINISHED", finished: 1, createdAt: at(60), updatedAt: at(60) });
  put("failed-old", { overallStatus: "FAILED", error: "x", createdAt: at(60), updatedAt: at(60) });
  assert.is(book.regulations.size, 5);
  const runner = new RegulationRunner(ctx, 10 * 60_000);
  const picked = runner.resume(book);
  assert.equal(
    picked.map((r) => r.subjectIds[0]),
    ["initialized-old", "running-old"],
  );
  assert.equal(runner.resume(book), [], "held already: not picked twice");
  await runner.idle();
  assert.equal(
    requests.map((r) => r.userId),
    ["initialized-old", "running-old"],
  );
});

test("the runner logs a regulation it could not publish and goes on with the next", async () => {
  const { ctx, requests } = world();
  const publish = ctx.publish!;
  let refuse = true;
  ctx.publish = async (records) => {
    if (refuse) {
      refuse = false;
      throw new Error("Kafka unreachable");
    }
    await publish(records);
  };
  const runner = new RegulationRunner(ctx);
  runner.enqueue(regulation(["lost"]));
  runner.enqueue(regulation(["next"]));
  await runner.idle();
  assert.equal(
    requests.map((r) => r.userId),
    ["next"],
  );
});

test.run();
