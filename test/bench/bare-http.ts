/**
 * The HTTP ceiling: a bare node:http server that reads the body, JSON-parses it and answers 200
 * with an empty body, nothing else. Listens on 127.0.0.1 (port in argv[2], 0 for any) and prints
 * its port.
 */
import { createServer } from "node:http";

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    try {
      JSON.parse(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, { "content-length": "0" }).end();
    } catch {
      res.writeHead(400, { "content-length": "0" }).end();
    }
  });
});
server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  process.stdout.write(`${(server.address() as { port: number }).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
