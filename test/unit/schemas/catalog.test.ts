import { test } from "uvu";
import * as assert from "uvu/assert";
import { CATALOG_KEYS_PER_OBJECT, CATALOG_KEY_CHARS, catalogKeys, catalogShape } from "../../../schemas/catalog";

test("catalogKeys: per top-level key its source's and JSON type's code letters, then the key", () => {
  assert.equal(
    catalogKeys({ plan: "pro", revenue: 9.5, paid: true, tags: ["a"], address: { c: 1 }, gone: null }, undefined, { "a:b.c": "x" }),
    ["psplan", "pnrevenue", "pbpaid", "patags", "poaddress", "pzgone", "csa:b.c"],
  );
  assert.equal(catalogKeys(null, { email: "e" }, "not an object"), ["tsemail"]);
  assert.equal(catalogKeys([1, 2], undefined, undefined), []);
});

test("catalogKeys is bounded: keys per object and key length", () => {
  const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]));
  assert.is(catalogKeys(many, many, many).length, 3 * CATALOG_KEYS_PER_OBJECT);
  assert.equal(catalogKeys({ ["x".repeat(CATALOG_KEY_CHARS + 1)]: 1, ok: 1 }, undefined, undefined), ["pnok"]);
});

test("catalogShape: one number per list of keys and types, within 53 bits; 0 for none", () => {
  const shape = catalogShape({ plan: "pro", revenue: 9.5 }, undefined, { ip: "1.2.3.4" });
  assert.ok(Number.isSafeInteger(shape) && shape > 0);
  // The values do not count; the keys, their types, sources and order do.
  assert.is(catalogShape({ plan: "free", revenue: 1 }, undefined, { ip: "5.6.7.8" }), shape);
  const others = [
    catalogShape({ plan: "pro", revenue: "9.5" }, undefined, { ip: "1.2.3.4" }),
    catalogShape({ plan: "pro" }, { revenue: 9.5 }, { ip: "1.2.3.4" }),
    catalogShape({ revenue: 9.5, plan: "pro" }, undefined, { ip: "1.2.3.4" }),
    catalogShape({ plan: "pro", revenue: 9.5 }, undefined, undefined),
    catalogShape({ planrevenue: "pro" }, undefined, { ip: "1.2.3.4" }),
  ];
  assert.is(new Set([shape, ...others]).size, others.length + 1);
  assert.is(catalogShape(undefined, null, "x"), 0);
  // The same caps as the list: a key too long or past the limit changes neither.
  const many = Object.fromEntries(Array.from({ length: CATALOG_KEYS_PER_OBJECT }, (_, i) => [`k${i}`, i]));
  assert.is(catalogShape({ ...many, extra: 1 }, undefined, undefined), catalogShape(many, undefined, undefined));
  assert.is(
    catalogShape({ ["x".repeat(CATALOG_KEY_CHARS + 1)]: 1, ok: 1 }, undefined, undefined),
    catalogShape({ ok: 1 }, undefined, undefined),
  );
});

test("catalogShape rarely collides: 100,000 distinct lists, 100,000 shapes", () => {
  const shapes = new Set<number>();
  for (let i = 0; i < 100_000; i++) shapes.add(catalogShape({ [`k${i}`]: 1, [`j${i % 7}`]: "s" }, undefined, undefined));
  assert.is(shapes.size, 100_000);
});

test.run();
