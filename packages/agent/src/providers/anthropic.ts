import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from "@anthropic-ai/sdk";
import type {
  ContentBlockParam,
  MessageParam,
  RawMessageStreamEvent,
  StopReason,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
} from "@anthropic-ai/sdk/resources/messages";
import {
  type ChatMessage,
  ModelError,
  type ModelErrorKind,
  type ModelEvent,
  type ModelImage,
  type ModelProvider,
  type ModelRequest,
  type ModelStopReason,
  type ModelUsage,
  type ToolCall,
  type ToolSpec,
} from "../model.js";
import type { SdkErrors } from "./sdk-error.js";
import { sdkStream } from "./sdk-stream.js";

/** Options of `AnthropicProvider`. */
export interface AnthropicProviderOptions {
  /** Provider id (default `anthropic`). */
  id?: string;
  /**
   * Base URL of the API, without `/v1`: the SDK appends `/v1/messages`
   * (default `https://api.anthropic.com`).
   */
  baseUrl?: string;
  /**
   * API key. When omitted, `ANTHROPIC_API_KEY` is used only if `baseUrl` is omitted too (so that key is
   * never sent to a third-party server); keyless servers get a placeholder.
   */
  apiKey?: string;
  /**
   * Longest wait for the server, in ms: for the response headers and then between two stream events
   * (default 120 000). A stalled call fails as `network`.
   */
  timeoutMs?: number;
  /** SDK-level retries (default 0: failover between providers is decided above us). */
  maxRetries?: number;
  /** `max_tokens` of every call, which Anthropic requires (default 4096). */
  maxTokens?: number;
  /**
   * Marks the end of the system prompt's operator part (see `ChatMessage`'s `stableChars`) for Anthropic's
   * prompt cache (`cache_control`), so the tools and that part are read from it on every call within its
   * lifetime (default true).
   */
  promptCache?: boolean;
}

const DEFAULT_BASE_URL = "https://api.anthropic.com";
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_TOKENS = 4096;

/** Error texts meaning the prompt does not fit the model's context window. */
const CONTEXT_OVERFLOW = new RegExp(
  [
    "prompt is too long",
    "exceeds? (the )?context",
    "context[_ -]?(length|window|limit)",
    "maximum context",
    "too many tokens",
    "input is too long",
  ].join("|"),
  "i",
);

/** A model provider for the Anthropic Messages API, streaming, over `@anthropic-ai/sdk`. */
export class AnthropicProvider implements ModelProvider {
  /** Provider id, the `provider` part of `provider/model`. */
  readonly id: string;
  private readonly client: Anthropic;
  private readonly timeoutMs: number;
  private readonly maxTokens: number;
  private readonly promptCache: boolean;

  /** Creates the provider; no request is made until `stream()`. */
  constructor(options: AnthropicProviderOptions = {}) {
    this.id = options.id ?? "anthropic";
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
    this.promptCache = options.promptCache ?? true;
    const envKey = options.baseUrl === undefined ? process.env.ANTHROPIC_API_KEY : undefined;
    this.client = new Anthropic({
      // Explicit base URL and key, so ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN or a credentials
      // profile on disk cannot silently redirect or re-authenticate this provider's requests
      // (the SDK reads none of them once a key is passed).
      baseURL: options.baseUrl ?? DEFAULT_BASE_URL,
      apiKey: options.apiKey ?? envKey ?? "no-key",
      timeout: this.timeoutMs,
      maxRetries: options.maxRetries ?? 0,
      // Failures reach the caller as ModelError; SDK console logging would only duplicate them.
      logLevel: process.env.ANTHROPIC_LOG ? undefined : "off",
    });
  }

