/**
 * Which refused items a deletion removes (schemas/privacy/refused.ts through deletionTargets): the
 * generated WHERE is read by a small evaluator of the few SQL forms it uses (string literals with
 * quoteString's escapes, startsWith, position, =, NOT, AND, OR, received_at <= toDateTime(N)) over texts the ingest's own
 * buildRejected writes, and over texts as earlier releases stored them (the item as sent). The
 * same rows on ClickHouse 18.16 and current ClickHouse: test/live/engines.test.ts.
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { buildRejected } from "../../../../ingest/records/rejected";
import { deletionTargets } from "../../../../schemas/privacy/deletion";
import { ownRefused } from "../../../../schemas/privacy/refused";

type Row = { workspace_id: string; raw: string; received_at?: number };

const UNESCAPE: Record<string, string> = { "\\": "\\", "'": "'", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", "0": "\0" };

/** `where` of a refused-item target, evaluated for a row; throws on any SQL form it does not know. */
function evaluate(where: string, row: Row): boolean {
  const tokens: string[] = [];
  const token = / *('(?:[^'\\]|\\.)*'|[A-Za-z_]+|\d+|[(),=<>])/sy;
  let end = 0;
  for (let m; (m = token.exec(where)) !== null; end = token.lastIndex) tokens.push(m[1]!);
  assert.is(where.slice(end), "", "every character read");
  let at = 0;
  const next = () => tokens[at++]!;
  const expect = (token: string) => assert.is(next(), token);
  const text = () => {
    const t = next();
    assert.ok(t.startsWith("'"), t);
    return t.slice(1, -1).replace(/\\(.)/gs, (_, c: string) => UNESCAPE[c] ?? assert.unreachable(`escape \\${c}`));
  };
  const call = () => {
    expect("(");
    expect("raw");
    expect(",");
    const needle = text();
    expect(")");
    return needle;
  };
  const primary = (): boolean => {
    const t = next();
    if (t === "(") {
      const value = or();
      expect(")");
      return value;
    }
    if (t === "NOT") return !primary();
    if (t === "startsWith") return row.raw.startsWith(call());
    if (t === "position") {
      const found = row.raw.includes(call());
      expect(">");
      expect("0");
      return found;
    }
    if (t === "received_at") {
      for (const part of ["<", "=", "toDateTime", "("]) expect(part);
      const seconds = Number(next());
      expect(")");
      return (row.received_at ?? RECEIVED) <= seconds;
    }
    assert.ok(t === "raw" || t === "workspace_id", t);
    expect("=");
    return row[t as keyof Row] === text();
  };
  const and = (): boolean => {
    let value = primary();
    while (tokens[at] === "AND") value = (next(), primary()) && value;
    return value;
  };
  const or = (): boolean => {
    let value = and();
    while (tokens[at] === "OR") value = (next(), and()) || value;
    return value;
  };
  const value = or();
  assert.is(at, tokens.length, "the whole condition read");
  return value;
}

/** The item's raw text as the ingest stores it (ids first), or as an earlier release did (`old`: the item as sent). */
const rawOf = (item: object, old = false) =>
  old
    ? JSON.stringify(item)
    : (
        JSON.parse(
          buildRejected([{ item, reasons: ["x"] }], { workspaceId: "w", receivedAt: "2026-11-26T10:00:00.000Z" }, 32_768)[0]!.value,
        ) as Row
      ).raw;

/** When the test's items were received (seconds), and when the deletion was requested. */
const RECEIVED = 1_700_000_000;
const REQUESTED = 1_800_000_000;

/** Whether deleting `userId` (with `linked`) removes the item from workspace w. */
function deletes(userId: string, linked: string[], raw: string, workspace = "w", receivedAt = RECEIVED): boolean {
  const targets = deletionTargets("db", "events", "w", userId, linked, REQUESTED).filter((t) => t.table === "rejected_messages");
  return targets.some((t) => evaluate(t.where, { workspace_id: workspace, raw, received_at: receivedAt }));
}

