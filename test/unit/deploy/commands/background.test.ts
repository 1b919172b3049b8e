/**
 * The background runner of long operations (deploy/commands/background.ts): order, the bound on
 * how many run at once, an id held once, a throw logged and the next run, stop dropping the
 * queued and waiting for the running; RecordProgress's writes in order with a new updatedAt and
 * the shape applied; staleRecords picking only active ones past the bound, oldest first.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import pino from "pino";
import { BackgroundRunner, RecordProgress, staleRecords } from "../../../../deploy/commands/background";

interface Job {
  id: string;
  release: Promise<void>;
}

/** A runner whose runs wait for their job's `release`; what started, at most how many at once. */
function harness(concurrency?: number, fail: (id: string) => boolean = () => false) {
  const started: string[] = [];
  const errors: string[] = [];
  let now = 0;
  let most = 0;
  const log = pino({ level: "error" }, { write: (line: string) => void errors.push(line) });
  const runner = new BackgroundRunner<Job>({
    run: async (job) => {
      started.push(job.id);
      most = Math.max(most, ++now);
      try {
        await job.release;
        if (fail(job.id)) throw new Error(`run ${job.id} failed`);
      } finally {
        now--;
      }
    },
    idOf: (job) => job.id,
    log,
    what: "job",
    ...(concurrency === undefined ? {} : { concurrency }),
  });
  return { runner, started, errors, most: () => most };
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

test("one at a time by default, in the order queued; an id queued or running is not queued again", async () => {
  const g = gate();
  const { runner, started, most } = harness();
  assert.ok(runner.enqueue({ id: "a", release: g.promise }));
  assert.ok(runner.enqueue({ id: "b", release: Promise.resolve() }));
  assert.not.ok(runner.enqueue({ id: "a", release: Promise.resolve() }), "a is running");
  assert.not.ok(runner.enqueue({ id: "b", release: Promise.resolve() }), "b is queued");
  assert.ok(runner.holds("b"));
  await new Promise((r) => setImmediate(r));
  assert.equal(started, ["a"], "b waits for a");
  g.open();
  await runner.idle();
  assert.equal(started, ["a", "b"]);
  assert.is(most(), 1);
  assert.not.ok(runner.holds("a"));
  assert.ok(runner.enqueue({ id: "a", release: Promise.resolve() }), "a ran: it may be queued again");
  await runner.idle();
  assert.equal(started, ["a", "b", "a"]);
});

test("concurrency 2 runs two at once and never three", async () => {
  const gates = [gate(), gate(), gate()];
  const { runner, started, most } = harness(2);
  gates.forEach((g, i) => runner.enqueue({ id: String(i), release: g.promise }));
  await new Promise((r) => setImmediate(r));
  assert.equal(started, ["0", "1"]);
  gates[0]!.open();
  await new Promise((r) => setImmediate(r));
  assert.equal(started, ["0", "1", "2"]);
  for (const g of gates) g.open();
  await runner.idle();
  assert.is(most(), 2);
});

test("a run that throws is logged and the next one runs", async () => {
  const { runner, started, errors } = harness(1, (id) => id === "bad");
  runner.enqueue({ id: "bad", release: Promise.resolve() });
  runner.enqueue({ id: "good", release: Promise.resolve() });
  await runner.idle();
  assert.equal(started, ["bad", "good"]);
  assert.is(errors.length, 1);
  assert.match(errors[0]!, /a job stopped on an infrastructure failure/);
  assert.match(errors[0]!, /run bad failed/);
});

test("stop drops what is queued, waits for what runs, and takes no more", async () => {
  const g = gate();
  const { runner, started } = harness();
  runner.enqueue({ id: "a", release: g.promise });
  runner.enqueue({ id: "b", release: Promise.resolve() });
  let stopped = false;
  const stopping = runner.stop().then(() => (stopped = true));
  await new Promise((r) => setImmediate(r));
  assert.not.ok(stopped, "a still runs");
  g.open();
  await stopping;
  assert.equal(started, ["a"]);
  assert.not.ok(runner.enqueue({ id: "c", release: Promise.resolve() }));
});

interface State {
  step: number;
  note?: string;
  updatedAt: string;
}

test("RecordProgress publishes each state in order, later each time, through its shape", async () => {
  const published: State[] = [];
  let clock = Date.parse("2026-11-29T12:00:00Z");
  const slow = gate();
  const progress = new RecordProgress<State>(
    { step: 0, updatedAt: "2026-11-29T11:00:00.000Z" },
    async (records) => {
      if (records[0]!.step === 1) await slow.promise; // the first write is slow: the second still lands after it
      published.push(...records);
    },
    () => new Date((clock += 1000)),
    (s) => (s.step === 3 ? s : { step: s.step, updatedAt: s.updatedAt }),
  );
  const first = progress.write({ step: 1, note: "dropped by the shape" });
  const second = progress.write({ step: 2 });
  assert.equal(progress.current.step, 2);
  slow.open();
  await Promise.all([first, second]);
  const last = await progress.write({ step: 3, note: "kept" });
  assert.equal(
    published.map((s) => [s.step, s.note]),
    [
      [1, undefined],
      [2, undefined],
      [3, "kept"],
    ],
  );
  assert.is(last, published.at(-1));
  const times = published.map((s) => Date.parse(s.updatedAt));
  assert.ok(times[0]! < times[1]! && times[1]! < times[2]!);
});

test("a write that fails rejects, and the next one is still published", async () => {
  const published: State[] = [];
  let fail = true;
  const progress = new RecordProgress<State>(
    { step: 0, updatedAt: "2026-11-29T11:00:00.000Z" },
    async (records) => {
      if (fail) throw new Error("Kafka down");
      published.push(...records);
    },
    () => new Date(),
  );
  const first = await progress.write({ step: 1 }).then(
    () => "published",
    (error: Error) => error.message,
  );
  assert.is(first, "Kafka down");
  fail = false;
  await progress.write({ step: 2 });
  assert.equal(
    published.map((s) => s.step),
    [2],
  );
});

test("staleRecords: active ones unchanged for longer than the bound, oldest first", () => {
  const nowMs = Date.parse("2026-11-29T12:00:00Z");
  const record = (id: string, active: boolean, updated: string, created: string) => ({
    id,
    active,
    updatedAt: updated,
    createdAt: created,
  });
  const records = [
    record("fresh", true, "2026-11-29T11:59:00Z", "2026-11-29T10:00:00Z"),
    record("done", false, "2026-11-29T10:00:00Z", "2026-11-29T09:00:00Z"),
    record("late", true, "2026-11-29T11:00:00Z", "2026-11-29T10:30:00Z"),
    record("early", true, "2026-11-29T11:00:00Z", "2026-11-29T08:00:00Z"),
    record("edge", true, "2026-11-29T11:50:00Z", "2026-11-29T07:00:00Z"),
  ];
  assert.equal(
    staleRecords(records, (r) => r.active, nowMs, 10 * 60_000).map((r) => r.id),
    ["early", "late"],
  );
});

test.run();
