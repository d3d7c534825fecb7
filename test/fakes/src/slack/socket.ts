import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";

/**
 * Slack's Socket Mode side: the WebSocket `apps.connections.open` hands out (like
 * wss://wss-primary.slack.com/link/), with `hello` on connect, pings, `events_api` envelopes
 * and the client's envelope acks, and `disconnect` to ask for a reconnect.
 */
export class FakeSocketMode {
  readonly #sockets = new Set<WebSocket>();
  readonly #acks = new Map<string, () => void>();
  #wss: WebSocketServer | undefined;
  #connections = 0;

  constructor(private readonly appId: string) {}

  async listen(): Promise<void> {
    const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
    wss.on("connection", (ws, req) => this.#connected(ws, req.url ?? ""));
    this.#wss = wss;
  }

  /** A fresh connection URL, as `apps.connections.open` returns it. */
  url(): string {
    if (!this.#wss) throw new Error("fake slack: Socket Mode is not listening");
    const { port } = this.#wss.address() as AddressInfo;
    return `ws://127.0.0.1:${port}/link/?ticket=${randomUUID()}&app_id=${this.appId}`;
  }

  get connections(): number {
    return this.#connections;
  }

  get connected(): boolean {
    return this.#sockets.size > 0;
  }

  #connected(ws: WebSocket, path: string): void {
    if (!path.startsWith("/link/")) return void ws.close(1008, "unknown path");
    this.#connections += 1;
    this.#sockets.add(ws);
    const ping = setInterval(() => ws.ping(), 2000);
    ws.on("close", () => {
      this.#sockets.delete(ws);
      clearInterval(ping);
    });
    ws.on("message", (data) => {
      const { envelope_id } = JSON.parse(String(data)) as { envelope_id?: string };
      if (envelope_id) this.#acks.get(envelope_id)?.();
    });
    const debug_info = { host: "applink-fake", build_number: 1, approximate_connection_time: 18060 };
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: this.#sockets.size,
        debug_info,
        connection_info: { app_id: this.appId },
      }),
    );
  }

  /** Sends an envelope; resolves true when acked, false after `timeoutMs` (or with no connection). */
  deliver(
    payload: Record<string, unknown>,
    options: { retryAttempt?: number; timeoutMs?: number } = {},
  ): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const [ws] = this.#sockets;
      if (!ws) return resolve(false);
      const envelopeId = randomUUID();
      const timer = setTimeout(() => {
        this.#acks.delete(envelopeId);
        resolve(false);
      }, options.timeoutMs ?? 5000);
      this.#acks.set(envelopeId, () => {
        clearTimeout(timer);
        this.#acks.delete(envelopeId);
        resolve(true);
      });
      const retry = options.retryAttempt ?? 0;
      ws.send(
        JSON.stringify({
          envelope_id: envelopeId,
          payload,
          type: "events_api",
          accepts_response_payload: false,
          retry_attempt: retry,
          retry_reason: retry ? "timeout" : "",
        }),
      );
    });
  }

  /** Asks every connected client to reconnect. */
  disconnect(reason: string): void {
    for (const ws of this.#sockets) {
      ws.send(JSON.stringify({ type: "disconnect", reason, debug_info: { host: "applink-fake" } }));
    }
  }

  async close(): Promise<void> {
    for (const ws of this.#sockets) ws.terminate();
    await new Promise<void>((resolve) => (this.#wss ? this.#wss.close(() => resolve()) : resolve()));
  }
}
