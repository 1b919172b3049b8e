/**
 * A request over node:http on a caller's keep-alive Agent, for tests of how the ingest and the
 * sink end their connections: fetch hides the socket, and these tests assert the `Connection`
 * header and the socket's close.
 */
import { type Agent, request } from "node:http";

/** One answer on a kept-alive connection. */
export interface KeepAliveAnswer {
  status: number;
  /** The answer's Connection header ("keep-alive", "close" or absent). */
  connection: string | undefined;
  /** Resolves when the socket the answer came on is closed (by either side). */
  socketClosed: () => Promise<void>;
}

/** POSTs `body` (JSON) to `url` on `agent`; rejects on a connection error (refused, reset). */
export function postKeepAlive(agent: Agent, url: string, body: string, headers: Record<string, string>): Promise<KeepAliveAnswer> {
  return keepAliveRequest(agent, url, "POST", { "content-type": "application/json", ...headers }, body);
}

/** GETs `url` on `agent`; rejects on a connection error (refused, reset). */
export function getKeepAlive(agent: Agent, url: string): Promise<KeepAliveAnswer> {
  return keepAliveRequest(agent, url, "GET", {});
}

function keepAliveRequest(
  agent: Agent,
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<KeepAliveAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers });
    req.on("error", reject);
    req.on("response", (res) => {
      const { socket } = res;
      const socketClosed = () => (socket.destroyed ? Promise.resolve() : new Promise<void>((done) => socket.once("close", () => done())));
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, socketClosed }));
      res.on("error", reject);
    });
    req.end(body);
  });
}
