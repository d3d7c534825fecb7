import WebSocket from "ws";

/** A frame the gateway sent. */
export type ServerFrame =
  | {
      type: "res";
      id: string | number | null;
      ok: boolean;
      payload?: unknown;
      error?: { code: string; message: string };
    }
  | { type: "event"; event: string; payload: ChatPayload; seq: number };

/** The payload of a `chat` event. */
export interface ChatPayload {
  runId: string;
  sessionKey: string;
  seq: number;
  state: "delta" | "final" | "error" | "aborted";
  text: string;
}

/**
 * A test client of the gateway protocol over a real WebSocket: records every
 * frame, answers requests by id, and waits for events.
 */
export class GatewayClient {
  readonly frames: ServerFrame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #nextId = 1;
  #waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      this.frames.push(JSON.parse(data.toString()) as ServerFrame);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) =>
      ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  /** Opens a socket; with `token`, also sends `connect` and expects success. */
  static async open(port: number, token?: string): Promise<GatewayClient> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    const client = new GatewayClient(ws);
    if (token !== undefined) {
      const res = await client.request("connect", { auth: { token } });
      if (!res.ok) throw new Error(`connect failed: ${JSON.stringify(res.error)}`);
    }
    return client;
  }

  sendRaw(data: string): void {
    this.ws.send(data);
  }

  /** Sends a request without waiting for its answer (the hub may die before it); returns the request id. */
  fire(method: string, params?: unknown): number {
    const id = this.#nextId++;
    this.ws.send(JSON.stringify({ type: "req", id, method, params }));
    return id;
  }

  /** Sends a request and resolves with its response frame. */
  async request(method: string, params?: unknown): Promise<Extract<ServerFrame, { type: "res" }>> {
    const id = this.#nextId++;
    this.ws.send(JSON.stringify({ type: "req", id, method, params }));
    return (await this.waitFor((f) => f.type === "res" && f.id === id, `response to ${method}`)) as Extract<
      ServerFrame,
      { type: "res" }
    >;
  }

  /** Chat events received so far (for one run, if given). */
  chatEvents(runId?: string): ChatPayload[] {
    return this.frames.flatMap((f) =>
      f.type === "event" && f.event === "chat" && (!runId || f.payload.runId === runId) ? [f.payload] : [],
    );
  }

  /** Resolves with the first frame (already received or future) that matches. */
  async waitFor(match: (f: ServerFrame) => boolean, what: string, timeoutMs = 15_000): Promise<ServerFrame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits for the run's terminal event (final, error or aborted). */
  async terminal(runId: string, timeoutMs?: number): Promise<ChatPayload> {
    const f = await this.waitFor(
      (x) => x.type === "event" && x.payload.runId === runId && x.payload.state !== "delta",
      `end of run ${runId}`,
      timeoutMs,
    );
    return (f as Extract<ServerFrame, { type: "event" }>).payload;
  }

  close(): void {
    this.ws.close();
  }
}
