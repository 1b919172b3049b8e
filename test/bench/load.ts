/**
 * The load generator, run as its own process so it does not share the measured services' event
 * loop; 127.0.0.1 only, bounded in time. Each request's body is a template whose `__ID__`
 * placeholders become fresh messageIds, so every message is new. Two modes:
 * - rate 0: autocannon, `connections` closed loops as fast as the server answers (throughput);
 * - rate > 0: paced open loop, one request every 1/rate s whatever the answers do, each latency
 *   counted from its scheduled start (wrk2's way: waiting behind a slow answer counts). autocannon's
 *   own rate limit is not used for this: it sends each connection's quota at full speed at the top
 *   of every second, and its coordinated-omission correction assumes a 1 ms interval.
 * Reads its job from the JSON file named by argv[2]; prints the figures as one JSON line.
 */
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import autocannon from "autocannon";

/** What to run. */
export interface LoadJob {
  url: string;
  /** Request bodies with `__ID__` placeholders; requests cycle through them. */
  bodies: string[];
  headers: Record<string, string>;
  /** Closed loops (rate 0), or the most requests in flight at once (paced). */
  connections: number;
  seconds: number;
  /** Requests per second, paced; 0 is as fast as `connections` closed loops go. */
  rate: number;
  /**
   * Write keys in turn instead of `headers.authorization`: request i is sent with
   * `${prefix}${i % count}` (Basic auth, empty password), so `count` workspaces share the load.
   */
  keys?: { prefix: string; count: number };
}

/** The figures a phase reports. */
export interface LoadResult {
  requests: number;
  non2xx: number;
  errors: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  /**
   * Paced only: p99 of how late the generator sent a request after its scheduled start, ms (its
   * own timers and scheduling on a shared machine), and p99 from the send to the answer's end.
   */
  sendLagP99?: number;
  answerP99?: number;
  /** CPU seconds the load generator itself used (user + system). */
  cpuSeconds: number;
}

/** The Authorization header of request `i` when the job's keys rotate (Basic auth, empty password, as SDKs send it); undefined: `headers` as given. */
function rotatingAuthorization(job: LoadJob): ((i: number) => string) | undefined {
  const keys = job.keys;
  if (keys === undefined) return undefined;
  return (i) => `Basic ${Buffer.from(`${keys.prefix}${i % keys.count}:`).toString("base64")}`;
}

/** Bodies with fresh messageIds, in turn. */
function bodySource(bodies: string[]): () => string {
  const parts = bodies.map((b) => b.split("__ID__"));
  const prefix = `${process.pid.toString(36)}-${Date.now().toString(36)}`;
  let counter = 0;
  return () => {
    const pieces = parts[counter % parts.length]!;
    let body = pieces[0]!;
    for (let i = 1; i < pieces.length; i++) body += `${prefix}-${counter}-${i}` + pieces[i];
    counter++;
    return body;
  };
}

/** Closed loops with autocannon. */
async function closedLoop(job: LoadJob, nextBody: () => string): Promise<Omit<LoadResult, "cpuSeconds">> {
  const authorization = rotatingAuthorization(job);
  let sent = 0;
  const result = await autocannon({
    url: job.url,
    method: "POST",
    headers: job.headers,
    connections: job.connections,
    duration: job.seconds,
    requests: [
      {
        setupRequest: (req) =>
          authorization === undefined
            ? { ...req, body: nextBody() }
            : { ...req, body: nextBody(), headers: { ...req.headers, authorization: authorization(sent++) } },
      },
    ],
  });
  return {
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    reqPerSec: result.requests.total / job.seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

/** Paced open loop: request i starts at i/rate s; latency counts from that scheduled start. */
async function pacedLoop(job: LoadJob, nextBody: () => string): Promise<Omit<LoadResult, "cpuSeconds">> {
  const agent = new Agent({ keepAlive: true, maxSockets: job.connections });
  const authorization = rotatingAuthorization(job);
  let issued = 0;
  const url = new URL(job.url);
  const latencies: number[] = [];
  const sendLags: number[] = [];
  const answers: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const send = (scheduled: number) => {
    let sentAt = 0;
    const body = nextBody();
    const done = new Promise<void>((resolve) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          agent,
          headers: {
            ...job.headers,
            ...(authorization === undefined ? {} : { authorization: authorization(issued++) }),
            "content-length": Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            if (res.statusCode! < 200 || res.statusCode! >= 300) non2xx++;
            const now = performance.now();
            latencies.push(now - scheduled);
            answers.push(now - sentAt);
            resolve();
          });
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      sentAt = performance.now();
      sendLags.push(sentAt - scheduled);
      req.end(body);
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };
  const start = performance.now();
  const total = Math.floor(job.rate * job.seconds);
  let sent = 0;
  while (sent < total) {
    const now = performance.now();
    // Every request whose start time has come goes now (timers fire late; none is skipped).
    while (sent < total && start + (sent * 1000) / job.rate <= now) send(start + (sent++ * 1000) / job.rate);
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(inFlight);
  agent.destroy();
  for (const values of [latencies, sendLags, answers]) values.sort((a, b) => a - b);
  const at = (sorted: number[], p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! * 10) / 10;
  return {
    requests: total,
    non2xx,
    errors,
    reqPerSec: total / job.seconds,
    p50: at(latencies, 0.5),
    p99: at(latencies, 0.99),
    sendLagP99: at(sendLags, 0.99),
    answerP99: at(answers, 0.99),
  };
}

async function main(): Promise<void> {
  const job = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as LoadJob;
  if (!/^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(job.url)) throw new Error("load only goes to 127.0.0.1");
  const cpuAtStart = process.cpuUsage();
  const figures = job.rate > 0 ? await pacedLoop(job, bodySource(job.bodies)) : await closedLoop(job, bodySource(job.bodies));
  const used = process.cpuUsage(cpuAtStart);
  const out: LoadResult = { ...figures, cpuSeconds: (used.user + used.system) / 1e6 };
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error: unknown) => {
  process.stderr.write(String(error) + "\n");
  process.exit(1);
});
