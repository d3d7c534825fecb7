import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";

/** A local HTTP server of a fake platform. */
export interface FakeHttpServer {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  readonly url: string;
  readonly port: number;
  /** Cuts every connection and stops listening; safe to call twice. */
  close(): Promise<void>;
}

/** Reads a request body whole. */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Starts `handle` on a free local port. A handler that throws answers 500 with
 * `onError`'s body (the platform's error envelope) so a fake never hangs a client.
 */
export async function startHttpServer(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  onError: (res: ServerResponse, error: unknown) => void = (res) => {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  },
  /** A fixed port (a platform coming back at the address the adapter knows); default a free one. */
  port = 0,
  /** Takes over WebSocket upgrades (a platform's gateway on the same server); refused when absent. */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
): Promise<FakeHttpServer> {
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => onError(res, error));
  });
  // A platform keeps idle connections open for long (Node's 5 s default races a client reusing its socket:
  // a bare grammY bot lost sends to "socket hang up" in the bench); a client closes its own idle ones.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.on("upgrade", (req, socket, head) => (upgrade ? upgrade(req, socket, head) : socket.destroy()));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
