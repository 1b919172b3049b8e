/**
 * End to end with Segment's Java SDK (com.segment.analytics.java:analytics 3.5.4 from Maven
 * Central, unmodified), pointed at the live ingest by its `endpoint` only: test/support/sdk-java's main
 * class enqueues 20 messages of each of the six types, every one twice with the same messageId
 * (240 enqueued, 120 distinct, the copies in other batches), flushes and shuts down. Proves that
 * the SDK takes every answer as a success (it parses the 200's body as JSON and retries anything
 * else) and that exactly the 120 messages are rows under FINAL: counted in all and per type, ids
 * compared, field values checked. The SDK's own log is in the failure message.
 *
 * Needs Java 17 and Maven; the first run fetches the SDK from Maven Central and builds into
 * .stack/sdk-java, later runs reuse that build.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { EventRow } from "../../schemas/row";
import { LiveStack, sqlList } from "../support/harness";
import { ROOT } from "../support/paths";

const root = ROOT;
const project = join(root, "test", "support", "sdk-java");
const built = join(root, ".stack", "sdk-java");
const mainClass = "SendEveryType";
const TYPES = ["identify", "track", "page", "screen", "group", "alias"] as const;
const PER_TYPE = 20;
const DISTINCT = PER_TYPE * TYPES.length;
/** Seconds the Java side waits for the SDK's verdicts (it backs off 15 s and more after a failure). */
const VERDICT_SECONDS = 30;
const when = new Date("2024-01-02T03:04:05.678Z");

const stack = new LiveStack({ WRITE_KEYS: "java-key=ws-java" });
const java = suite("analytics-java 3.5.4 (live)");

/** The columns the test reads back (schemas/row.ts; 18.16 gives times as text). */
type Row = Pick<
  EventRow,
  | "message_id"
  | "type"
  | "event"
  | "name"
  | "category"
  | "user_id"
  | "anonymous_id"
  | "group_id"
  | "previous_id"
  | "properties"
  | "traits"
  | "context"
> & {
  original_timestamp: string | null;
};

/** Runs a command to its end; resolves with its exit code and interleaved output. */
async function run(command: string, args: string[], killAfterMs: number): Promise<{ code: number | null; output: string }> {
  const child: ChildProcess = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
  const [code] = (await once(child, "close")) as [number | null]; // "close": after the output is all read
  clearTimeout(timer);
  return { code, output };
}

/** Newest modification time under a directory, ms. */
function newest(dir: string): number {
  return Math.max(
    ...readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs),
  );
}

/** Builds test/support/sdk-java with Maven unless .stack/sdk-java is newer than its pom and sources. */
async function buildJavaClient(): Promise<void> {
  const classFile = join(built, "classes", `${mainClass}.class`);
  const lib = join(built, "lib");
  const sources = Math.max(statSync(join(project, "pom.xml")).mtimeMs, newest(join(project, "src")));
  if (existsSync(classFile) && existsSync(lib) && statSync(classFile).mtimeMs >= sources) return;
  rmSync(built, { recursive: true, force: true }); // a changed pom must not leave old jars in lib/
  const mvn = await run("mvn", ["-q", "-B", "-f", join(project, "pom.xml"), "compile", "dependency:copy-dependencies"], 600_000);
  if (mvn.code !== 0) throw new Error(`mvn exited ${mvn.code}:\n${mvn.output}`);
}

