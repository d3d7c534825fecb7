import { loadOnce } from "../load-once.js";
import { ModelError, type ModelEvent, type ModelProvider, type ModelRequest } from "../model.js";
import type { AnthropicProviderOptions } from "./anthropic.js";
import type { OpenAIProviderOptions } from "./openai.js";

/**
 * A provider whose module (and the SDK it imports) is loaded at its first call, not when the hub starts:
 * a hub on the offline model, or on one API, never loads the other SDKs.
 */
export function lazyProvider(id: string, load: () => Promise<ModelProvider>): ModelProvider {
  // A failed load is tried again at the next call.
  const provider = loadOnce(() =>
    load().catch((error: unknown) => {
      throw new ModelError("unknown", `${id}: the provider could not be loaded (${String(error)})`, {
        cause: error,
      });
    }),
  );
  return {
    id,
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      yield* (await provider()).stream(request);
    },
  };
}

/** An `OpenAIProvider` (Chat Completions and compatible servers), loaded at its first call. */
export function openAIProvider(options: OpenAIProviderOptions): ModelProvider {
  return lazyProvider(options.id ?? "openai", async () => {
    // The SDK first: Node keeps a module's failed load, so ./openai.js must not be the one that fails.
    await import("openai");
    const { OpenAIProvider } = await import("./openai.js");
    return new OpenAIProvider(options);
  });
}

/** An `AnthropicProvider` (the Messages API), loaded at its first call. */
export function anthropicProvider(options: AnthropicProviderOptions): ModelProvider {
  return lazyProvider(options.id ?? "anthropic", async () => {
    await import("@anthropic-ai/sdk"); // the SDK first (see openAIProvider)
    const { AnthropicProvider } = await import("./anthropic.js");
    return new AnthropicProvider(options);
  });
}
