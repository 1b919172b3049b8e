/**
 * The example queries of docs/QUERIES.md: its ```sql blocks, each named by its first line without
 * `-- `. Read at run time, so the tests and `npm run bench:queries` run what docs/QUERIES.md shows.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./paths";

/** Every ```sql block of docs/QUERIES.md, in order. */
function docQueries(): { name: string; sql: string }[] {
  const readme = readFileSync(join(ROOT, "docs", "QUERIES.md"), "utf8");
  return [...readme.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => ({
    name: m[1]!.split("\n")[0]!.replace(/^--\s*/, ""),
    sql: m[1]!.trim(),
  }));
}

/** The example queries of docs/QUERIES.md, in their order there, but the property and plan queries. */
export function readmeQueries(): { name: string; sql: string }[] {
  return docQueries().filter((q) => !q.name.startsWith("property") && !q.name.startsWith("plan"));
}

/** The tracking plan queries of docs/QUERIES.md (named `plan: ...`): they read the violations column. */
export function planQueries(): { name: string; sql: string }[] {
  return docQueries().filter((q) => q.name.startsWith("plan"));
}

/** The property queries of docs/QUERIES.md (named `property: ...`): they read materialized key columns. */
export function propertyQueries(): { name: string; sql: string }[] {
  return docQueries().filter((q) => q.name.startsWith("property"));
}
