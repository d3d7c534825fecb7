import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import {
  contentText,
  estimateTokens,
  hang,
  readJsonRequest,
  type ScriptedFailure,
  sendFailure,
  sendJson,
  splitText,
} from "./kit/model-api.js";

/** A successful scripted reply: streamed text and/or tool calls. */
export interface FakeReplyScript {
  /** Assistant text; streamed in `chunkSize` pieces. */
  text?: string;
  /** Tool calls; each one's `arguments` is streamed in `chunkSize` fragments, as OpenAI does. */
  toolCalls?: Array<{ name: string; arguments: string; id?: string }>;
  /**
   * Images in the answer as data URLs, sent after the text the way image-generating models answer
   * through OpenAI-compatible gateways (OpenRouter, LiteLLM): `delta.images` / `message.images`.
   */
  images?: string[];
  /** Characters per text chunk / argument fragment (default 5). */
  chunkSize?: number;
  /** Pause between streamed chunks, in ms (default 0). */
  delayMs?: number;
  /** Overrides the finish_reason (default `tool_calls` when there are tool calls, else `stop`). */
  finishReason?: "stop" | "length" | "tool_calls" | "content_filter";
  /** Overrides the reported token counts (default: a rough chars/4 estimate). */
  usage?: { promptTokens: number; completionTokens: number };
}

/** A scripted HTTP error: status, optional JSON body and optional `retry-after` seconds. */
export interface FakeFailScript {
  fail: ScriptedFailure;
}

/** A scripted stream that sends a broken SSE line midway. */
export interface FakeMalformedScript {
  malformed: true;
}

/** A scripted call that sends headers and then never finishes until the client goes away. */
export interface FakeHangScript {
  hang: true;
}

/** One scripted response; each chat completion request consumes one (FIFO). */
export type FakeScript = FakeReplyScript | FakeFailScript | FakeMalformedScript | FakeHangScript;

/** Options of `startFakeOpenAI`. */
export interface FakeOpenAIOptions {
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get a 401. */
  apiKey?: string;
}

// Loose on purpose: the fake records whatever the client sent, and only needs these fields itself.
const chatRequestSchema = z.looseObject({
  model: z.string(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown().optional() })),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  tools: z.array(z.unknown()).nullish(),
});

/** A chat completion request body as received (unknown fields kept). */
export type FakeChatRequest = z.infer<typeof chatRequestSchema>;

/** A running fake OpenAI-compatible server. */
export interface FakeOpenAI {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  /** Valid chat completion request bodies received, in order (including ones then refused with 401). */
  readonly requests: FakeChatRequest[];
  /** Queues scripted responses; when the queue is empty the reply echoes the last user message. */
  script(...scripts: FakeScript[]): void;
  /** Audio transcription requests (`POST /v1/audio/transcriptions`, multipart), in order. */
  readonly transcriptions: FakeTranscriptionRequest[];
  /** What the next transcriptions answer (FIFO); when empty, `transcript of <file name>`. */
  scriptTranscript(...texts: string[]): void;
  /** Stops the server, cutting any open (e.g. hanging) connections; safe to call twice. */
  close(): Promise<void>;
}

/** One audio transcription request as received. */
export interface FakeTranscriptionRequest {
  model: string;
  fileName: string;
  mime: string;
  bytes: Buffer;
}
/** An image output part as gateways serialize it. */
const imagePart = (url: string) => ({ type: "image_url", image_url: { url } });

