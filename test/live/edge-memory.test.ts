/**
 * Live, default settings (32 MiB in-flight budget, 10 s body timeout): the ingest's memory while
 * hostile bodies arrive and keyed traffic (Basic writeKey, 100-message batches, 4 at a time) is
 * served. (a) 80 connections posting 500 KB bodies of empty objects (`{"batch":[{},{},...]}`,
 * which JSON.parse makes into about 10 MB) back to back, the writeKey in the body, then the same
 * with it in a header; (b) 100 unauthenticated sockets announcing 500 KB and trickling a byte a
 * second. Prints each phase's figures (docs/PERFORMANCE.md quotes them); asserts that keyed
 * traffic is served and that the peak RSS stays far under the Kubernetes limit (512 MiB). A
 * first phase of keyed traffic alone gives the figures to compare with.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { basic, LiveStack } from "../support/harness";
import { keyedTraffic } from "../support/keyed-traffic";

const stack = new LiveStack();
const edge = suite("ingest memory under hostile bodies (live)");

edge.before(() => stack.start());
edge.after(() => stack.stop());

/** VmRSS of a process, MB. */
function rss(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

/** Samples a process's RSS every 20 ms until stopped; returns the largest sample, MB. */
function peakRss(pid: number): () => number {
  // Resets the kernel's high-water mark too (clear_refs 5), so VmHWM covers this phase alone.
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
  let peak = rss(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rss(pid))), 20);
  return () => {
    clearInterval(timer);
    const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
    return Math.max(peak, hwm);
  };
}

/**
 * The flood's own process (so its work does not delay the keyed traffic measured here): 80
 * connections posting about 500 KB of empty objects (`{"writeKey":argv[2],"batch":[{},...]}`,
 * no writeKey when argv[2] is empty) to argv[1] back to back for argv[4] ms, with argv[3]'s
 * headers; prints the statuses they got as JSON.
 */
const FLOOD = `
const [url, writeKey, headers, ms] = [process.argv[1], process.argv[2], JSON.parse(process.argv[3]), Number(process.argv[4])];
const body = (writeKey ? '{"writeKey":"' + writeKey + '","batch":[' : '{"batch":[') + Array(166000).fill("{}").join(",") + "]}";
const statuses = {};
const until = Date.now() + ms;
const loop = async () => {
  while (Date.now() < until) {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
    await response.arrayBuffer();
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
  }
};
Promise.all(Array.from({ length: 80 }, loop)).then(() => console.log(JSON.stringify(statuses)));
`;

/** Runs FLOOD (the writeKey in the body, or "") with `headers` for `ms`; its statuses. */
async function flood(writeKey: string, headers: Record<string, string>, ms: number): Promise<Record<string, number>> {
  const child = spawn(process.execPath, ["-e", FLOOD, `${stack.base}/v1/batch`, writeKey, JSON.stringify(headers), String(ms)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  await once(child, "exit");
  return JSON.parse(out) as Record<string, number>;
}

/** Runs `load` while keyed traffic flows; prints and returns the phase's figures. */
async function phase(name: string, load: () => Promise<string>) {
  const pid = stack.ingest!.child.pid!;
  const before = rss(pid);
  const peak = peakRss(pid);
  let stopTraffic!: () => void;
  const traffic = keyedTraffic(stack, { messages: 100, loops: 4 }, new Promise<void>((resolve) => (stopTraffic = resolve)));
  const loadFigures = await load();
  stopTraffic();
  const keyed = await traffic;
  const top = peak();
  console.log(
    `\n  ${name}: ingest RSS ${before.toFixed(0)} MB before, peak ${top.toFixed(0)} MB; ${loadFigures}; keyed batches ${JSON.stringify(keyed.statuses)}, p99 ${keyed.p99.toFixed(0)} ms`,
  );
  return { before, peak: top, keyed };
}

edge("(a) 80 parallel 500 KB bodies of empty objects, the key in the body, then in a header", async () => {
  await stack.marker();
  const alone = await phase("keyed traffic alone", async () => {
    await new Promise((r) => setTimeout(r, 6_000));
    return "no flood";
  });
  assert.equal(Object.keys(alone.keyed.statuses), ["200"]);
  const inBody = await phase("(a) 80 x 500 KB of {}, writeKey in the body", async () => {
    const statuses = await flood("other-key", {}, 8_000);
    return `flood answers ${JSON.stringify(statuses)}`;
  });
  assert.equal(Object.keys(inBody.keyed.statuses), ["200"], "keyed traffic keeps its half of the budget");
  assert.ok(inBody.peak < 300, `peak RSS ${inBody.peak.toFixed(0)} MB`);
  const inHeader = await phase("(a) 80 x 500 KB of {}, writeKey in a header", async () => {
    const statuses = await flood("", { authorization: basic("other-key") }, 8_000);
    return `flood answers ${JSON.stringify(statuses)}`;
  });
  assert.ok((inHeader.keyed.statuses["200"] ?? 0) > 0, "keyed traffic is served between the flood's bodies");
  assert.ok(inHeader.peak < 300, `peak RSS ${inHeader.peak.toFixed(0)} MB`);
});

edge("(b) 100 slow unauthenticated sockets announcing 500 KB", async () => {
  const { hostname, port } = new URL(stack.base);
  const result = await phase("(b) 100 slow unauthenticated sockets", async () => {
    const closed: Promise<number>[] = [];
    const answered: number[] = [];
    const sockets: Socket[] = [];
    for (let i = 0; i < 100; i++) {
      const socket = connect(Number(port), hostname);
      const started = Date.now();
      socket.on("error", () => {});
      socket.once("data", (d: Buffer) => answered.push(d.toString().startsWith("HTTP/1.1 408") ? Date.now() - started : -1));
      closed.push(new Promise((resolve) => socket.on("close", () => resolve(Date.now() - started))));
      socket.write(`POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n{"batch":[`);
      const timer = setInterval(() => (socket.writable ? socket.write(" ") : clearInterval(timer)), 1_000);
      socket.on("close", () => clearInterval(timer));
      sockets.push(socket);
    }
    const ms = await Promise.all(closed.map((c) => Promise.race([c, new Promise<number>((r) => setTimeout(() => r(-1), 20_000))])));
    sockets.forEach((s) => s.destroy());
    return `slow sockets answered 408 after ${Math.min(...answered)}-${Math.max(...answered)} ms (${answered.length} answers), closed after ${Math.min(...ms)}-${Math.max(...ms)} ms`;
  });
  assert.equal(Object.keys(result.keyed.statuses), ["200"]);
  assert.ok(result.peak < 300, `peak RSS ${result.peak.toFixed(0)} MB`);
});

edge.run();
