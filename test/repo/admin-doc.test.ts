/**
 * docs/API.md's admin part is checked against the admin API's OpenAPI document
 * (deploy/admin/openapi.ts, built from the same route table as the server): its table lists every
 * operation of the document, with its method, path and scope, and nothing else.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { adminOpenapi } from "../../deploy/admin/openapi";
import { ROOT } from "../support/paths";

/** The rows of the table under "## The admin API": `METHOD /path scope operationId`, in order. */
export function documentedOperations(markdown: string): string[] {
  const start = markdown.indexOf("## The admin API");
  if (start < 0) return [];
  const end = markdown.indexOf("\n## ", start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  const rows: string[] = [];
  for (const line of section.split("\n")) {
    const cells = /^\| (GET|POST|PUT|DELETE) \| `([^`]+)` \| (\w+) \| `([\w.-]+)` \|$/.exec(line);
    if (cells) rows.push(`${cells[1]} /admin/v1${cells[2]} ${cells[3]} ${cells[4]}`);
  }
  return rows;
}

/** The operations of the document, as documentedOperations writes them. */
function servedOperations(): string[] {
  const doc = adminOpenapi("test") as { paths: Record<string, Record<string, { "x-scope": string; operationId: string }>> };
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => `${method.toUpperCase()} ${path} ${op["x-scope"]} ${op.operationId}`),
  );
}

test("documentedOperations reads the table's rows, and only the admin section's (the check can fail)", () => {
  const text = "## The admin API\n| GET | `/tokens` | operator | `tokens.list` |\n| bad row |\n## Next\n| GET | `/x` | any | `x.y` |\n";
  assert.equal(documentedOperations(text), ["GET /admin/v1/tokens operator tokens.list"]);
  assert.equal(documentedOperations("no section"), []);
});

test("docs/API.md lists exactly the operations the admin API's document describes", () => {
  const documented = documentedOperations(readFileSync(join(ROOT, "docs/API.md"), "utf8"));
  const served = servedOperations();
  assert.ok(served.length >= 20, "the document has the admin routes");
  assert.equal(
    documented.filter((d) => !served.includes(d)),
    [],
    "rows of API.md that the document does not have (or with another scope)",
  );
  assert.equal(
    served.filter((s) => !documented.includes(s)),
    [],
    "operations of the document missing from API.md",
  );
});

test.run();
