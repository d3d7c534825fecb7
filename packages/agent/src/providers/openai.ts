import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import {
  type ChatMessage,
  ModelError,
  type ModelErrorKind,
  type ModelEvent,
  type ModelProvider,
  type ModelRequest,
  type ModelStopReason,
  type ModelUsage,
  type ToolCall,
  type ToolSpec,
} from "../model.js";
import { imagesOf } from "./openai-images.js";
import type { SdkErrors } from "./sdk-error.js";
import { sdkStream } from "./sdk-stream.js";

/** Options of `OpenAIProvider`. */
export interface OpenAIProviderOptions {
  /** Provider id (default `openai`). */
  id?: string;
  /** Base URL of an OpenAI-compatible API, including `/v1` (default `https://api.openai.com/v1`). */
  baseUrl?: string;
  /**
   * API key. When omitted, `OPENAI_API_KEY` is used only if `baseUrl` is omitted too (so that key is
   * never sent to a third-party server); keyless local servers get a placeholder.
   */
  apiKey?: string;
  /**
   * Longest wait for the server, in ms: for the response headers and then between two stream chunks
   * (default 120 000). A stalled call fails as `network`.
   */
  timeoutMs?: number;
  /** SDK-level retries (default 0: failover between providers is decided above us). */
  maxRetries?: number;
}

const DEFAULT_BASE_URL = "https://api.openai.com/v1";
const DEFAULT_TIMEOUT_MS = 120_000;

/** Error texts OpenAI-compatible servers use when the prompt does not fit the model's context. */
const CONTEXT_OVERFLOW = new RegExp(
  [
    "context[_ -]?(length|window)",
    "maximum context",
    "too many tokens",
    "(prompt|input) is too long",
    "reduce the length",
  ].join("|"),
  "i",
);

/** A model provider for the OpenAI Chat Completions API and compatible servers, streaming. */
export class OpenAIProvider implements ModelProvider {
  /** Provider id, the `provider` part of `provider/model`. */
  readonly id: string;
  private readonly client: OpenAI;
  private readonly timeoutMs: number;

  /** Creates the provider; no request is made until `stream()`. */
  constructor(options: OpenAIProviderOptions = {}) {
    this.id = options.id ?? "openai";
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const envKey = options.baseUrl === undefined ? process.env.OPENAI_API_KEY : undefined;
    this.client = new OpenAI({
      // Explicit values everywhere, so OPENAI_BASE_URL / OPENAI_ORG_ID / ... in the environment
      // cannot silently redirect or decorate this provider's requests.
      baseURL: options.baseUrl ?? DEFAULT_BASE_URL,
      // The SDK refuses to start without a key; local servers (Ollama, vLLM...) need none.
      apiKey: options.apiKey ?? envKey ?? "no-key",
      organization: null,
      project: null,
      timeout: this.timeoutMs,
      maxRetries: options.maxRetries ?? 0,
      // Failures reach the caller as ModelError; SDK console logging would only duplicate them.
      logLevel: process.env.OPENAI_LOG ? undefined : "off",
    });
  }

  /**
   * Streams one call: `text` deltas as they arrive, then the assembled `tool_call`s in index order,
   * then `done`. Throws `ModelError` with a classified kind on failure. Tool calls are emitted even
   * when the stop reason is `length`; their arguments may then be truncated JSON.
   */
  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const reply = new StreamedCompletion(this.id);
    return sdkStream({
      providerId: this.id,
      timeoutMs: this.timeoutMs,
      signal: request.signal,
      sdk: SDK_ERRORS,
      open: (signal) =>
        this.client.chat.completions.create(
          {
            model: request.model,
            messages: request.messages.map(toOpenAIMessage),
            // OpenAI rejects an empty `tools` array, so leave it out when there are none.
            ...(request.tools && request.tools.length > 0 ? { tools: request.tools.map(toOpenAITool) } : {}),
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal },
        ),
      take: (chunk) => reply.take(chunk),
      end: () => reply.end(),
    });
  }
}

/** One streamed completion as its chunks arrive: text and images at once, tool calls and `done` at its end. */
class StreamedCompletion {
  readonly #calls = new ToolCallAssembler();
  #finishReason: ChatCompletionChunk.Choice["finish_reason"] = null;
  #usage: ModelUsage | undefined;

  constructor(private readonly providerId: string) {}

  *take(chunk: ChatCompletionChunk): Iterable<ModelEvent> {
    // The SDK hands on whatever JSON a `data:` line held: one that is no chunk is the provider's error (as
    // a line that is no JSON is), not a network failure.
    if (typeof chunk !== "object" || chunk === null || !Array.isArray(chunk.choices))
      throw new ModelError(
        "unknown",
        `${this.providerId}: sent a stream event that is not a chat completion chunk`,
      );
    if (chunk.usage) {
      this.#usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
    }
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue; // we never ask for n > 1
      for (const fragment of choice.delta?.tool_calls ?? []) this.#calls.add(fragment);
      if (choice.finish_reason) this.#finishReason = choice.finish_reason;
      const text = choice.delta?.content;
      if (text) yield { type: "text", delta: text };
      for (const image of imagesOf(choice.delta)) yield { type: "image", ...image };
    }
  }

  *end(): Iterable<ModelEvent> {
    if (this.#finishReason === null) {
      // A cut connection can look like a clean end; without a finish_reason the reply is incomplete.
      throw new ModelError("network", `${this.providerId}: stream ended without a finish_reason`);
    }
    const toolCalls = this.#calls.finish(this.providerId);
    for (const call of toolCalls) yield { type: "tool_call", call };
    yield {
      type: "done",
      stopReason: toStopReason(this.#finishReason, toolCalls.length > 0),
      usage: this.#usage,
    };
  }
}

