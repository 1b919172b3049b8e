/**
 * What the delivery scenarios (deliver-isolation and deliver-kill in test/faults/node/) and the delivery benchmark
 * (test/bench/deliveries.ts) share: HTTP receivers on 127.0.0.1 that record what they got (by
 * messageId, with each arrival's delay from the message's `receivedAt`), can answer late or with
 * an error, and can close their port and open it again; the delivery process of a LiveStack; a
 * destination added with the real CLI; and percentiles.
 */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { waitFor, type LiveStack, type Service } from "./harness";

/** One delivered message as a receiver saw it: when it arrived (ms since the epoch) and its delay from receipt, ms. */
export interface Arrival {
  messageId: string;
  at: number;
  ms: number;
}

/** What a receiver reads of each message. */
type Sent = { messageId: string; receivedAt: string };

/** The messages of a body: one message, or `{"batch": [...]}`. */
function messagesOf(body: Buffer): Sent[] {
  const parsed = JSON.parse(body.toString()) as { batch?: Sent[] };
  return parsed.batch ?? [parsed as Sent];
}

/** A webhook receiver on 127.0.0.1 (see the module comment). */
export class Receiver {
  /** Deliveries (2xx answers) per messageId. */
  readonly got = new Map<string, number>();
  /** Every message answered 2xx, in order of arrival (only when `record` is on). */
  readonly arrivals: Arrival[] = [];
  /** Messages answered 2xx, duplicates included. */
  messages = 0;
  /** Requests received, whatever the answer. */
  requests = 0;
  /** The status of the answer to a request carrying these messageIds. */
  status: (messageIds: string[]) => number = () => 200;
  /** How long each answer waits, ms. */
  delayMs = 0;
  port = 0;
  private server: Server | undefined;

  /** `record` off: only counts (the benchmark), no per-message bookkeeping. */
  constructor(private readonly record = true) {}

  /** The URL a destination posts to. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Listens on `port` (0: a free one, kept for reopening). */
  async start(port = this.port): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.requests++;
        const messages = messagesOf(Buffer.concat(chunks));
        const status = this.status(messages.map((m) => m.messageId));
        const reply = () => {
          if (status >= 200 && status < 300) this.take(messages);
          res.writeHead(status, { "content-type": "application/json" }).end(`{"status":${status}}`);
        };
        if (this.delayMs > 0) setTimeout(reply, this.delayMs);
        else reply();
      });
    });
    server.keepAliveTimeout = 30_000;
    server.listen(port, "127.0.0.1");
    await once(server, "listening");
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  /** Closes the port and every connection: a destination's attempts are then refused. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  /** Counts the messages of a delivered body. */
  private take(messages: Sent[]): void {
    const now = Date.now();
    this.messages += messages.length;
    if (!this.record) return;
    for (const m of messages) {
      this.got.set(m.messageId, (this.got.get(m.messageId) ?? 0) + 1);
      this.arrivals.push({ messageId: m.messageId, at: now, ms: now - Date.parse(m.receivedAt) });
    }
  }

  /** Of `ids`: how many arrived, how many more than once, and the deliveries beyond the first. */
  count(ids: Iterable<string>): { sent: number; delivered: number; duplicates: number; extra: number } {
    let sent = 0;
    let delivered = 0;
    let duplicates = 0;
    let extra = 0;
    for (const id of ids) {
      sent++;
      const n = this.got.get(id) ?? 0;
      if (n > 0) delivered++;
      if (n > 1) duplicates++;
      extra += Math.max(0, n - 1);
    }
    return { sent, delivered, duplicates, extra };
  }

  /** Waits until every one of `ids` arrived; throws after `timeoutMs` with the count so far. */
  async all(ids: readonly string[], timeoutMs: number): Promise<void> {
    await waitFor(
      `${ids.length} deliveries to ${this.url}`,
      async () => (ids.every((id) => this.got.has(id)) ? true : undefined),
      timeoutMs,
    ).catch((error: Error) => {
      throw new Error(`${error.message} (${this.count(ids).delivered} arrived)`);
    });
  }
}