const linked = ["anon-alice", "prev-alice"];

test("a deletion removes the user's refused items: by the userId the text begins with, or, without one, by a linked id", () => {
  const own = [
    { type: "track", messageId: "m", event: 5, userId: "alice" },
    { userId: "alice" },
    { type: "track", event: 7, anonymousId: "anon-alice", properties: { userId: "u-invitee" } }, // a nested userId: still anonymous
    { type: "alias", previousId: "prev-alice", userId: true }, // a userId that is no id (refused for it)
    { type: "track", userId: "", anonymousId: "anon-alice" }, // an empty userId, as events' user_id = ''
    { type: "track", userId: "   ", anonymousId: "anon-alice" }, // a blank userId: absent, as the ingest reads it'
    { type: "alias", anonymousId: "someone", previousId: "prev-alice" },
    { type: "track", properties: { pad: '"'.repeat(20_000) }, anonymousId: "anon-alice" }, // cut: its id kept first
  ];
  for (const item of own) assert.ok(deletes("alice", linked, rawOf(item)), JSON.stringify(item).slice(0, 80));
  assert.not.ok(deletes("alice", linked, rawOf(own[0]!), "w2"), "another workspace's alice");
  // Received after the request: kept, as her events are (unless she is suppressed, then never stored).
  assert.ok(deletes("alice", linked, rawOf(own[0]!), "w", REQUESTED), "received in the request's second");
  for (const item of own) assert.not.ok(deletes("alice", linked, rawOf(item), "w", REQUESTED + 1), JSON.stringify(item).slice(0, 80));
});

test("bob's identified item is never alice's: not by a nested userId, nor by alice's linked ids as his anonymousId or in his data", () => {
  const bobs = [
    { type: "track", event: 9, userId: "bob", properties: { userId: "alice" } },
    { type: "track", userId: "bob", anonymousId: "anon-alice", context: { traits: { previousId: "prev-alice" } } },
    { type: "alias", userId: "bob", previousId: "prev-alice" },
    { type: "track", userId: "alice2", anonymousId: "anon-alice2" },
    { type: "track", anonymousId: "anon-bob", event: 9 },
  ];
  for (const item of bobs) assert.not.ok(deletes("alice", linked, rawOf(item)), JSON.stringify(item));
  // Stored by an earlier release with bob's userId first: the same.
  assert.not.ok(deletes("alice", linked, rawOf({ userId: "bob", type: "track", properties: { userId: "alice" } }, true)));
});

test('numeric ids (analytics-ruby sends them as numbers): a userId 42 is user "42"\'s, a numeric anonymousId a linked "7"', () => {
  const numeric = rawOf({ type: "track", event: 1, userId: 42, anonymousId: "anon-alice" });
  assert.ok(numeric.startsWith('{"userId":42,'), numeric);
  assert.ok(deletes("42", [], numeric), "user 42's own item");
  assert.not.ok(deletes("alice", linked, numeric), "not alice's, though it carries her linked anonymousId");
  assert.not.ok(deletes("4", [], numeric), "not user 4's");
  assert.ok(deletes("42", [], rawOf({ type: "track", event: 1, userId: 42 }, true)), "an earlier release's, the userId not first");
  assert.not.ok(deletes("420", [], numeric));
  assert.ok(deletes("alice", ["7"], rawOf({ type: "track", event: 1, anonymousId: 7 })), 'a numeric anonymousId linked as "7"');
  assert.not.ok(deletes("alice", ["7"], rawOf({ type: "track", event: 1, anonymousId: 70 })));
  assert.ok(deletes("alice", ["-3"], rawOf({ type: "alias", previousId: -3 })));
});

