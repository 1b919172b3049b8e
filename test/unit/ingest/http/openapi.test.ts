import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { openapiDocument } from "../../../../ingest/http/openapi";
import { samples } from "../../../support/samples";

const doc = openapiDocument("test") as { paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, "openapi");
const schema = (name: string) => ajv.getSchema(`openapi#/components/schemas/${name}`)!;

test("the document is OpenAPI 3.1 with both route families, the SDKs' short paths and the settings", () => {
  assert.is((doc as { openapi?: string }).openapi, "3.1.0");
  const paths = Object.keys(doc.paths).sort();
  // 7 routes under each prefix, analytics.js's 6 letters, /v1/b, /v1/import, and the settings.
  assert.is(paths.length, 14 + 8 + 1);
  for (const path of [
    "/api/public/apps/identify",
    "/api/public/apps/batch",
    "/v1/alias",
    "/v1/t",
    "/v1/b",
    "/v1/import",
    "/v1/projects/{writeKey}/settings",
  ]) {
    assert.ok(paths.includes(path), path);
  }
});

test("the spec's samples validate against the document", () => {
  for (const [name, body] of [
    ["IdentifyBody", samples.identify],
    ["BatchBody", samples.batch],
    ["BatchBody", samples.everyType],
  ] as const) {
    const validate = schema(name);
    assert.ok(validate(body), `${name}: ${JSON.stringify(validate.errors)}`);
  }
});

test("the document refuses what the server refuses", () => {
  assert.not.ok(schema("TrackBody")({ messageId: "m", userId: "u" }), "track without event");
  assert.not.ok(schema("TrackBody")({ messageId: "m", event: "E" }), "neither userId nor anonymousId");
  assert.not.ok(schema("GroupBody")({ messageId: "m", userId: "u" }), "group without groupId");
  assert.not.ok(schema("BatchBody")({ batch: [] }), "empty batch");
  assert.not.ok(schema("BatchBody")({ batch: [{ type: "purchase", messageId: "m", userId: "u" }] }), "unknown type");
  assert.not.ok(schema("IdentifyBody")({ messageId: "m", userId: "u", timestamp: "yesterday" }), "bad date-time");
  assert.ok(schema("TrackBody")({ messageId: "m", anonymousId: "a", event: "E" }), "anonymousId alone is enough");
});

test.run();
