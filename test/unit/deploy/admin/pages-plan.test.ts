/**
 * The admin pages' browser code, part 3 (deploy/admin/pages-plan.ts), its pure parts run here in
 * Node: a stored violation as a line, a catalog row's label, and the plan's body for the editor.
 * The components run in Chromium: test/live/admin-pages.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { catalogLabel, planBodyText, violationText } from "../../../../deploy/admin/pages-plan";

const plan = suite("admin pages: browser code, part 3");

plan("violationText: path and message of a stored violation; anything else as stored", () => {
  assert.is(
    violationText('{"path":"/properties/total","keyword":"type","message":"must be number (got string)"}'),
    "/properties/total: must be number (got string)",
  );
  assert.is(violationText('{"path":"","keyword":"type","message":"must be object"}'), "/: must be object");
  assert.is(violationText("<img src=x onerror=alert(1)>"), "<img src=x onerror=alert(1)>");
  assert.is(violationText('{"path":1}'), '{"path":1}');
});

plan("catalogLabel: the event, else the name; an over-cap row says so", () => {
  const row = { workspace_id: "w", type: "track", event: "Signed Up", name: "", count: "1", first_seen: "", last_seen: "" };
  assert.is(catalogLabel(row), "Signed Up");
  assert.is(catalogLabel({ ...row, type: "page", event: "", name: "Home" }), "Home");
  assert.is(catalogLabel({ ...row, event: "", name: "2026-03-01", over_cap: 1 }), "(over the daily cap) 2026-03-01");
});

plan("planBodyText: the plan without its workspace, version and time, as indented JSON", () => {
  const text = planBodyText({ workspaceId: "w", version: 3, createdAt: "t", unplanned: "flag", violations: "flag", track: { A: {} } });
  assert.equal(JSON.parse(text), { unplanned: "flag", violations: "flag", track: { A: {} } });
  assert.match(text, '\n  "unplanned"');
});

plan.run();