/** The nearest-rank percentile `p` (0-1) of `values`; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))]!;
}

/** A running delivery process of a stack and its HTTP port. */
export interface Deliverer {
  service: Service;
  port: number;
}

/** Starts `sink/deliver/main.js` of `stack` (its own group prefix `prefix`) and waits until it listens. */
export async function startDeliver(stack: LiveStack, prefix: string, extra: Record<string, string> = {}): Promise<Deliverer> {
  const service = stack.spawn("sink/deliver/main.js", { DELIVER_HTTP_PORT: "0", DELIVER_GROUP_PREFIX: prefix, ...extra });
  const port = await waitFor(
    "deliver listening",
    async () => {
      if (service.child.exitCode !== null) throw new Error(`deliver exited:\n${service.output()}`);
      const line = service
        .output()
        .split("\n")
        .find((l) => l.includes('"msg":"deliver listening"'));
      return line === undefined ? undefined : (JSON.parse(line) as { port: number }).port;
    },
    60_000,
  );
  return { service, port };
}

/** Waits until `deliverer` logged "destination delivering" for `id` (its consumer joined its group) at least `times` times. */
export async function delivering(deliverer: Deliverer, id: string, times = 1, timeoutMs = 60_000): Promise<void> {
  const lines = () =>
    deliverer.service
      .output()
      .split("\n")
      .filter((l) => l.includes('"msg":"destination delivering"') && l.includes(`"destination":"${id}"`)).length;
  await waitFor(`destination ${id} delivering`, async () => (lines() >= times ? true : undefined), timeoutMs);
}

/** Adds a webhook destination of ws-test with the real CLI (`cli destinations add`); its id. Throws on a non-zero exit. */
export async function addDestination(stack: LiveStack, url: string, ...options: string[]): Promise<string> {
  const run = stack.spawn("deploy/cli.js", {}, ["destinations", "add", "ws-test", "webhook", url, ...options]);
  const { code } = await run.exited;
  const id = run
    .output()
    .split("\n")
    .find((line) => /^d-[0-9a-f]{8}$/.test(line));
  if (code !== 0 || id === undefined) throw new Error(`destinations add exited ${code}:\n${run.output()}`);
  return id;
}

/** A sample of a delivery process's metric: the sum of the lines of `name` whose labels contain every one of `labels`. */
export async function metricSum(port: number, name: string, labels: string[] = []): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

/**
 * Steady traffic for a delivery scenario: `perTick` track events of `userId` posted to the
 * stack's /v1/batch every `tickMs` (on schedule: a late answer does not slow the pace down) until
 * stopped. Only messages answered 200 count, in order of their posts.
 */
export class Paced {
  /** messageIds answered 200. */
  readonly ids: string[] = [];
  /** Posts not answered 200 (none expected: the ingest is not at fault here). */
  failures = 0;
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly stack: LiveStack,
    private readonly userId: string,
    private readonly perTick: number,
    private readonly tickMs: number,
  ) {}

  /** Starts posting. */
  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  /** Stops, and waits for the posts under way. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all(this.inFlight);
  }

  /** Posts for `seconds`, then stops; the messageIds answered 200 meanwhile. */
  async for(seconds: number): Promise<string[]> {
    const from = this.ids.length;
    this.start();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    await this.stop();
    return this.ids.slice(from);
  }

  private async run(): Promise<void> {
    const started = Date.now();
    for (let tick = 0; this.running; tick++) {
      const post = this.post().finally(() => this.inFlight.delete(post));
      this.inFlight.add(post);
      const wait = started + (tick + 1) * this.tickMs - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }

  private async post(): Promise<void> {
    const batch = Array.from({ length: this.perTick }, () => ({
      type: "track",
      event: "Delivery Scenario",
      userId: this.userId,
      messageId: randomUUID(),
      properties: { plan: "pro", amount: 42 },
    }));
    const answer = await this.stack.post("/v1/batch", { batch }).catch(() => undefined);
    if (answer?.status === 200) this.ids.push(...batch.map((m) => m.messageId));
    else this.failures++;
  }
}
