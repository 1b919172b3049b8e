import { test } from "uvu";
import * as assert from "uvu/assert";
import { CATALOG_KEYS_PER_OBJECT, CATALOG_KEY_CHARS, catalogKeys } from "../../../schemas/catalog-keys";

test("catalogKeys: one <source>:<type>:<key> per top-level key, JSON type names", () => {
  assert.equal(
    catalogKeys({ plan: "pro", revenue: 9.5, paid: true, tags: ["a"], address: { c: 1 }, gone: null }, undefined, { "a:b.c": "x" }),
    [
      "properties:string:plan",
      "properties:number:revenue",
      "properties:boolean:paid",
      "properties:array:tags",
      "properties:object:address",
      "properties:null:gone",
      "context:string:a:b.c",
    ],
  );
  assert.equal(catalogKeys(null, { email: "e" }, "not an object"), ["traits:string:email"]);
  assert.equal(catalogKeys([1, 2], undefined, undefined), []);
});

test("catalogKeys is bounded: keys per object and key length", () => {
  const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]));
  assert.is(catalogKeys(many, many, many).length, 3 * CATALOG_KEYS_PER_OBJECT);
  assert.equal(catalogKeys({ ["x".repeat(CATALOG_KEY_CHARS + 1)]: 1, ok: 1 }, undefined, undefined), ["properties:number:ok"]);
});

test.run();
