/**
 * The admin API's OpenAPI document (deploy/admin/openapi.ts): version 3.1.0, every route of
 * ADMIN_ROUTES with its operationId and scope, every `$ref` resolving to a component schema, and
 * a parameter for each `{name}` of a path.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminOpenapi } from "../../../../deploy/admin/openapi";
import { ADMIN_ROUTES } from "../../../../deploy/admin/routes";

const openapi = suite("admin openapi");

interface Operation {
  operationId: string;
  "x-scope": string;
  parameters?: { name: string; in: string; required: boolean }[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
}
interface Document {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

const doc = adminOpenapi("x") as Document;

/** Every `$ref` anywhere in `value`. */
function refsOf(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsOf(v, found);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") found.push(v);
      else refsOf(v, found);
    }
  }
  return found;
}

openapi("an OpenAPI 3.1.0 document of the given version, with bearer security", () => {
  assert.is(doc.openapi, "3.1.0");
  assert.is(doc.info.version, "x");
  assert.ok(doc.components.securitySchemes.bearer);
});

openapi("every route is there with its operationId and scope, and nothing else is", () => {
  for (const route of ADMIN_ROUTES) {
    const operation = doc.paths[route.path]?.[route.method];
    assert.ok(operation, `${route.method} ${route.path}`);
    assert.is(operation!.operationId, route.operationId);
    assert.is(operation!["x-scope"], route.scope);
    assert.ok(operation!.responses[String(route.status)], `${route.operationId} answers ${route.status}`);
    assert.is(operation!.requestBody !== undefined, route.body !== undefined, route.operationId);
  }
  const operations = Object.values(doc.paths).flatMap((p) => Object.keys(p));
  assert.is(operations.length, ADMIN_ROUTES.length);
});

openapi("every $ref resolves to a component schema", () => {
  const refs = refsOf(doc);
  assert.ok(refs.length > ADMIN_ROUTES.length);
  const dangling = [...new Set(refs)].filter((ref) => {
    const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
    return name === undefined || doc.components.schemas[name] === undefined;
  });
  assert.equal(dangling, [], "every $ref names a component schema");
  for (const name of ["AdminError", "TokenInput", "KeyList", "ListedKey", "RegulationInput"]) assert.ok(doc.components.schemas[name], name);
});

openapi("each {name} of a path is a required path parameter; query parameters are optional", () => {
  for (const route of ADMIN_ROUTES) {
    const parameters = doc.paths[route.path]![route.method]!.parameters ?? [];
    const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    assert.equal(
      parameters.filter((p) => p.in === "path").map((p) => p.name),
      names,
      route.operationId,
    );
    for (const p of parameters) assert.is(p.required, p.in === "path");
    assert.equal(
      parameters.filter((p) => p.in === "query").map((p) => p.name),
      route.query ?? [],
    );
  }
  assert.ok(doc.paths["/admin/v1/workspaces/{workspaceId}/keys/{keyId}"]!.delete!.parameters!.length === 2);
});

openapi.run();
