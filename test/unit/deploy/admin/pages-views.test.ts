/**
 * The admin pages' browser code, part 2 (deploy/admin/pages-views.ts), its pure parts run here in
 * Node: durations, a destination's health as a line ("health unknown" without the route), and the
 * subject ids of a deletion request. The components run in Chromium: test/live/admin-pages.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { age, healthText, subjectIdsOf, type DestinationHealth } from "../../../../deploy/admin/pages-views";

const views = suite("admin pages: browser code, part 2");

const HEALTH: DestinationHealth = {
  destinationId: "d-1",
  waiting: 3,
  oldestWaitingSeconds: 90,
  delivered: 12,
  retried: 2,
  failed: 1,
  failuresKept: 1,
  reportedAt: "2026-03-01T12:00:00.000Z",
};

views("age: seconds, minutes, hours, days", () => {
  assert.equal([age(42), age(600), age(10_800), age(259_200)], ["42 s", "10 min", "3 h", "3 d"]);
});

views("healthText: 404 is health unknown; an answer names each count, the oldest only while some wait, and the report", () => {
  assert.is(healthText(404, undefined), "health unknown");
  assert.is(
    healthText(200, HEALTH),
    "delivered 12 · retried 2 · failed 1 (last 15 min) · 3 waiting (oldest 90 s) · 1 failures kept · reported 2026-03-01 12:00:00",
  );
  assert.match(healthText(200, { ...HEALTH, waiting: 0, oldestWaitingSeconds: 0 }), "· 0 waiting ·");
  assert.match(healthText(200, { ...HEALTH, reportedAt: null }), /no delivery process reported$/);
});

views("subjectIdsOf: one a line, trimmed, blank lines dropped", () => {
  assert.equal(subjectIdsOf(" u1\n\nu2 \r\n  \n"), ["u1", "u2"]);
  assert.equal(subjectIdsOf(""), []);
});

views.run();
