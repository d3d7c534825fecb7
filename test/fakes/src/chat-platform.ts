import { Agent, createServer, type IncomingMessage, request } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type ChannelAdapter,
  type ChannelCapabilities,
  type OutboundSegment,
  PermanentSendError,
  RateLimitedError,
  type ReplyTarget,
  type SendResult,
} from "@hub/core";
import { z } from "zod";

/** One message the fake platform accepted. */
export interface PlatformMessage {
  chatId: string;
  threadId?: string;
  replyId: string;
  index: number;
  text: string;
  /** Which process sent it (the x-sender header). */
  sender: string;
  at: number;
}

/** A scripted answer for the next sends: fail with a status (429 with retry-after seconds). */
export interface PlatformFailure {
  status: 429 | 400 | 403 | 500;
  retryAfterSeconds?: number;
}

/** A local fake chat platform: a tiny HTTP API that records every message, with injectable slowness and failures. */
export interface FakeChatPlatform {
  url: string;
  messages: PlatformMessage[];
  /** Makes every send take this long (ms). */
  setDelay(ms: number): void;
  /** The next sends answer with these failures, in order. */
  fail(...failures: PlatformFailure[]): void;
  close(): Promise<void>;
}

const SendBodySchema = z.object({
  chatId: z.string(),
  threadId: z.string().optional(),
  replyId: z.string(),
  index: z.number(),
  text: z.string(),
});

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Starts the fake platform on a free local port. */
export async function startFakeChatPlatform(): Promise<FakeChatPlatform> {
  const messages: PlatformMessage[] = [];
  const failures: PlatformFailure[] = [];
  let delay = 0;
  const server = createServer((req, res) => {
    body(req)
      .then(async (raw) => {
        const parsed = SendBodySchema.safeParse(JSON.parse(raw || "{}"));
        if (req.url !== "/send" || !parsed.success)
          return void res.writeHead(400).end(JSON.stringify({ ok: false }));
        if (delay > 0) await new Promise((r) => setTimeout(r, delay));
        const failure = failures.shift();
        if (failure) {
          const headers: Record<string, string> = { "content-type": "application/json" };
          if (failure.retryAfterSeconds !== undefined)
            headers["retry-after"] = String(failure.retryAfterSeconds);
          return void res
            .writeHead(failure.status, headers)
            .end(JSON.stringify({ ok: false, status: failure.status }));
        }
        messages.push({ ...parsed.data, sender: String(req.headers["x-sender"] ?? ""), at: Date.now() });
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ ok: true, messageId: String(messages.length) }));
      })
      .catch(() => res.writeHead(400).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    messages,
    setDelay: (ms) => {
      delay = ms;
    },
    fail: (...f) => void failures.push(...f),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A channel adapter that sends to the fake chat platform through real HTTP,
 * mapping 429 to `RateLimitedError`, 400 and 403 to `PermanentSendError` (403: the chat refuses every
 * message) like a real adapter would.
 */
export class FakeChatAdapter implements ChannelAdapter {
  readonly capabilities: ChannelCapabilities;
  constructor(
    readonly channel: string,
    private readonly platformUrl: string,
    options: { textLimit?: number; sender?: string } = {},
  ) {
    this.capabilities = {
      textLimit: options.textLimit ?? 200,
      markdown: "plain",
      threads: true,
      typing: false,
      edit: false,
    };
    this.#sender = options.sender ?? String(process.pid);
  }
  readonly #sender: string;

  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async sendTyping(): Promise<void> {}

  async send(
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<SendResult> {
    const res = await postJson(
      `${this.platformUrl}/send`,
      {
        chatId: target.chatId,
        threadId: target.threadId,
        replyId: segment.replyId,
        index: segment.index,
        text: segment.text,
      },
      { "x-sender": this.#sender },
      options.signal,
    );
    if (res.status === 429) throw new RateLimitedError(Number(res.retryAfter ?? "1") * 1000);
    if (res.status === 403)
      throw new PermanentSendError("the platform refused: forbidden", { chatRefuses: true });
    if (res.status === 400) throw new PermanentSendError("the platform refused: bad request");
    if (res.status < 200 || res.status > 299) throw new Error(`platform answered ${res.status}`);
    const json = JSON.parse(res.body || "{}") as { messageId?: string };
    return json.messageId ? { messageId: json.messageId } : {};
  }
}

// One keep-alive pool for every fake adapter: connections are reused as a real adapter's client reuses them.
// An idle socket is closed after 4 s, as fetch's pool does, before the server's 5 s keep-alive timeout can
// close it under a request that is just reusing it (an ECONNRESET no real send would see).
const keepAlive = new Agent({ keepAlive: true, timeout: 4_000 });

/**
 * POSTs `payload` as JSON over node:http and reads the whole answer. Not `fetch`: its web streams made
 * most of the delivery benches' garbage (a major GC every 2-4 s), which a real adapter's client does not.
 */
function postJson(
  url: string,
  payload: unknown,
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  const data = JSON.stringify(payload);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      agent: keepAlive,
      ...(signal ? { signal } : {}),
      headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(data) },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const retryAfter = res.headers["retry-after"];
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          body: Buffer.concat(chunks).toString("utf8"),
        });
      });
    });
    req.end(data);
  });
}