test("items stored before ids-first (ids after other keys) are still found, wherever their ids are", () => {
  const old = [
    { type: "track", messageId: "m", userId: "alice" },
    { anonymousId: "dev-9", userId: "alice", type: "track" },
    { type: "track", anonymousId: "anon-alice", properties: { userId: "x" } },
    { userId: "", type: "track", anonymousId: "anon-alice" },
    { anonymousId: "dev-9", type: "alias", previousId: "prev-alice" },
  ];
  for (const item of old) assert.ok(deletes("alice", linked, rawOf(item, true)), JSON.stringify(item));
});

test("the over-deletion left (documented): an item without a userId first that names the ids only in nested data", () => {
  assert.ok(deletes("alice", linked, rawOf({ type: "track", anonymousId: "anon-zed", properties: { userId: "alice" } })));
  assert.ok(deletes("alice", linked, rawOf({ type: "track", anonymousId: "anon-zed", properties: { anonymousId: "anon-alice" } })));
  // An empty userId is absent (ingest/records/coerce.ts), so not written first: the item is anonymous.
  assert.ok(deletes("alice", linked, rawOf({ type: "track", userId: "", anonymousId: "anon-zed", properties: { userId: "alice" } })));
  assert.not.ok(
    deletes("alice", linked, rawOf({ userId: "", type: "track", anonymousId: "anon-zed", properties: { userId: "alice" } }, true)),
  );
  // An earlier release's item of carol, her userId after a linked id: deleted with alice.
  assert.ok(deletes("alice", linked, rawOf({ anonymousId: "anon-alice", userId: "carol" }, true)));
});

test("hostile ids (control characters, quotes, backslashes, 200 characters) match exactly, as userId and as linked ids", () => {
  const hostile = ('\u0001"\'\\\n\t\u0000\b\f\r é\u2028\\"' + "\u001f".repeat(200)).slice(0, 200);
  const user = ("u\"'\\\u0000\n" + "\u0002".repeat(200)).slice(0, 200);
  assert.ok(deletes(user, [hostile], rawOf({ type: "track", userId: user, event: 1 })));
  assert.ok(deletes(user, [hostile], rawOf({ type: "track", event: 1, userId: user }, true)));
  assert.ok(deletes(user, [hostile], rawOf({ type: "track", anonymousId: hostile, event: 1 })));
  assert.ok(deletes(user, [hostile], rawOf({ type: "alias", anonymousId: "x", previousId: hostile })));
  assert.not.ok(deletes(user, [hostile], rawOf({ type: "track", userId: user.slice(0, 199), event: 1 })));
  assert.not.ok(deletes(user, [hostile], rawOf({ type: "track", userId: "bob", anonymousId: hostile })));
  assert.not.ok(deletes(user, [hostile.slice(0, 199)], rawOf({ type: "track", anonymousId: hostile })));
});

test("the text ownRefused looks for is the one buildRejected writes: the userId first, then a comma or the end", () => {
  const sql = ownRefused('a"b');
  assert.match(sql, `startsWith(raw, '{"userId":"a\\\\"b",')`);
  assert.match(sql, `raw = '{"userId":"a\\\\"b"}'`);
  assert.ok(rawOf({ type: "track", event: 1, userId: 'a"b' }).startsWith('{"userId":"a\\"b",'));
  assert.is(rawOf({ userId: 'a"b' }), '{"userId":"a\\"b"}');
});

test("a hostile 200-character userId with 1,400 linked ids of control characters: every statement under max_query_size", () => {
  const user = "\u0001".repeat(200);
  const ids = [...Array(1_400).keys()].map((i) => `${i}-`.padEnd(200, "\u0001"));
  const targets = deletionTargets("db", "events", "w", user, ids, 1_800_000_000, "c1");
  for (const t of targets)
    assert.ok(Buffer.byteLength(t.mutation) < 262_144 - 10_000, `${t.table}: ${Buffer.byteLength(t.mutation)} bytes`);
  assert.ok(deletes(user, ids, rawOf({ type: "track", anonymousId: ids.at(-1)!, event: 1 })));
});

test.run();
