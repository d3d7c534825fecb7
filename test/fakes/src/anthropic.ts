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

/** The `error.type` values of Anthropic error bodies and stream `error` events. */
export type FakeAnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

/** A successful scripted reply: streamed text and/or tool_use blocks. */
export interface FakeAnthropicReplyScript {
  /** Assistant text; streamed as `text_delta`s of `chunkSize` characters. */
  text?: string;
  /**
   * Tool calls, one `tool_use` block each; `arguments` (JSON text) is streamed as `input_json_delta`
   * fragments of `chunkSize` characters, as Anthropic does.
   */
  toolCalls?: Array<{ name: string; arguments: string; id?: string }>;
  /** Characters per text delta / JSON fragment (default 5). */
  chunkSize?: number;
  /** Pause between streamed events, in ms (default 0). */
  delayMs?: number;
  /** Overrides the stop_reason (default `tool_use` when there are tool calls, else `end_turn`). */
  stopReason?: "end_turn" | "tool_use" | "max_tokens" | "stop_sequence";
  /**
   * Overrides the reported token counts (default: a rough chars/4 estimate); `cacheReadTokens` and
   * `cacheCreationTokens` are reported as the prompt's tokens read from and written to the prompt cache
   * (`cache_read_input_tokens`, `cache_creation_input_tokens`; 0 by default), which `input_tokens` leaves out.
   */
  usage?: {
    inputTokens: number;
    outputTokens: number;
    cacheReadTokens?: number;
    cacheCreationTokens?: number;
  };
  /**
   * Prompt-side counts message_delta's usage carries besides `output_tokens` (newer API versions repeat them
   * there, cumulative; by default it carries none), each sent only when given.
   */
  deltaUsage?: { inputTokens?: number; cacheReadTokens?: number; cacheCreationTokens?: number };
}

/**
 * A scripted HTTP error: status, optional JSON body (default: an Anthropic error body whose type
 * follows the status; 529 is `overloaded_error`) and optional `retry-after` seconds.
 */
export interface FakeAnthropicFailScript {
  fail: ScriptedFailure;
}

/** A scripted stream that sends a broken SSE data line midway (a broken JSON body when not streaming). */
export interface FakeAnthropicMalformedScript {
  malformed: true;
}

/** A scripted call that sends headers and then never finishes until the client goes away. */
export interface FakeAnthropicHangScript {
  hang: true;
}

/**
 * A scripted stream that starts normally, sends some text and then an `event: error` with this
 * type, as Anthropic does when it fails mid-stream (an HTTP error of the matching status when not
 * streaming).
 */
export interface FakeAnthropicErrorEventScript {
  errorEvent: FakeAnthropicErrorType;
}

/** One scripted response; each messages request consumes one (FIFO). */
export type FakeAnthropicScript =
  | FakeAnthropicReplyScript
  | FakeAnthropicFailScript
  | FakeAnthropicMalformedScript
  | FakeAnthropicHangScript
  | FakeAnthropicErrorEventScript;

/** Options of `startFakeAnthropic`. */
export interface FakeAnthropicOptions {
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /**
   * When set, requests must carry `x-api-key: <apiKey>` or `Authorization: Bearer <apiKey>` (what
   * `@anthropic-ai/sdk` 1.x sends) or get a 401.
   */
  apiKey?: string;
}

// Loose on purpose: the fake records whatever the client sent, and only needs these fields itself.
const messagesRequestSchema = z.looseObject({
  model: z.string(),
  max_tokens: z.number(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })),
  system: z.unknown().optional(),
  stream: z.boolean().nullish(),
  tools: z.array(z.unknown()).nullish(),
});

/** A messages request body as received (unknown fields kept). */
export type FakeAnthropicRequest = z.infer<typeof messagesRequestSchema>;

/** A running fake Anthropic Messages API server. */
export interface FakeAnthropic {
  /** Base URL to give the SDK as `baseURL`, without `/v1` (the SDK adds `/v1/messages`). */
  readonly url: string;
  /** Valid messages request bodies received, in order (including ones then refused with 401). */
  readonly requests: FakeAnthropicRequest[];
  /** Queues scripted responses; when the queue is empty the reply echoes the last user text. */
  script(...scripts: FakeAnthropicScript[]): void;
  /** Stops the server, cutting any open (e.g. hanging) connections; safe to call twice. */
  close(): Promise<void>;
}

/** A content block of a reply, before it is serialized. */
type ReplyBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; json: string };

/** Per-request values shared by the response builders. */
interface ReplyContext {
  id: string;
  model: string;
  inputTokens: number;
  toolPrefix: string;
}

/** One SSE event: its name and JSON payload, or a deliberately broken raw line. */
type WireEvent = { event: string; data: unknown } | typeof BROKEN;

