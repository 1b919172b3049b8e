/**
 * The destinations topic's state as the operations read it (deploy/commands/destination-view.ts):
 * a record applied (a destination kept, a tombstone or a stranger's value removing it), and the
 * followed view's bookkeeping of how far it read (reached only when every partition with records
 * was applied up to its end offset).
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import type { WebhookDestination } from "../../../../schemas/destinations";
import { applyDestinationRecord, FollowedDestinations } from "../../../../deploy/commands/destination-view";
import { webhookDestination } from "../../../support/admin-fixtures";

const destination = (destinationId: string, workspaceId = "ws1") => webhookDestination(destinationId, workspaceId);
const value = (d: unknown) => Buffer.from(JSON.stringify(d));

test("a destination is kept under its id; a tombstone, another id's value or a value that is not one removes it", () => {
  const into = new Map<string, WebhookDestination>();
  applyDestinationRecord(into, "a", value(destination("a")));
  applyDestinationRecord(into, "b", value(destination("b")));
  assert.equal([...into.keys()], ["a", "b"]);
  assert.is(into.get("a")!.url, "http://127.0.0.1:9/hook");
  applyDestinationRecord(into, "a", null);
  assert.not.ok(into.has("a"), "a tombstone removes");
  applyDestinationRecord(into, "b", value(destination("c")));
  assert.not.ok(into.has("b"), "a value naming another id is not believed");
  applyDestinationRecord(into, "c", value(destination("c")));
  applyDestinationRecord(into, "c", Buffer.from("{not json"));
  assert.equal(into.size, 0);
});

test("the followed view has reached the ends only once every partition holding records was applied that far", () => {
  const view = new FollowedDestinations("events-destinations");
  const ends = [
    { partition: 0, high: "3" },
    { partition: 1, high: "0" },
  ];
  assert.not.ok(view.reached(ends), "nothing applied");
  view.apply("a", value(destination("a")), { partition: 0, offset: "1" });
  assert.not.ok(view.reached(ends), "offset 2 of partition 0 not yet applied");
  view.apply("a", null, { partition: 0, offset: "2" });
  assert.ok(view.reached(ends), "partition 1 is empty: nothing to wait for");
  assert.not.ok(view.reached([...ends, { partition: 2, high: "1" }]), "a partition never read");
  assert.ok(view.reached([{ partition: 0, high: "2" }]), "ends passed are reached too");
});

test.run();
