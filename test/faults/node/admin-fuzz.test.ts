/**
 * Fuzzes the admin API (issue 51) from its own /admin/v1/openapi.json with schemathesis (PyPI;
 * test/faults/node/run.sh installs it): valid and invalid parameters and bodies on every
 * operation, with the operator token. Passes only with zero 5xx answers and every answer
 * conforming to the document (status, content type, schema). The operations it calls make keys,
 * tokens, destinations, plans and regulations of random values: on this stack's own topics and
 * database, dropped at the end. A regulation runs its deletions in the ingest's background, one at
 * a time, so POST .../regulations answers at once; its examples are bounded with the others'.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminPort, LiveStack } from "../../support/harness";

const OPERATOR = `operator-${randomUUID()}`;
const stack = new LiveStack({ ADMIN_TOKEN: OPERATOR });
const fuzz = suite("schemathesis (admin API)");
let admin = "";

fuzz.before(async () => {
  await stack.start();
  admin = `http://127.0.0.1:${await adminPort(stack.ingest!)}`;
});
fuzz.after(() => stack.stop());

/** The lines of schemathesis's output from its SUMMARY on, trimmed: the counts it reports. */
function summaryOf(output: string): string[] {
  const from = output.lastIndexOf("SUMMARY");
  return (from < 0 ? output.slice(-1500) : output.slice(from))
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !/^[=_-]+$/.test(l));
}

/** The `$ref`s of `doc` that name no component of it (schemathesis skips what they stand for). */
function unresolved(doc: { components?: { schemas?: Record<string, unknown> } }): string[] {
  const refs = new Set<string>();
  JSON.stringify(doc, (key, value: unknown) => (key === "$ref" && typeof value === "string" ? refs.add(value) && value : value));
  const prefix = "#/components/schemas/";
  return [...refs].filter((r) => !r.startsWith(prefix) || doc.components?.schemas?.[r.slice(prefix.length)] === undefined);
}

fuzz("every schema the document names is in it", async () => {
  const doc = (await (await fetch(`${admin}/admin/v1/openapi.json`)).json()) as Parameters<typeof unresolved>[0];
  assert.equal(unresolved(doc), []);
});

fuzz("every operation of /admin/v1/openapi.json: no 5xx, no response that breaks the document", async () => {
  const args = [
    "run",
    `${admin}/admin/v1/openapi.json`,
    "--header",
    `Authorization: Bearer ${OPERATOR}`,
    "--checks",
    "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
    "--max-examples",
    process.env.FUZZ_MAX_EXAMPLES ?? "15", // 31 operations: about 400 cases, 1 min (30: 819 cases, 109 s, all passed)
    "--seed",
    "20261151",
    // Each call naming a destination reads the destinations topic (about 1 s): 4 at once.
    "--workers",
    process.env.FUZZ_WORKERS ?? "4",
    "--request-timeout",
    "10",
    "--suppress-health-check",
    "all",
    // Not the coverage phase (other methods, content types, each bound's edges): with more than one
    // worker it trips hypothesis's AST race on Python 3.11, and alone it takes 140 s. On demand:
    // FUZZ_PHASES=coverage FUZZ_WORKERS=1.
    "--phases",
    process.env.FUZZ_PHASES ?? "examples,fuzzing,stateful",
  ];
  const child = spawn("st", args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const [code] = await once(child, "exit");
  if (process.env.FUZZ_OUTPUT) writeFileSync(process.env.FUZZ_OUTPUT, output); // the whole report, to read its failures
  console.log(`\n  schemathesis ${summaryOf(output).join(" | ")}`);
  assert.is(code, 0, output.slice(-6000));
});

fuzz.run();
