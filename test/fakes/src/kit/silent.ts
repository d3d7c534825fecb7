import { createServer, type Socket } from "node:net";

/** A platform address that takes connections and never answers: a black-holed network, as a client sees one. */
export interface SilentServer {
  port: number;
  /** Connections it holds now. */
  connections(): number;
  close(): Promise<void>;
}

/** Listens on loopback (`port`, or a free one), accepts every connection and never writes a byte. */
export async function startSilentServer(port = 0): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve()));
  const { port: bound } = server.address() as { port: number };
  return {
    port: bound,
    connections: () => sockets.size,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
