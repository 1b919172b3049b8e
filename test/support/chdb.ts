/**
 * Current ClickHouse through chdb-core, in-process in a Python child (test/support/chdb_sql.py), as an
 * Sql (deploy/setup/migrate.ts): the same migrate, queries and benchmark code run on it as on a server.
 * Statements run one at a time, in order. A statement ClickHouse refuses rejects with its message.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Sql } from "../../schemas/clickhouse/client";
import { ROOT } from "./paths";

const script = join(ROOT, "test", "support", "chdb_sql.py");

/** A chdb session; `close()` ends the child. */
export class Chdb implements Sql {
  /** The ClickHouse version chdb embeds, e.g. 26.9.2.1. */
  version = "";
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: ((line: string) => void)[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private readonly ready: Promise<void>;

  /** `path`: a data directory to keep; a temporary one when absent. */
  constructor(path?: string) {
    this.child = spawn("python3", [script, ...(path === undefined ? [] : [path])], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    this.child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    const lines = createInterface({ input: this.child.stdout });
    lines.on("line", (line) => this.answers.shift()?.(line));
    this.ready = new Promise((resolve, reject) => {
      // The first line is the version; a child that exits first answers it with its error.
      this.answers.push((line) => {
        const answer = JSON.parse(line) as { version?: string; error?: string };
        if (answer.version === undefined) reject(new Error(answer.error ?? `chdb answered no version: ${line}`));
        else {
          this.version = answer.version;
          resolve();
        }
      });
      this.child.on("exit", (code) => {
        const pending = this.answers.splice(0);
        for (const answer of pending) answer(JSON.stringify({ error: `chdb exited (${code}): ${stderr}` }));
        reject(new Error(`chdb exited (${code}): ${stderr}`));
      });
    });
    this.ready.catch(() => {});
  }

  /** Resolves once the session is up, with its version. */
  async start(): Promise<string> {
    await this.ready;
    return this.version;
  }

  async command(query: string): Promise<void> {
    await this.rows(query);
  }

  rows<T>(query: string): Promise<T[]> {
    const run = this.queue.then(async () => {
      await this.ready;
      const line = await new Promise<string>((resolve) => {
        this.answers.push(resolve);
        this.child.stdin.write(JSON.stringify({ sql: query }) + "\n");
      });
      const answer = JSON.parse(line) as { rows?: T[]; error?: string };
      if (answer.error !== undefined) throw new Error(answer.error);
      return answer.rows ?? [];
    });
    this.queue = run.catch(() => {});
    return run;
  }

  /** Ends the session (its temporary data directory goes with it). */
  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.stdin.end();
    await exited;
  }
}
