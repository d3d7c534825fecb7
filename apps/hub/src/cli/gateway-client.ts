import { HubError } from "@hub/core";
import { connectProof } from "@hub/gateway";
import WebSocket from "ws";
import { z } from "zod";

/** The answer to `connect.challenge`. */
const ChallengeSchema = z.object({ nonce: z.string().min(1).max(128) });

/** Where a running hub's gateway is and the token to talk to it. */
export interface GatewayAddress {
  host: string;
  port: number;
  token: string;
  /** Where the token came from, as the CLI says it ("the configured token", "the token stored in ..."). */
  tokenSource: string;
}

interface ResponseFrame {
  type: "res";
  id: number | string | null;
  ok: boolean;
  payload?: unknown;
  error?: { code: string; message: string };
}

/** An event frame of the gateway (e.g. `chat`), as the protocol sends it. */
export interface EventFrame {
  type: "event";
  event: string;
  payload: unknown;
}

/** A connected, authenticated gateway connection: requests, and the events it is sent. */
export interface GatewayConnection {
  /** Calls a method; a refusal is a HubError naming it. */
  request(method: string, params?: unknown): Promise<unknown>;
  /** Every event frame from now on. */
  onEvent(handler: (frame: EventFrame) => void): void;
  /** Resolves when the connection closes (the hub stopped, or `close`). */
  closed: Promise<void>;
  close(): void;
}

/**
 * Connects to a running hub's gateway and authenticates with a proof of the token (`connect.challenge`,
 * then `connect`; the token itself is never sent). Each
 * request must be answered within `timeoutMs`. Throws `GatewayUnreachableError` when no hub answers,
 * `GatewayUnresponsiveError` when something takes the connection and never answers.
 */
export async function openGateway(address: GatewayAddress, timeoutMs = 5000): Promise<GatewayConnection> {
  const host = address.host.includes(":") ? `[${address.host}]` : address.host;
  const ws = new WebSocket(`ws://${host}:${address.port}/`);
  const frames = new Map<number, ResponseFrame>();
  const handlers: Array<(frame: EventFrame) => void> = [];
  let waiter: (() => void) | undefined;
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as ResponseFrame | EventFrame;
    if (frame.type === "res" && typeof frame.id === "number") frames.set(frame.id, frame);
    if (frame.type === "event") for (const handler of handlers) handler(frame);
    waiter?.();
  });
  const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
  let silent = false;
  // Cut off by a timer (ws reports that as an error, then a close): the other side never answered.
  const lost = (cause: Error): HubError =>
    silent ? new GatewayUnresponsiveError(address, timeoutMs) : new GatewayUnreachableError(address, cause);
  const within = <T>(work: Promise<T>): Promise<T> => {
    const timer = setTimeout(() => {
      silent = true;
      ws.terminate();
    }, timeoutMs);
    return work.finally(() => clearTimeout(timer));
  };
  await within(
    new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", (error) => reject(lost(error)));
      ws.once("close", () => reject(lost(new Error("closed"))));
    }),
  );
  let next = 0;
  const request = (method: string, params: unknown = {}): Promise<unknown> =>
    within(
      (async () => {
        const id = next++;
        ws.send(JSON.stringify({ type: "req", id, method, params }));
        while (!frames.has(id)) {
          if (ws.readyState !== WebSocket.OPEN) throw lost(new Error("closed"));
          await new Promise<void>((r) => {
            waiter = r;
            void closed.then(r);
          });
        }
        const frame = frames.get(id) as ResponseFrame;
        frames.delete(id);
        if (!frame.ok)
          throw new HubError(
            frame.error?.code ?? "gateway_error",
            `The hub refused ${method}: ${frame.error?.message}`,
          );
        return frame.payload;
      })(),
    );
  try {
    await authenticate(address, request);
  } catch (error) {
    ws.close();
    throw error;
  }
  return { request, onEvent: (handler) => void handlers.push(handler), closed, close: () => ws.close() };
}

/**
 * `connect.challenge`, then `connect` with a proof for its nonce. The token never leaves this process:
 * whatever took the port while the hub was down gets a proof for its own nonce only.
 */
async function authenticate(address: GatewayAddress, request: GatewayConnection["request"]): Promise<void> {
  const challenge = ChallengeSchema.safeParse(await request("connect.challenge"));
  if (!challenge.success)
    throw new HubError(
      "gateway_unexpected",
      `What answers at ${address.host}:${address.port} is not a hub's gateway (it gave no connect nonce); check gateway.host/gateway.port.`,
    );
  await request("connect", { auth: { proof: connectProof(address.token, challenge.data.nonce) } });
}

/**
 * Calls gateway methods on a running hub over its WebSocket protocol
 * (connect with a proof of the token, then one request per call). Throws
 * `GatewayUnreachableError` when no hub answers.
 */
export async function callGateway(
  address: GatewayAddress,
  calls: ReadonlyArray<{ method: string; params?: unknown }>,
  timeoutMs = 5000,
): Promise<unknown[]> {
  const gateway = await openGateway(address, timeoutMs);
  try {
    const out: unknown[] = [];
    for (const call of calls) out.push(await gateway.request(call.method, call.params ?? {}));
    return out;
  } finally {
    gateway.close();
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