  /**
   * Streams one call: `text` deltas as they arrive, then the assembled `tool_call`s in block order,
   * then `done`. Throws `ModelError` with a classified kind on failure. Tool calls are emitted even
   * when the stop reason is `length`; their arguments may then be truncated JSON.
   */
  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const message = new StreamedMessage(this.id);
    return sdkStream({
      providerId: this.id,
      timeoutMs: this.timeoutMs,
      signal: request.signal,
      sdk: SDK_ERRORS,
      open: (signal) => this.#create(request, signal),
      take: (event) => {
        const text = message.take(event);
        return text ? [{ type: "text", delta: text }] : [];
      },
      end: () => message.end(),
    });
  }

  #create(request: ModelRequest, signal: AbortSignal) {
    const { system, messages } = toAnthropicMessages(request.messages, this.promptCache);
    return this.client.messages.create(
      {
        model: request.model,
        max_tokens: this.maxTokens,
        messages,
        ...(system !== undefined ? { system } : {}),
        ...(request.tools && request.tools.length > 0 ? { tools: request.tools.map(toAnthropicTool) } : {}),
        stream: true,
      },
      { signal },
    );
  }
}

/** A prompt-side usage count as the Messages API reports it (in message_start, and cumulative in message_delta). */
interface PromptUsage {
  input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/**
 * The prompt's token counts so far: each field the event carries replaces the earlier one (message_delta's
 * counts are cumulative, and some API versions leave fields out of it).
 */
function mergedPrompt(earlier: Required<PromptUsage>, usage: PromptUsage): Required<PromptUsage> {
  return {
    input_tokens: usage.input_tokens ?? earlier.input_tokens,
    cache_creation_input_tokens: usage.cache_creation_input_tokens ?? earlier.cache_creation_input_tokens,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? earlier.cache_read_input_tokens,
  };
}

/**
 * The prompt's tokens as a call's usage counts them: Anthropic's `input_tokens` leaves out those read from or
 * written to its prompt cache, which the model read all the same (OpenAI's `prompt_tokens` has them).
 */
const promptTokens = (p: Required<PromptUsage>) =>
  (p.input_tokens ?? 0) + (p.cache_creation_input_tokens ?? 0) + (p.cache_read_input_tokens ?? 0);

const NO_PROMPT: Required<PromptUsage> = {
  input_tokens: null,
  cache_creation_input_tokens: null,
  cache_read_input_tokens: null,
};

/** One streamed message as its events arrive: its tool calls, stop reason and token counts. */
class StreamedMessage {
  readonly #calls = new ToolUseAssembler();
  #stopReason: StopReason | null = null;
  #usage: ModelUsage | undefined;
  #prompt = NO_PROMPT;

  constructor(private readonly providerId: string) {}

  /** Takes one stream event; returns the text it adds, if any. */
  take(event: RawMessageStreamEvent): string | undefined {
    switch (event.type) {
      case "message_start":
        this.#prompt = mergedPrompt(NO_PROMPT, event.message.usage);
        this.#usage = {
          inputTokens: promptTokens(this.#prompt),
          outputTokens: event.message.usage.output_tokens,
        };
        return undefined;
      case "content_block_start": {
        const block = event.content_block;
        if (block.type === "tool_use") this.#calls.start(event.index, block.id, block.name);
        // Text blocks open empty in practice, but nothing forbids initial text.
        else if (block.type === "text") return block.text || undefined;
        return undefined;
      }
      case "content_block_delta":
        if (event.delta.type === "text_delta") return event.delta.text || undefined;
        if (event.delta.type === "input_json_delta")
          this.#calls.append(event.index, event.delta.partial_json, this.providerId);
        return undefined;
      case "message_delta":
        if (event.delta.stop_reason) this.#stopReason = event.delta.stop_reason;
        this.#prompt = mergedPrompt(this.#prompt, event.usage);
        this.#usage = { inputTokens: promptTokens(this.#prompt), outputTokens: event.usage.output_tokens };
        return undefined;
      default:
        // content_block_stop and message_stop need nothing: tool calls are emitted at the end.
        return undefined;
    }
  }

