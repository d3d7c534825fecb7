/** A tool call the model asked for. `arguments` is the raw JSON text the model produced. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** An image given to a model that takes images, base64-encoded (never written to the transcript). */
export interface ModelImage {
  /** `image/jpeg`, `image/png`, `image/gif` or `image/webp`. */
  mime: string;
  /** The bytes, base64. */
  data: string;
  /** The file name, for logs and notes. */
  name: string;
}

/** One message of the conversation sent to a model. */
export type ChatMessage =
  | {
      role: "system";
      content: string;
      /**
       * How many leading characters of `content` are the same on every turn of every chat (the operator's
       * part of the system prompt): a provider whose prompt cache needs explicit breakpoints (Anthropic's
       * `cache_control`) marks its end. Unset: none of it is known to be.
       */
      stableChars?: number;
    }
  | { role: "user"; content: string; images?: ModelImage[] }
  | { role: "assistant"; content: string; toolCalls?: ToolCall[] }
  | { role: "tool"; toolCallId: string; content: string };

/** A tool the model may call: name, description and a JSON schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Token counts a provider reported for one call. */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Why a model call ended. */
export type ModelStopReason = "stop" | "tool_calls" | "length" | "content_filter";

/** What a model stream yields: text as it arrives, complete tool calls, then one `done`. */
export type ModelEvent =
  | { type: "text"; delta: string }
  | { type: "tool_call"; call: ToolCall }
  /** An image in the answer, in its place after the text so far (providers that return images). */
  | { type: "image"; mime: string; data: Uint8Array }
  | { type: "done"; stopReason: ModelStopReason; usage?: ModelUsage };

/** One streaming model call. */
export interface ModelRequest {
  /** The model name within the provider (the part after `provider/`). */
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  signal?: AbortSignal;
}

/**
 * A model provider: streams one call's events. Implementations throw
 * `ModelError` with a classified `kind` when the call fails.
 */
export interface ModelProvider {
  readonly id: string;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

/** How a model call failed; failover decisions are made on this. */
export type ModelErrorKind =
  | "auth"
  | "rate_limit"
  | "overloaded"
  | "context_overflow"
  | "bad_request"
  | "network"
  | "aborted"
  | "unknown";

/** A failed model call, classified. */
export class ModelError extends Error {
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    options?: { cause?: unknown; status?: number },
  ) {
    super(message, options);
    this.name = "ModelError";
    this.status = options?.status;
  }
  readonly status: number | undefined;
}
