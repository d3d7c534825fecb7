import { createServer } from "node:http";
import { Socket } from "node:net";
import { createLogger } from "@hub/core";
import { describe, expect, it } from "vitest";
import { enforceConnectionLimits } from "../src/connection-limits.js";

/** A socket as the server's `connection` event hands it over, from `address` (never connected anywhere). */
function socketFrom(address: string): Socket {
  const socket = new Socket();
  Object.defineProperty(socket, "remoteAddress", { value: address });
  return socket;
}

describe("connections per address", () => {
  it("an IPv6 host is one address for the cap: new addresses of its /64 do not get it more connections", () => {
    const server = createServer();
    enforceConnectionLimits(
      server,
      { maxConnections: 100, maxPerAddress: 3, headersTimeoutMs: 60_000 },
      createLogger({ level: "silent" }),
    );
    const sockets = [1, 2, 3, 4, 5].map((i) => socketFrom(`2001:db8:7:7::${i}`));
    for (const s of sockets) server.emit("connection", s);
    expect(sockets.map((s) => s.destroyed)).toEqual([false, false, false, true, true]);
    const other = socketFrom("2001:db8:7:8::1");
    server.emit("connection", other);
    expect(other.destroyed).toBe(false);
    for (const s of [...sockets, other]) s.destroy();
  });
});