const BROKEN = Symbol("broken SSE line");

/**
 * Starts a local fake of the Anthropic Messages API (`POST /v1/messages`, streaming and not,
 * `GET /v1/models`) whose responses are scripted by the test.
 */
export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const queue: FakeAnthropicScript[] = [];
  const requests: FakeAnthropicRequest[] = [];
  let counter = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A bug in the fake must not hang the test: answer 500 if still possible.
      if (!res.headersSent) sendJson(res, 500, errorBody("api_error", String(error)));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (req.method === "GET" && path === "/v1/models") {
      sendJson(res, 200, {
        data: [
          {
            type: "model",
            id: "fake-model",
            display_name: "Fake model",
            created_at: "2025-01-01T00:00:00Z",
          },
        ],
        has_more: false,
        first_id: "fake-model",
        last_id: "fake-model",
      });
      return;
    }
    if (req.method !== "POST" || path !== "/v1/messages") {
      sendJson(res, 404, errorBody("not_found_error", `Unknown route ${req.method} ${path}`));
      return;
    }
    const body = await readJsonRequest(req, res, messagesRequestSchema, (m) =>
      errorBody("invalid_request_error", m),
    );
    if (!body) return;
    requests.push(body);
    if (options.apiKey !== undefined && !authorized(req, options.apiKey)) {
      // Checked before consuming a script, so an auth failure does not shift the scripted replies.
      sendJson(res, 401, errorBody("authentication_error", "invalid x-api-key"));
      return;
    }
    const script = queue.shift() ?? { text: `echo: ${lastUserText(body)}` };
    counter += 1;
    const ctx: ReplyContext = {
      id: `msg_fake_${counter}`,
      model: body.model,
      inputTokens: estimateTokens(JSON.stringify([body.system ?? null, body.messages, body.tools ?? null])),
      toolPrefix: `toolu_fake_${counter}_`,
    };

    if ("fail" in script) {
      const { status } = script.fail;
      return sendFailure(res, script.fail, errorBody(errorTypeOf(status), `Scripted failure ${status}`));
    }
    // Never answers; the socket is freed when the client aborts or close() runs.
    if ("hang" in script) return hang(res, body.stream === true);
    if (body.stream) await streamReply(res, script, ctx);
    else if ("errorEvent" in script) {
      // Without a stream to fail in, the error comes as the matching HTTP error.
      const type = script.errorEvent;
      sendJson(res, statusOf(type), errorBody(type, `Scripted ${type}`));
    } else sendWhole(res, script, ctx);
  }

  async function streamReply(
    res: ServerResponse,
    script: FakeAnthropicReplyScript | FakeAnthropicMalformedScript | FakeAnthropicErrorEventScript,
    ctx: ReplyContext,
  ): Promise<void> {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    const reply: FakeAnthropicReplyScript = "malformed" in script || "errorEvent" in script ? {} : script;
    const events: WireEvent[] = [
      {
        event: "message_start",
        data: {
          type: "message_start",
          message: {
            id: ctx.id,
            type: "message",
            role: "assistant",
            model: ctx.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { ...inputUsage(reply, ctx), output_tokens: 1 },
          },
        },
      },
      { event: "ping", data: { type: "ping" } },
    ];

    if ("malformed" in script || "errorEvent" in script) {
      events.push(blockStart(0, { type: "text", text: "" }), textDelta(0, "partial "));
      if ("malformed" in script) events.push(BROKEN);
      else {
        const type = script.errorEvent;
        events.push({ event: "error", data: errorBody(type, `Scripted ${type}`) });
      }
    } else {
      const size = Math.max(1, script.chunkSize ?? 5);
      replyBlocks(script, ctx).forEach((block, index) => {
        if (block.type === "text") {
          events.push(blockStart(index, { type: "text", text: "" }));
          for (const piece of splitText(block.text, size)) events.push(textDelta(index, piece));
        } else {
          events.push(blockStart(index, { type: "tool_use", id: block.id, name: block.name, input: {} }));
          // Anthropic opens a tool_use block with an empty fragment, then streams the JSON text.
          for (const fragment of ["", ...splitText(block.json, size)]) {
            events.push({
              event: "content_block_delta",
              data: {
                type: "content_block_delta",
                index,
                delta: { type: "input_json_delta", partial_json: fragment },
              },
            });
          }
        }
        events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
      });
      events.push({
        event: "message_delta",
        data: {
          type: "message_delta",
          delta: { stop_reason: stopReasonOf(script), stop_sequence: null },
          usage: { ...deltaPromptUsage(script), output_tokens: outputTokens(script) },
        },
      });
      events.push({ event: "message_stop", data: { type: "message_stop" } });
    }

    const delayMs = "delayMs" in script ? (script.delayMs ?? 0) : 0;
    for (const [i, event] of events.entries()) {
      if (res.destroyed) return; // client went away
      if (i > 0 && delayMs > 0) await sleep(delayMs);
      res.write(
        event === BROKEN
          ? 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n'
          : `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`,
      );
    }
    if (!res.destroyed) res.end();
  }

  function sendWhole(
    res: ServerResponse,
    script: FakeAnthropicReplyScript | FakeAnthropicMalformedScript,
    ctx: ReplyContext,
  ): void {
    if ("malformed" in script) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"id": "msg_broken", "content": [');
      return;
    }
    const content = replyBlocks(script, ctx).map((block) =>
      block.type === "text"
        ? { type: "text", text: block.text, citations: null }
        : { type: "tool_use", id: block.id, name: block.name, input: parseInput(block.json) },
    );
    sendJson(res, 200, {
      id: ctx.id,
      type: "message",
      role: "assistant",
      model: ctx.model,
      content,
      stop_reason: stopReasonOf(script),
      stop_sequence: null,
      usage: { ...inputUsage(script, ctx), output_tokens: outputTokens(script) },
    });
  }

  server.listen(options.port ?? 0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined; // close() is idempotent

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (...scripts) => {
      queue.push(...scripts);
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

function authorized(req: IncomingMessage, apiKey: string): boolean {
  return req.headers["x-api-key"] === apiKey || req.headers.authorization === `Bearer ${apiKey}`;
}

function blockStart(index: number, block: unknown): WireEvent {
  return { event: "content_block_start", data: { type: "content_block_start", index, content_block: block } };
}

function textDelta(index: number, text: string): WireEvent {
  return {
    event: "content_block_delta",
    data: { type: "content_block_delta", index, delta: { type: "text_delta", text } },
  };
}

/** The reply's content blocks: the text (if any) first, then one tool_use block per call. */
function replyBlocks(script: FakeAnthropicReplyScript, ctx: ReplyContext): ReplyBlock[] {
  const blocks: ReplyBlock[] = [];
  if (script.text) blocks.push({ type: "text", text: script.text });
  (script.toolCalls ?? []).forEach((call, i) => {
    blocks.push({
      type: "tool_use",
      id: call.id ?? `${ctx.toolPrefix}${i}`,
      name: call.name,
      json: call.arguments,
    });
  });
  return blocks;
}

function stopReasonOf(script: FakeAnthropicReplyScript): string {
  return script.stopReason ?? ((script.toolCalls?.length ?? 0) > 0 ? "tool_use" : "end_turn");
}

function outputTokens(script: FakeAnthropicReplyScript): number {
  const output = (script.text ?? "") + (script.toolCalls ?? []).map((c) => c.name + c.arguments).join("");
  return script.usage?.outputTokens ?? estimateTokens(output);
}

function parseInput(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}

/** The text of the last user message: its string content, or its text blocks joined. */
function lastUserText(body: FakeAnthropicRequest): string {
  return contentText(body.messages.findLast((m) => m.role === "user")?.content, "text");
}

function errorTypeOf(status: number): FakeAnthropicErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

function statusOf(type: FakeAnthropicErrorType): number {
  const statuses: Record<FakeAnthropicErrorType, number> = {
    invalid_request_error: 400,
    authentication_error: 401,
    permission_error: 403,
    not_found_error: 404,
    request_too_large: 413,
    rate_limit_error: 429,
    api_error: 500,
    overloaded_error: 529,
  };
  return statuses[type];
}

function errorBody(type: FakeAnthropicErrorType, message: string) {
  return { type: "error", error: { type, message } };
}

// A reply's prompt-side usage fields, as the Messages API reports them.
function inputUsage(script: { usage?: FakeAnthropicReplyScript["usage"] }, ctx: { inputTokens: number }) {
  return {
    input_tokens: script.usage?.inputTokens ?? ctx.inputTokens,
    cache_creation_input_tokens: script.usage?.cacheCreationTokens ?? 0,
    cache_read_input_tokens: script.usage?.cacheReadTokens ?? 0,
  };
}

// The prompt-side fields a script asks message_delta to carry (see `deltaUsage`).
function deltaPromptUsage(script: { deltaUsage?: FakeAnthropicReplyScript["deltaUsage"] }) {
  const d = script.deltaUsage ?? {};
  return {
    ...(d.inputTokens !== undefined ? { input_tokens: d.inputTokens } : {}),
    ...(d.cacheCreationTokens !== undefined ? { cache_creation_input_tokens: d.cacheCreationTokens } : {}),
    ...(d.cacheReadTokens !== undefined ? { cache_read_input_tokens: d.cacheReadTokens } : {}),
  };
}
