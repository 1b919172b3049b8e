/**
 * Where `dlq replay` sends a dead letter (deploy/commands/replay.ts).
 */
import { test } from "uvu";
import * as assert from "uvu/assert";
import { replayTopic } from "../../../../deploy/commands/replay";

test("a dead letter is replayed to the topic it came from: events or rejected items", () => {
  const config = { topic: "events", rejectedTopic: "events-rejected" };
  assert.is(replayTopic("events-rejected/2/1234", config), "events-rejected");
  assert.is(replayTopic("events/0/7", config), "events");
  assert.is(replayTopic(undefined, config), "events", "no header: the events topic");
  assert.is(replayTopic("some-other-topic/1/1", config), "events");
});

test.run();
