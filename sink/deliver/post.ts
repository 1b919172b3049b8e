/**
 * One delivery attempt: a POST of a JSON body to a destination's URL with node:http or node:https,
 * and what came back (sink/deliver/answer.ts reads it). Each attempt is bounded: the whole
 * exchange within `timeoutMs`, the answer read up to `maxAnswerBytes` (the rest is not read);
 * a redirect is never followed (node:http does not); every address the host resolves to is
 * checked as the connection is made (sink/deliver/address.ts), so DNS cannot steer a request to a
 * refused address. Never throws: a failure to connect, a timeout or a reset is an AttemptResult.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { addressRefused } from "./address";
import type { AttemptResult } from "./answer";

/** Bounds of an attempt. */
export interface PostSettings {
  /** The whole exchange, ms (DELIVER_TIMEOUT_MS). */
  timeoutMs: number;
  /** Bytes of the answer read (the rest is dropped with the connection). */
  maxAnswerBytes: number;
  /** DESTINATIONS_ALLOW_LINK_LOCAL. */
  allowLinkLocal: boolean;
}

/** What an attempt gives: the result, the start of the answer's body (UTF-8), and its duration, ms. */
export interface Posted {
  result: AttemptResult;
  answer: string;
  ms: number;
}

// Keep-alive connections, per origin: a destination's next request skips the handshake.
const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 32 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 32 }) };

/** dns.lookup, then a refusal of any address the destination may not reach. */
function guardedLookup(allowLinkLocal: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, "", 0);
      const refused = addresses.find((a) => addressRefused(a.address, allowLinkLocal));
      if (refused !== undefined)
        return callback(Object.assign(new Error(`address ${refused.address} refused`), { code: "EREFUSEDADDRESS" }), "", 0);
      if (options.all === true) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** POSTs `body` to `url` with `headers` (see the module comment). */
export function postJson(url: string, headers: Record<string, string>, body: Buffer, settings: PostSettings): Promise<Posted> {
  const started = performance.now();
  const done = (result: AttemptResult, answer = ""): Posted => ({ result, answer, ms: performance.now() - started });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve(done({ error: "invalid URL" }));
  }
  const host = target.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0 && addressRefused(host, settings.allowLinkLocal)) return Promise.resolve(done({ error: `address ${host} refused` }));
  const https = target.protocol === "https:";
  return new Promise<Posted>((resolve) => {
    let settled = false;
    const finish = (posted: Posted) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(posted);
    };
    const send = https ? httpsRequest : httpRequest;
    const request = send(target, {
      method: "POST",
      agent: https ? agents.https : agents.http,
      lookup: guardedLookup(settings.allowLinkLocal),
      headers: { ...headers, "content-type": "application/json", "content-length": String(body.length) },
    });
    const timer = setTimeout(() => {
      request.destroy();
      finish(done({ error: `timeout after ${settings.timeoutMs} ms` }));
    }, settings.timeoutMs);
    request.on("error", (error: NodeJS.ErrnoException) => finish(done({ error: error.code ?? error.message })));
    request.on("response", (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      const result: AttemptResult = {
        status: response.statusCode ?? 0,
        ...(typeof response.headers["retry-after"] === "string" ? { retryAfter: response.headers["retry-after"] } : {}),
      };
      const end = () => finish(done(result, Buffer.concat(chunks).toString("utf8")));
      response.on("data", (chunk: Buffer) => {
        if (bytes < settings.maxAnswerBytes) chunks.push(chunk.subarray(0, settings.maxAnswerBytes - bytes));
        bytes += chunk.length;
        if (bytes >= settings.maxAnswerBytes) {
          response.destroy(); // the rest is not read: the status is the answer
          end();
        }
      });
      response.on("end", end);
      response.on("error", end);
      response.on("close", end);
    });
    request.end(body);
  });
}

/** Closes the kept-alive connections (at stop). */
export function closeConnections(): void {
  agents.http.destroy();
  agents.https.destroy();
}
