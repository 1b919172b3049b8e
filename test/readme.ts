/**
 * The README's example queries: its ```sql blocks, each named by its first line without `-- `.
 * Read at run time, so the tests and `npm run bench:queries` run what the README shows.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The README's queries in README order. */
export function readmeQueries(): { name: string; sql: string }[] {
  const readme = readFileSync(join(__dirname, "..", "..", "README.md"), "utf8");
  return [...readme.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => ({
    name: m[1]!.split("\n")[0]!.replace(/^--\s*/, ""),
    sql: m[1]!.trim(),
  }));
}