/** Maps one of our messages to the Chat Completions wire shape. */
function toOpenAIMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case "system":
      return { role: message.role, content: message.content };
    case "user":
      if (!message.images?.length) return { role: "user", content: message.content };
      // Images as `image_url` content parts with data URLs, after the text.
      return {
        role: "user",
        content: [
          ...(message.content ? [{ type: "text" as const, text: message.content }] : []),
          ...message.images.map((image) => ({
            type: "image_url" as const,
            image_url: { url: `data:${image.mime};base64,${image.data}` },
          })),
        ],
      };
    case "assistant": {
      const toolCalls = message.toolCalls ?? [];
      if (toolCalls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        // Some compatible servers reject "" next to tool_calls; null is what OpenAI itself sends.
        content: message.content === "" ? null : message.content,
        tool_calls: toolCalls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
  }
}

/** Maps one of our tool specs to a Chat Completions function tool. */
function toOpenAITool(tool: ToolSpec): ChatCompletionTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

function toStopReason(reason: NonNullable<ChatCompletionChunk.Choice["finish_reason"]>, hasCalls: boolean) {
  const map: Record<typeof reason, ModelStopReason> = {
    stop: "stop",
    length: "length",
    content_filter: "content_filter",
    tool_calls: "tool_calls",
    function_call: "tool_calls",
  };
  // Some compatible servers say `stop` after emitting tool calls; the calls are what matters.
  const mapped: ModelStopReason = map[reason] ?? "stop";
  return mapped === "stop" && hasCalls ? "tool_calls" : mapped;
}

/** A tool call being assembled from streamed fragments. */
interface PartialCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

/** Joins streamed tool-call fragments (keyed by `index`) into complete calls. */
class ToolCallAssembler {
  private readonly parts: PartialCall[] = [];
  private readonly byIndex = new Map<number, PartialCall>();

  add(fragment: ChatCompletionChunk.Choice.Delta.ToolCall): void {
    // `index` is required by the spec, but some compatible servers omit it: a fragment with an id
    // then starts a new call and one without continues the last.
    const last = this.parts.at(-1);
    const index: number =
      typeof fragment.index === "number"
        ? fragment.index
        : fragment.id && fragment.id !== last?.id
          ? (last?.index ?? -1) + 1
          : (last?.index ?? 0);
    let part = this.byIndex.get(index);
    // A different id at a known index is a new call from a server that reuses indexes.
    if (!part || (fragment.id && part.id && fragment.id !== part.id)) {
      part = { index, id: "", name: "", arguments: "" };
      this.parts.push(part);
      this.byIndex.set(index, part);
    }
    if (fragment.id) part.id = fragment.id;
    // Names come whole (some servers repeat them on every fragment), arguments in pieces.
    if (fragment.function?.name) part.name = fragment.function.name;
    if (fragment.function?.arguments) part.arguments += fragment.function.arguments;
  }

  finish(providerId: string): ToolCall[] {
    const ordered = [...this.parts].sort((a, b) => a.index - b.index); // stable: ties keep arrival order
    return ordered.map((part, i) => {
      if (!part.name) throw new ModelError("unknown", `${providerId}: streamed tool call without a name`);
      return {
        id: part.id || `call_${i}`,
        name: part.name,
        // A no-argument call may stream nothing; "{}" keeps the arguments parseable.
        arguments: part.arguments || "{}",
      };
    });
  }
}

/** How openai's errors read (see sdkModelError). */
const SDK_ERRORS: SdkErrors = {
  UserAbort: APIUserAbortError,
  Connection: APIConnectionError,
  apiError: (error, providerId) => {
    if (!(error instanceof APIError)) return undefined;
    const text = `${error.message} ${error.code ?? ""} ${error.type ?? ""}`;
    return new ModelError(kindOf(error.status, text), `${providerId}: ${error.message}`, {
      cause: error,
      status: error.status,
    });
  },
};

/** The error kind for an HTTP status, or for an error event inside a stream (no status). */
function kindOf(status: number | undefined, text: string): ModelErrorKind {
  if (status === undefined) {
    if (CONTEXT_OVERFLOW.test(text)) return "context_overflow";
    if (/rate[_ ]?limit/i.test(text)) return "rate_limit";
    if (/overload|server[_ ]error|unavailable/i.test(text)) return "overloaded";
    return "unknown";
  }
  if (status === 401 || status === 403) return "auth";
  if (status === 429) return "rate_limit";
  if (status === 408) return "network";
  // 409 is a transient lock conflict at OpenAI; 5xx (incl. 529) means the service is struggling.
  if (status === 409 || status >= 500) return "overloaded";
  if (status === 413) return "context_overflow"; // the request is too big: usually the conversation
  if (status >= 400) return CONTEXT_OVERFLOW.test(text) ? "context_overflow" : "bad_request";
  return "unknown";
}
