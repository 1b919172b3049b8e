/**
 * Regulations (deploy/commands/regulations.ts): Segment's body checked field by field (each
 * refusal names its field), new ids, the mapping of a type to a privacy request, creating one
 * (published INITIALIZED, a refusal publishes nothing), listing and the workspace-scoped status.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { adminKey, type RegulationRecord } from "../../../../schemas/admin/records";
import type { OpResult } from "../../../../schemas/admin/result";
import {
  createRegulation,
  listRegulations,
  MAX_SUBJECTS,
  newRegulateId,
  privacyRequestOf,
  regulationOf,
  regulationStatus,
} from "../../../../deploy/commands/regulations";
import { bookOf, regulationsContext } from "../../../support/admin-fixtures";

const NOW = new Date("2026-03-01T12:00:00.000Z");
const body = (extra: Record<string, unknown> = {}) => ({
  regulationType: "SUPPRESS_WITH_DELETE",
  subjectType: "USER_ID",
  subjectIds: ["u1"],
  ...extra,
});
const of = (input: unknown, workspaceId = "ws1", actor = "cli:jane") => regulationOf(input, workspaceId, actor, NOW);

/** The refusal's status and field; fails the test when it is not a refusal. */
function refusal<T>(result: OpResult<T>): { status: number; field?: string; error: string } {
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.value)}`);
  return { status: result.status, error: result.error, ...(result.field === undefined ? {} : { field: result.field }) };
}

test("a valid body: a new INITIALIZED regulation of the workspace, nothing finished, times at now", () => {
  const made = of(body({ subjectIds: ["u1", "u2"] }));
  assert.ok(made.ok);
  if (!made.ok) return;
  const { regulateId, ...rest } = made.value;
  assert.match(regulateId, /^reg_[0-9a-f]{16}$/);
  assert.equal(rest, {
    kind: "regulation",
    workspaceId: "ws1",
    regulationType: "SUPPRESS_WITH_DELETE",
    subjectType: "USER_ID",
    subjectIds: ["u1", "u2"],
    overallStatus: "INITIALIZED",
    finished: 0,
    createdAt: "2026-03-01T12:00:00.000Z",
    createdBy: "cli:jane",
    updatedAt: "2026-03-01T12:00:00.000Z",
  });
  assert.is(adminKey(made.value), `regulation:${regulateId}`);
});

test("every supported type is taken; ids differ from one regulation to the next", () => {
  for (const regulationType of ["SUPPRESS_WITH_DELETE", "DELETE_ONLY", "SUPPRESS_ONLY", "UNSUPPRESS"]) {
    const made = of(body({ regulationType }));
    assert.ok(made.ok && made.value.regulationType === regulationType, regulationType);
  }
  const ids = new Set(Array.from({ length: 200 }, () => newRegulateId()));
  assert.is(ids.size, 200);
  for (const id of ids) assert.match(id, /^reg_[0-9a-f]{16}$/);
});

test("refusals are 400 and name the field at fault", () => {
  const cases: [unknown, string | undefined, RegExp][] = [
    [null, undefined, /JSON object/],
    [[body()], undefined, /JSON object/],
    [body({ regulationType: undefined }), "regulationType", /one of SUPPRESS_WITH_DELETE/],
    [body({ regulationType: "suppress_with_delete" }), "regulationType", /one of/],
    [body({ regulationType: "DELETE_INTERNAL" }), "regulationType", /DELETE_INTERNAL is not supported/],
    [body({ regulationType: "SUPPRESS_WITH_DELETE_INTERNAL" }), "regulationType", /SUPPRESS_WITH_DELETE_INTERNAL is not supported/],
    [body({ subjectType: "OBJECT_ID" }), "subjectType", /OBJECT_ID is not supported/],
    [body({ subjectType: undefined }), "subjectType", /must be USER_ID/],
    [body({ subjectIds: "u1" }), "subjectIds", /array/],
    [body({ subjectIds: [] }), "subjectIds", /1 to 5000 userIds.*not 0/],
    [body({ subjectIds: Array.from({ length: MAX_SUBJECTS + 1 }, (_, i) => `u${i}`) }), "subjectIds", /not 5001/],
    [body({ subjectIds: ["a", "b", "c", ""] }), "subjectIds[3]", /subjectIds\[3\] must be a userId/],
    [body({ subjectIds: ["a", 7] }), "subjectIds[1]", /must be a userId/],
    [body({ subjectIds: ["a", "x".repeat(1025)] }), "subjectIds[1]", /1 to 1024 characters/],
  ];
  for (const [input, field, error] of cases) {
    const r = refusal(of(input));
    assert.is(r.status, 400, JSON.stringify(input)?.slice(0, 80));
    assert.is(r.field, field, JSON.stringify(input)?.slice(0, 80));
    assert.match(r.error, error);
  }
  assert.equal(refusal(of(body(), "has space")).field, "workspaceId");
  assert.equal(refusal(of(body(), "")).field, "workspaceId");
  assert.equal(refusal(of(body(), "a/b")).field, "workspaceId");
  assert.equal(refusal(of(body(), "w".repeat(201))).field, "workspaceId");
  assert.ok(of(body(), "w".repeat(200)).ok, "200 characters are taken");
  assert.equal(refusal(of(body(), "ws1", "")).field, "createdBy");
});

test("the bounds themselves are taken: 5,000 subjectIds, a 1,024-character one; a repeated id is kept once", () => {
  const many = of(body({ subjectIds: Array.from({ length: MAX_SUBJECTS }, (_, i) => `u${i}`) }));
  assert.ok(many.ok && many.value.subjectIds.length === MAX_SUBJECTS);
  assert.ok(of(body({ subjectIds: ["x".repeat(1024)] })).ok);
  const repeated = of(body({ subjectIds: ["b", "a", "b"] }));
  assert.ok(repeated.ok);
  if (repeated.ok) assert.equal(repeated.value.subjectIds, ["b", "a"]);
});

test("mapping: each type -> the privacy request users delete|suppress|unsuppress would make, requested by the creator", () => {
  const record = (regulationType: RegulationRecord["regulationType"]) => {
    const made = of(body({ regulationType }), "ws9", "tok_0123456789ab");
    if (!made.ok) throw new Error(made.error);
    return made.value;
  };
  const common = { workspaceId: "ws9", userId: "u7", requestedBy: "tok_0123456789ab" };
  assert.equal(privacyRequestOf(record("SUPPRESS_WITH_DELETE"), "u7"), { ...common, action: "delete", suppress: true });
  assert.equal(privacyRequestOf(record("DELETE_ONLY"), "u7"), { ...common, action: "delete", suppress: false });
  assert.equal(privacyRequestOf(record("SUPPRESS_ONLY"), "u7"), { ...common, action: "suppress", suppress: false });
  assert.equal(privacyRequestOf(record("UNSUPPRESS"), "u7"), { ...common, action: "unsuppress", suppress: false });
});

test("createRegulation publishes the new regulation INITIALIZED and returns it; a refusal publishes nothing", async () => {
  const published: RegulationRecord[] = [];
  const ctx = regulationsContext(published, { now: () => NOW });
  const made = await createRegulation(ctx, body({ regulationType: "DELETE_ONLY" }), "ws1", "cli:jane");
  assert.ok(made.ok);
  assert.equal(published, made.ok ? [made.value] : []);
  assert.is(published[0]!.overallStatus, "INITIALIZED");
  const refused = await createRegulation(ctx, body({ subjectType: "OBJECT_ID" }), "ws1", "cli:jane");
  assert.is(refusal(refused).field, "subjectType");
  assert.is(published.length, 1);
});

const at = (regulateId: string, workspaceId: string, createdAt: string, patch: Partial<RegulationRecord> = {}): RegulationRecord => {
  const made = regulationOf(body(), workspaceId, "cli:jane", new Date(createdAt));
  if (!made.ok) throw new Error(made.error);
  return { ...made.value, regulateId, ...patch };
};

test("listRegulations: newest first, by workspace, by status and type", () => {
  const a = at("reg_000000000000000a", "ws1", "2026-03-01T10:00:00.000Z");
  const b = at("reg_000000000000000b", "ws2", "2026-03-01T11:00:00.000Z", { overallStatus: "FINISHED", finished: 1 });
  const c = at("reg_000000000000000c", "ws1", "2026-03-01T12:00:00.000Z", { regulationType: "UNSUPPRESS", overallStatus: "FAILED" });
  const book = bookOf(a, b, c);
  assert.is(book.regulations.size, 3, "each record was taken by the book (a valid record)");
  const ids = (rs: RegulationRecord[]) => rs.map((r) => r.regulateId.slice(-1));
  assert.equal(ids(listRegulations(book)), ["c", "b", "a"]);
  assert.equal(ids(listRegulations(book, "ws1")), ["c", "a"]);
  assert.equal(ids(listRegulations(book, "ws3")), []);
  assert.equal(ids(listRegulations(book, undefined, { status: ["FINISHED", "FAILED"] })), ["c", "b"]);
  assert.equal(ids(listRegulations(book, "ws1", { types: ["SUPPRESS_WITH_DELETE"] })), ["a"]);
});

test("regulationStatus: found, for its own workspace or unscoped; another workspace's answers exactly as an absent one", () => {
  const a = at("reg_000000000000000a", "ws1", "2026-03-01T10:00:00.000Z");
  const book = bookOf(a);
  assert.equal(regulationStatus(book, a.regulateId), { ok: true, value: a });
  assert.equal(regulationStatus(book, a.regulateId, "ws1"), { ok: true, value: a });
  const foreign = regulationStatus(book, a.regulateId, "ws2");
  const absent = regulationStatus(book, "reg_00000000000000ff", "ws2");
  assert.equal(refusal(foreign), { status: 404, field: "regulateId", error: `no regulation ${a.regulateId}` });
  assert.equal(refusal(absent), { status: 404, field: "regulateId", error: "no regulation reg_00000000000000ff" });
});

test.run();