  /** The assembled tool calls in block order, then `done`; a stream without a stop reason is cut short. */
  *end(): Iterable<ModelEvent> {
    if (this.#stopReason === null) {
      // A cut connection can look like a clean end; without a stop_reason the reply is incomplete.
      throw new ModelError("network", `${this.providerId}: stream ended without a stop_reason`);
    }
    const toolCalls = this.#calls.finish();
    for (const call of toolCalls) yield { type: "tool_call", call };
    yield {
      type: "done",
      stopReason: toStopReason(this.#stopReason, toolCalls.length > 0),
      usage: this.#usage,
    };
  }
}

/** A conversation turn being built: Anthropic wants user and assistant turns to alternate. */
interface Turn {
  role: "user" | "assistant";
  blocks: ContentBlockParam[];
}

/**
 * Maps our messages to the Messages API: system messages joined into the top-level `system` (see
 * `systemOf`), assistant tool calls as `tool_use` blocks, tool results as `tool_result` blocks of a user
 * turn, and consecutive same-role turns merged (empty text is dropped: the API rejects empty blocks).
 */
function toAnthropicMessages(
  messages: ChatMessage[],
  promptCache: boolean,
): { system?: string | TextBlockParam[]; messages: MessageParam[] } {
  const system: Array<Extract<ChatMessage, { role: "system" }>> = [];
  const turns: Turn[] = [];
  const add = (role: Turn["role"], blocks: ContentBlockParam[]): void => {
    if (blocks.length === 0) return;
    const last = turns.at(-1);
    if (last?.role === role) last.blocks.push(...blocks);
    else turns.push({ role, blocks });
  };
  const text = (content: string): ContentBlockParam[] => (content ? [{ type: "text", text: content }] : []);

  for (const message of messages) {
    switch (message.role) {
      case "system":
        if (message.content) system.push(message);
        break;
      case "user":
        // Images first, then the text that speaks about them (Anthropic's advice).
        add("user", [...(message.images ?? []).map(imageBlock), ...text(message.content)]);
        break;
      case "assistant":
        add("assistant", [
          ...text(message.content),
          ...(message.toolCalls ?? []).map(
            (call): ContentBlockParam => ({
              type: "tool_use",
              id: call.id,
              name: call.name,
              input: toolInput(call.arguments),
            }),
          ),
        ]);
        break;
      case "tool": {
        const result: ToolResultBlockParam = { type: "tool_result", tool_use_id: message.toolCallId };
        // An empty result is sent without content rather than as an empty text.
        if (message.content) result.content = message.content;
        add("user", [result]);
        break;
      }
    }
  }

  return {
    ...(system.length > 0 ? { system: systemOf(system, promptCache) } : {}),
    messages: turns.map(({ role, blocks }) => {
      // tool_result blocks must open their user turn, before any text merged into it.
      const ordered =
        role === "user"
          ? [...blocks.filter(isToolResult), ...blocks.filter((block) => !isToolResult(block))]
          : blocks;
      const [only] = ordered;
      // A lone text block is sent in the plain string form.
      return ordered.length === 1 && only?.type === "text"
        ? { role, content: only.text }
        : { role, content: ordered };
    }),
  };
}

/**
 * The top-level `system`: the system messages' texts joined. With `promptCache`, when the first one says how
 * much of it is the same on every call (`stableChars`), that part is a block of its own marked for the
 * prompt cache (`cache_control`), and the rest follows in a second block; a prefix under the model's
 * minimum (1,024 to 4,096 tokens, by model) is simply not cached.
 */
function systemOf(
  system: Array<Extract<ChatMessage, { role: "system" }>>,
  promptCache: boolean,
): string | TextBlockParam[] {
  const text = system.map((m) => m.content).join("\n\n");
  const first = system[0]?.content ?? "";
  const stable = system[0]?.stableChars ?? 0;
  const cached = first.slice(0, stable).trimEnd();
  // A mark past the first message's end would cut into the next one's text.
  if (!promptCache || cached === "" || stable > first.length) return text;
  const rest = text.slice(stable).trim();
  const head: TextBlockParam = { type: "text", text: cached, cache_control: { type: "ephemeral" } };
  return rest ? [head, { type: "text", text: rest }] : [head];
}

function imageBlock(image: ModelImage): ContentBlockParam {
  const mime = image.mime as "image/jpeg" | "image/png" | "image/gif" | "image/webp";
  return { type: "image", source: { type: "base64", media_type: mime, data: image.data } };
}

function isToolResult(block: ContentBlockParam): boolean {
  return block.type === "tool_result";
}

/** A tool call's JSON arguments as a `tool_use` input object; `{}` when empty, invalid or not an object. */
function toolInput(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // fall through
  }
  return {};
}

/** Maps one of our tool specs to an Anthropic custom tool. */
function toAnthropicTool(tool: ToolSpec): Tool {
  return {
    name: tool.name,
    ...(tool.description ? { description: tool.description } : {}),
    // Anthropic requires an object schema; a spec without `type` gets it.
    input_schema: { ...tool.parameters, type: "object" },
  };
}

function toStopReason(reason: StopReason, hasCalls: boolean): ModelStopReason {
  const map: Record<StopReason, ModelStopReason> = {
    end_turn: "stop",
    stop_sequence: "stop",
    pause_turn: "stop",
    tool_use: "tool_calls",
    max_tokens: "length",
    model_context_window_exceeded: "length",
    refusal: "content_filter",
  };
  // Unknown future reasons count as a plain stop; the tool calls, if any, are what matters.
  const mapped: ModelStopReason = map[reason] ?? "stop";
  return mapped === "stop" && hasCalls ? "tool_calls" : mapped;
}

/** A tool_use block being assembled from streamed `input_json_delta` fragments. */
interface PartialToolUse {
  id: string;
  name: string;
  json: string;
}

/** Joins streamed tool_use blocks (keyed by content block index) into complete calls, in block order. */
class ToolUseAssembler {
  private readonly blocks = new Map<number, PartialToolUse>();

