/** `destinations replay`'s arguments and its progress line. */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { progressLine, replayOptionsOf } from "../../../../deploy/commands/replay-range";
import { REPLAY_RATE } from "../../../../deploy/commands/deliveries";

/** Whether `text` holds a C0 or C1 control character (or DEL). */
const hasControl = (text: string) => [...text].some((c) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f));

test("a range with the defaults: the replay rate, five minutes of retries", () => {
  const parsed = replayOptionsOf(["--from", "2026-11-01T00:00:00Z", "--to", "2026-11-02T00:00:00Z"]);
  assert.equal(parsed, {
    ok: true,
    options: { fromMs: Date.UTC(2026, 10, 1), toMs: Date.UTC(2026, 10, 2), rate: REPLAY_RATE, maxWaitMs: 300_000 },
  });
});

test("--after resumes at a position; --rate and --max-wait-s are read", () => {
  const parsed = replayOptionsOf([
    "--from",
    "2026-11-01",
    "--to",
    "2026-11-02",
    "--after",
    "1761955201000/m%201/track",
    "--rate",
    "5",
    "--max-wait-s",
    "0",
  ]);
  assert.ok(parsed.ok);
  if (parsed.ok) {
    assert.equal(parsed.options.after, { receivedMs: 1761955201000, messageId: "m 1", type: "track" });
    assert.is(parsed.options.rate, 5);
    assert.is(parsed.options.maxWaitMs, 0);
  }
});

test("each usage error says what is wrong", () => {
  const error = (args: string[]) => {
    const parsed = replayOptionsOf(args);
    return parsed.ok ? "" : parsed.error;
  };
  assert.match(error(["--from", "2026-11-01"]), /--from and --to/);
  assert.match(error(["--from", "yesterday", "--to", "2026-11-02"]), /--from and --to/);
  assert.match(error(["--from", "2026-11-02", "--to", "2026-11-01"]), /before --to/);
  assert.match(error(["--from", "2026-11-01", "--to", "2026-11-02", "--after", "m1"]), /--after/);
  assert.match(error(["--from", "2026-11-01", "--to", "2026-11-02", "--rate", "0"]), /--rate/);
  assert.match(error(["--from", "2026-11-01", "--to", "2026-11-02", "--rate", "lots"]), /--rate/);
  assert.match(error(["--from", "2026-11-01", "--to", "2026-11-02", "--max-wait-s", "-1"]), /--max-wait-s/);
  assert.match(error(["--from", "2026-11-01", "--to", "2026-11-02", "--fast"]), /fast/);
});

test("the progress line: a bar of the share read, the counts, and the position to resume from", () => {
  const line = progressLine({ read: 50, delivered: 40, failed: 2, skipped: 8 }, 200, {
    receivedMs: 1761955201000,
    messageId: "m1",
    type: "track",
  });
  assert.is(line, "[#####---------------] 25% 50/200 read, 40 delivered, 2 failed, 8 skipped; position 1761955201000/m1/track");
  assert.match(progressLine({ read: 0, delivered: 0, failed: 0, skipped: 0 }, 0, undefined), /^\[#{20}\] 100% 0\/0 read.*position start$/);
});

test("a client's messageId cannot write to the operator's terminal through the progress line", () => {
  const messageId = "m\u001b[2K\u001b[1A\rposition 0/forged\u0007";
  const line = progressLine({ read: 1, delivered: 1, failed: 0, skipped: 0 }, 1, { receivedMs: 7, messageId, type: "track" });
  assert.not.ok(hasControl(line), "no control character");
  assert.ok(line.endsWith(`position 7/${encodeURIComponent(messageId)}/track`), line);
  const parsed = replayOptionsOf(["--from", "2026-11-01", "--to", "2026-11-02", "--after", line.split("position ")[1]!]);
  assert.ok(parsed.ok && parsed.options.after?.messageId === messageId, "the printed position resumes at that very message");
});

test.run();
