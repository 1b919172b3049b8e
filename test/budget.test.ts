import { test } from "uvu";
import * as assert from "uvu/assert";
import { bytesToReserve, InflightBudget } from "../ingest/budget";

test("reservations and the producer's held bytes share one budget; a release frees exactly once", () => {
  let producer = 0;
  const budget = new InflightBudget(1_000, () => producer);
  const first = budget.reserve(600);
  assert.ok(first);
  assert.is(budget.reserve(500), undefined, "600 + 500 is over 1,000");
  const second = budget.reserve(400);
  assert.ok(second, "600 + 400 fits exactly");
  first!();
  first!();
  assert.is(budget.held, 400, "a second release changes nothing");
  producer = 500;
  assert.is(budget.reserve(200), undefined, "400 reserved + 500 held by the producer + 200 is over");
  producer = 0;
  assert.ok(budget.reserve(200));
});

test("a body reserves its Content-Length, or the whole request limit when compressed or unsized", () => {
  assert.is(bytesToReserve("1200", "", 512_000), 1_200);
  assert.is(bytesToReserve("1200", "identity", 512_000), 1_200);
  assert.is(bytesToReserve("9999999", "", 512_000), 512_000, "never more than the limit: the parser refuses past it");
  assert.is(bytesToReserve("1200", "gzip", 512_000), 512_000);
  assert.is(bytesToReserve("", "", 512_000), 512_000, "chunked");
  assert.is(bytesToReserve("abc", "", 512_000), 512_000);
});

test.run();
