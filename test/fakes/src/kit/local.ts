import { createServer } from "node:net";
import type { AdapterStateStore } from "@hub/core";

/** A free TCP port on loopback (e.g. for an adapter pointed at a fake that is not up yet). */
export async function freeLocalPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An in-memory adapter state store (tests); the hub keeps it in Redis. */
export function memoryStateStore(): AdapterStateStore & { values: Map<string, string> } {
  const values = new Map<string, string>();
  return { values, get: async (k) => values.get(k), set: async (k, v) => void values.set(k, v) };
}