/** Polls count() FINAL of the workspace until it is `n` or `timeoutMs` passed; returns the last count. */
async function finalCount(n: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} FINAL WHERE workspace_id = 'ws-java'`);
    const count = Number(row!.n);
    if (count === n || Date.now() > deadline) return count;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const seconds = (text: string) => Date.parse(text.replace(" ", "T") + (text.endsWith("Z") ? "" : "Z")) / 1000;

java.before(async () => {
  await Promise.all([buildJavaClient(), stack.start()]);
});
java.after(async () => {
  await stack.stop();
});

java("every type, each messageId enqueued twice: one row per messageId under FINAL", async () => {
  const prefix = `java-${randomUUID().slice(0, 8)}`;
  const classpath = [join(built, "classes"), join(built, "lib", "*")].join(":");
  const args = ["-cp", classpath, mainClass, stack.base, "java-key", prefix, String(PER_TYPE), String(VERDICT_SECONDS)];
  const sdk = await run("java", args, (VERDICT_SECONDS + 60) * 1000);
  const said = `\nthe SDK said (exit ${sdk.code}):\n${sdk.output}`;

  const ids = TYPES.flatMap((type) => Array.from({ length: PER_TYPE }, (_, i) => `${prefix}-${type}-${i}`)).sort();
  const found = await finalCount(DISTINCT, 20_000);
  assert.is(found, DISTINCT, `rows under FINAL: expected ${DISTINCT}, found ${found}${said}`);
  assert.match(sdk.output, `result enqueued=${2 * DISTINCT} succeeded=${2 * DISTINCT} failed=0\n`, said);
  assert.is(sdk.code, 0, said);

  const rows = await stack.select<Row>(
    `SELECT message_id, type, event, name, category, user_id, anonymous_id, group_id, previous_id, original_timestamp,
       properties, traits, context
     FROM ${stack.table} FINAL WHERE workspace_id = 'ws-java' ORDER BY message_id`,
  );
  assert.equal(
    rows.map((r) => r.message_id),
    ids,
  );
  const perType = await stack.select<{ type: string; n: string }>(
    `SELECT type, count() AS n FROM ${stack.table} FINAL WHERE workspace_id = 'ws-java' GROUP BY type ORDER BY type`,
  );
  assert.equal(
    perType.map((t) => [t.type, Number(t.n)]),
    [...TYPES].sort().map((t) => [t, PER_TYPE]),
  );
  const [unique] = await stack.select<{ rows: string; ids: string }>(
    `SELECT count() AS rows, uniqExact(message_id) AS ids FROM ${stack.table} FINAL WHERE message_id IN (${sqlList(ids)})`,
  );
  assert.equal([Number(unique!.rows), Number(unique!.ids)], [DISTINCT, DISTINCT]);
  const [refused] = await stack.select<{ n: string }>(
    `SELECT count() AS n FROM ${stack.database}.rejected_messages WHERE workspace_id = 'ws-java'`,
  );
  assert.is(Number(refused!.n), 0, "items refused");

  const byId = new Map(rows.map((r) => [r.message_id, r]));
  for (const i of [0, PER_TYPE - 1]) {
    const row = (type: string) => byId.get(`${prefix}-${type}-${i}`)!;
    const user = `java-u${i}`;
    const identify = row("identify");
    assert.is(identify.user_id, user);
    assert.equal(JSON.parse(identify.traits), { email: `${user}@example.com`, index: i, home: { city: "Lisbon" } });
    assert.is(seconds(identify.original_timestamp!), Math.floor(when.getTime() / 1000));
    assert.is(JSON.parse(identify.context).library.name, "analytics-java");
    const track = row("track");
    assert.is(track.event, "Order Completed");
    assert.is(track.user_id, user);
    assert.equal(JSON.parse(track.properties), { price: 9.5, index: i, items: [{ sku: "a" }] });
    const page = row("page");
    assert.equal([page.name, page.category, page.anonymous_id, page.user_id], ["Home", "Docs", `java-a${i}`, ""]);
    assert.equal(JSON.parse(page.properties), { path: "/", index: i });
    const screen = row("screen");
    assert.equal([screen.name, screen.user_id], ["Main", user]);
    const group = row("group");
    assert.equal([group.group_id, group.user_id], [`g${i}`, user]);
    assert.equal(JSON.parse(group.traits), { plan: "pro" });
    const alias = row("alias");
    assert.equal([alias.previous_id, alias.user_id], [`java-a${i}`, user]);
  }
  const [raw] = await stack.select<{ n: string }>(`SELECT count() AS n FROM ${stack.table} WHERE workspace_id = 'ws-java'`);
  console.log(`\nanalytics-java 3.5.4   enqueued ${2 * DISTINCT}   rows under FINAL ${found}   rows before FINAL ${raw!.n}`);
});

java.run();
