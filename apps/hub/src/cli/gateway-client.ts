import { HubError } from "@hub/core";
import WebSocket from "ws";

/** Where a running hub's gateway is and the token to talk to it. */
export interface GatewayAddress {
  host: string;
  port: number;
  token: string;
}

interface ResponseFrame {
  type: "res";
  id: number | string | null;
  ok: boolean;
  payload?: unknown;
  error?: { code: string; message: string };
}

/**
 * Calls gateway methods on a running hub over its WebSocket protocol
 * (connect with the token, then one request per call). Throws
 * `GatewayUnreachableError` when no hub answers.
 */
export async function callGateway(
  address: GatewayAddress,
  calls: ReadonlyArray<{ method: string; params?: unknown }>,
  timeoutMs = 5000,
): Promise<unknown[]> {
  const host = address.host.includes(":") ? `[${address.host}]` : address.host;
  const ws = new WebSocket(`ws://${host}:${address.port}/`);
  const frames = new Map<number, ResponseFrame>();
  let waiter: (() => void) | undefined;
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as ResponseFrame;
    if (frame.type === "res" && typeof frame.id === "number") frames.set(frame.id, frame);
    waiter?.();
  });
  let silent = false;
  const timer = setTimeout(() => {
    silent = true;
    ws.terminate();
  }, timeoutMs);
  // Cut off by the timer (ws reports that as an error, then a close): the other side never answered.
  const lost = (cause: Error): HubError =>
    silent ? new GatewayUnresponsiveError(address, timeoutMs) : new GatewayUnreachableError(address, cause);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", (error) => reject(lost(error)));
      ws.once("close", () => reject(lost(new Error("closed"))));
    });
    const request = async (id: number, method: string, params: unknown): Promise<unknown> => {
      ws.send(JSON.stringify({ type: "req", id, method, params }));
      while (!frames.has(id)) {
        if (ws.readyState !== WebSocket.OPEN) throw lost(new Error("closed"));
        await new Promise<void>((r) => {
          waiter = r;
          ws.once("close", () => r());
        });
      }
      const frame = frames.get(id) as ResponseFrame;
      if (!frame.ok)
        throw new HubError(
          frame.error?.code ?? "gateway_error",
          `The hub refused ${method}: ${frame.error?.message}`,
        );
      return frame.payload;
    };
    await request(0, "connect", { auth: { token: address.token } });
    const out: unknown[] = [];
    for (const [i, call] of calls.entries()) out.push(await request(i + 1, call.method, call.params ?? {}));
    return out;
  } finally {
    clearTimeout(timer);
    ws.close();
  }
}

/**
 * Something takes connections at the gateway's address but does not answer (a hub that hangs or is
 * frozen): not "not running", and starting a second hub would not help.
 */
export class GatewayUnresponsiveError extends HubError {
  constructor(address: GatewayAddress, timeoutMs: number) {
    super(
      "gateway_unresponsive",
      `A process takes connections at ${address.host}:${address.port} but did not answer within ${Math.round(timeoutMs / 1000)} s (a hub that hangs or is stopped); look at its log and restart it.`,
    );
    this.name = "GatewayUnresponsiveError";
  }
}

/** No hub answered on the configured gateway address. */
export class GatewayUnreachableError extends HubError {
  constructor(address: GatewayAddress, cause: unknown) {
    super(
      "gateway_unreachable",
      `No hub answers at ${address.host}:${address.port} (${(cause as Error).message}); start it with "npm start" or check gateway.host/gateway.port.`,
      { cause },
    );
    this.name = "GatewayUnreachableError";
  }
}