/** One tool call as serialized in an OpenAI response. */
interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * Starts a local fake OpenAI-compatible server (`POST /v1/chat/completions`, streaming and not,
 * `GET /v1/models`) whose responses are scripted by the test.
 */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const queue: FakeScript[] = [];
  const requests: FakeChatRequest[] = [];
  const transcriptions: FakeTranscriptionRequest[] = [];
  const transcripts: string[] = [];
  let counter = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A bug in the fake must not hang the test: answer 500 if still possible.
      if (!res.headersSent) sendJson(res, 500, errorBody(String(error), "server_error"));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (req.method === "GET" && path === "/v1/models") {
      sendJson(res, 200, { object: "list", data: [{ id: "fake-model", object: "model", owned_by: "fake" }] });
      return;
    }
    if (req.method === "POST" && path === "/v1/audio/transcriptions") {
      const heard = await readTranscription(req);
      if (!heard)
        return sendJson(res, 400, errorBody("Expected a multipart file and model", "invalid_request_error"));
      if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`)
        return sendJson(
          res,
          401,
          errorBody("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
        );
      transcriptions.push(heard);
      sendJson(res, 200, { text: transcripts.shift() ?? `transcript of ${heard.fileName}` });
      return;
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      sendJson(res, 404, errorBody(`Unknown route ${req.method} ${path}`, "invalid_request_error"));
      return;
    }
    const body = await readJsonRequest(req, res, chatRequestSchema, (m) =>
      errorBody(m, "invalid_request_error"),
    );
    if (!body) return;
    requests.push(body);
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      // Checked before consuming a script, so an auth failure does not shift the scripted replies.
      sendJson(res, 401, errorBody("Incorrect API key provided", "invalid_request_error", "invalid_api_key"));
      return;
    }
    const script = queue.shift() ?? { text: `echo: ${lastUserText(body)}` };
    counter += 1;
    const ctx: ReplyContext = {
      id: `chatcmpl-fake-${counter}`,
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      includeUsage: body.stream_options?.include_usage === true,
      promptTokens: estimateTokens(JSON.stringify(body.messages)),
      callPrefix: `call_fake_${counter}_`,
    };

    if ("fail" in script) {
      const { status } = script.fail;
      return sendFailure(res, script.fail, errorBody(`Scripted failure ${status}`, errorType(status)));
    }
    // Never answers; the socket is freed when the client aborts or close() runs.
    if ("hang" in script) return hang(res, body.stream === true);
    if (body.stream) await streamReply(res, script, ctx);
    else sendWhole(res, script, ctx);
  }

  async function streamReply(
    res: ServerResponse,
    script: FakeReplyScript | FakeMalformedScript,
    ctx: ReplyContext,
  ): Promise<void> {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    const chunk = (choices: unknown[], usage?: unknown): unknown => ({
      id: ctx.id,
      object: "chat.completion.chunk",
      created: ctx.created,
      model: ctx.model,
      choices,
      // OpenAI sends `usage: null` on every chunk once usage is requested, and the totals at the end.
      ...(ctx.includeUsage ? { usage: usage ?? null } : {}),
    });
    const delta = (d: unknown, finish: string | null = null): unknown =>
      chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);

    const events: unknown[] = [delta({ role: "assistant", content: "" })];
    if ("malformed" in script) {
      events.push(delta({ content: "partial " }));
      events.push(BROKEN);
      events.push(delta({}, "stop"));
    } else {
      const size = Math.max(1, script.chunkSize ?? 5);
      for (const piece of splitText(script.text ?? "", size)) events.push(delta({ content: piece }));
      for (const url of script.images ?? []) events.push(delta({ images: [imagePart(url)] }));
      const calls = wireToolCalls(script, ctx);
      calls.forEach((call, index) => {
        // First chunk names the call with empty arguments; then argument fragments, as OpenAI does.
        events.push(
          delta({
            tool_calls: [
              { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
            ],
          }),
        );
        for (const fragment of splitText(call.function.arguments, size)) {
          events.push(delta({ tool_calls: [{ index, function: { arguments: fragment } }] }));
        }
      });
      events.push(delta({}, finishReason(script)));
      if (ctx.includeUsage) events.push(chunk([], usageOf(script, ctx)));
    }

    const delayMs = "malformed" in script ? 0 : (script.delayMs ?? 0);
    for (const [i, event] of events.entries()) {
      if (res.destroyed) return; // client went away
      if (i > 0 && delayMs > 0) await sleep(delayMs);
      res.write(event === BROKEN ? 'data: {"id": "chatcmpl-broken", "choices": [\n\n' : sse(event));
    }
    if (!res.destroyed) res.end("data: [DONE]\n\n");
  }

  function sendWhole(res: ServerResponse, script: FakeReplyScript | FakeMalformedScript, ctx: ReplyContext) {
    if ("malformed" in script) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"id": "chatcmpl-broken", "choices": [');
      return;
    }
    const calls = wireToolCalls(script, ctx);
    const usage = usageOf(script, ctx);
    sendJson(res, 200, {
      id: ctx.id,
      object: "chat.completion",
      created: ctx.created,
      model: ctx.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: script.text ?? (calls.length > 0 ? null : ""),
            refusal: null,
            ...(calls.length > 0 ? { tool_calls: calls } : {}),
            ...(script.images?.length ? { images: script.images.map(imagePart) } : {}),
          },
          logprobs: null,
          finish_reason: finishReason(script),
        },
      ],
      usage,
    });
  }

  server.listen(options.port ?? 0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined; // close() is idempotent

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...scripts) => {
      queue.push(...scripts);
    },
    transcriptions,
    scriptTranscript: (...texts) => {
      transcripts.push(...texts);
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Hanging streams and keep-alive sockets would otherwise keep close() pending forever.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** Per-request values shared by the response builders. */
interface ReplyContext {
  id: string;
  created: number;
  model: string;
  includeUsage: boolean;
  promptTokens: number;
  callPrefix: string;
}

const BROKEN = Symbol("broken SSE line");

function sse(event: unknown): string {
  return `data: ${JSON.stringify(event)}\n\n`;
}

function wireToolCalls(script: FakeReplyScript, ctx: ReplyContext): WireToolCall[] {
  return (script.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `${ctx.callPrefix}${i}`,
    type: "function",
    function: { name: call.name, arguments: call.arguments },
  }));
}

function finishReason(script: FakeReplyScript): string {
  return script.finishReason ?? ((script.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop");
}

function usageOf(script: FakeReplyScript, ctx: ReplyContext) {
  const output = (script.text ?? "") + (script.toolCalls ?? []).map((c) => c.name + c.arguments).join("");
  const promptTokens = script.usage?.promptTokens ?? ctx.promptTokens;
  const completionTokens = script.usage?.completionTokens ?? estimateTokens(output);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

function lastUserText(body: FakeChatRequest): string {
  return contentText(body.messages.findLast((m) => m.role === "user")?.content);
}

function errorType(status: number): string {
  if (status === 401 || status === 403) return "invalid_request_error";
  if (status === 429) return "rate_limit_exceeded";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

function errorBody(message: string, type: string, code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

// The multipart form OpenAI's SDK sends: `file` (with its name and type) and `model`.
async function readTranscription(req: IncomingMessage): Promise<FakeTranscriptionRequest | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = { "content-type": String(req.headers["content-type"] ?? "") };
  try {
    const form = await new Response(Buffer.concat(chunks), { headers }).formData();
    const file = form.get("file");
    const model = form.get("model");
    if (!(file instanceof Blob) || typeof model !== "string") return undefined;
    const fileName = "name" in file && typeof file.name === "string" ? file.name : "file";
    return { model, fileName, mime: file.type, bytes: Buffer.from(await file.arrayBuffer()) };
  } catch {
    return undefined;
  }
}
