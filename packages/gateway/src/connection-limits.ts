import type { Server, ServerOptions } from "node:http";
import type { Socket } from "node:net";
import type { HubLogger } from "@hub/core";
import { clientOf } from "./client-address.js";

/** Caps on the gateway's TCP connections, checked before any byte is parsed or any token seen. */
export interface ConnectionLimits {
  /** Open connections in total (HTTP, webhooks and WebSockets alike). */
  maxConnections: number;
  /** Open connections from one remote address (an IPv6 /64 counts as one, see `clientOf`). */
  maxPerAddress: number;
  /** Time a connection gets to deliver a request's headers (the first one, and each later one). */
  headersTimeoutMs: number;
}

/** Default limits: room for a few hundred clients, far below the process's file descriptors. */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 2048,
  maxPerAddress: 256,
  headersTimeoutMs: 10_000,
};

// Refusals during a flood are summed up in one log line per interval, so the log cannot be flooded either.
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** The options `createServer` needs so Node itself closes connections whose later headers trickle in. */
export function httpServerOptions(limits: ConnectionLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: Math.max(limits.headersTimeoutMs, 30_000),
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
}

/**
 * Enforces the limits on a server: a connection over the total or its
 * address's cap is closed at once; a connection whose first request's headers
 * have not arrived in time (nothing sent, or headers trickled line by line) is
 * closed. Node's own `headersTimeout` covers the requests after the first.
 */
export function enforceConnectionLimits(server: Server, limits: ConnectionLimits, logger: HubLogger): void {
  const perAddress = new Map<string, number>();
  let total = 0;
  let refused = 0;
  let lastLog = 0;
  const refuse = (socket: Socket, address: string, why: string) => {
    socket.destroy();
    refused++;
    if (Date.now() - lastLog < REFUSAL_LOG_INTERVAL_MS) return;
    logger.warn({ refused, address, why, open: total }, "gateway connections refused (connection limit)");
    lastLog = Date.now();
    refused = 0;
  };
  const headersSeen = new WeakSet<Socket>();
  const markSeen = (socket: Socket) => headersSeen.add(socket);
  server.on("request", (req) => markSeen(req.socket));
  server.on("upgrade", (req) => markSeen(req.socket));
  server.on("connection", (socket: Socket) => {
    const address = clientOf(socket.remoteAddress ?? "?");
    const mine = perAddress.get(address) ?? 0;
    if (total >= limits.maxConnections) return refuse(socket, address, "total");
    if (mine >= limits.maxPerAddress) return refuse(socket, address, "per_address");
    total++;
    perAddress.set(address, mine + 1);
    const timer = setTimeout(() => {
      if (!headersSeen.has(socket)) socket.destroy();
    }, limits.headersTimeoutMs);
    timer.unref();
    socket.once("close", () => {
      clearTimeout(timer);
      total--;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });
}