  start(index: number, id: string, name: string): void {
    this.blocks.set(index, { id, name, json: "" });
  }

  append(index: number, fragment: string, providerId: string): void {
    const block = this.blocks.get(index);
    if (!block) {
      throw new ModelError("unknown", `${providerId}: input_json_delta for unknown content block ${index}`);
    }
    block.json += fragment;
  }

  finish(): ToolCall[] {
    return [...this.blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, block]) => ({
        id: block.id || `toolu_${index}`,
        name: block.name,
        // A no-argument call may stream nothing; "{}" keeps the arguments parseable.
        arguments: block.json || "{}",
      }));
  }
}

/** How @anthropic-ai/sdk's errors read (see sdkModelError). */
const SDK_ERRORS: SdkErrors = {
  UserAbort: APIUserAbortError,
  Connection: APIConnectionError,
  apiError: (error, providerId) => {
    if (!(error instanceof APIError)) return undefined;
    // `apiMessage` is the body's error.message; the SDK's own message is the whole body as JSON.
    const message = error.apiMessage ?? error.message;
    const text = `${message} ${error.type ?? ""} ${error.errorCode ?? ""}`;
    const prefix = error.status === undefined ? "" : `${error.status} `;
    return new ModelError(kindOf(error.status, error.type, text), `${providerId}: ${prefix}${message}`, {
      cause: error,
      status: error.status,
    });
  },
};

/**
 * The error kind for an HTTP status, or for an `error` event inside a stream (no status), which
 * carries only the error type (`overloaded_error`, `rate_limit_error`...).
 */
function kindOf(status: number | undefined, type: string | null, text: string): ModelErrorKind {
  if (status === undefined) {
    switch (type) {
      case "overloaded_error":
      case "api_error":
      case "timeout_error":
        return "overloaded";
      case "rate_limit_error":
        return "rate_limit";
      case "authentication_error":
      case "permission_error":
        return "auth";
      case "request_too_large":
        return "context_overflow";
      case "invalid_request_error":
        return CONTEXT_OVERFLOW.test(text) ? "context_overflow" : "bad_request";
      default:
        if (CONTEXT_OVERFLOW.test(text)) return "context_overflow";
        if (/rate[_ ]?limit/i.test(text)) return "rate_limit";
        if (/overload|server[_ ]error|unavailable/i.test(text)) return "overloaded";
        return "unknown";
    }
  }
  if (status === 401 || status === 403) return "auth";
  if (status === 429) return "rate_limit";
  if (status === 408) return "network";
  // 5xx (incl. 529 overloaded_error and 504 timeout_error) means the service is struggling.
  if (status >= 500) return "overloaded";
  if (status === 413) return "context_overflow"; // the request is too big: usually the conversation
  if (status >= 400) return CONTEXT_OVERFLOW.test(text) ? "context_overflow" : "bad_request";
  return "unknown";
}
