import type { ModelEvent, ModelProvider, ModelRequest } from "../model.js";
import { ModelError } from "../model.js";

/** The answer the offline model gives to `text`: deterministic, so tests and demos can rely on it. */
export function offlineAnswer(text: string): string {
  return [
    `You said: ${text}`,
    "I am the offline model, so I can only echo what you write.",
    'To talk to a real model, set `agent.model` (for example "openai/gpt-4o-mini") and the provider\'s key in hub.json5.',
  ].join("\n\n");
}

/**
 * A deterministic model that needs no network and no keys: it echoes the last
 * user message, streamed word by word, so the hub works out of the box. With no
 * delay between words the whole answer is one delta: nobody could see the words
 * arrive, and each delta costs the run a turn of its stream.
 */
export class OfflineProvider implements ModelProvider {
  readonly id = "offline";
  constructor(private readonly tokenDelayMs = 0) {}

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const last = [...request.messages].reverse().find((m) => m.role === "user");
    const answer = offlineAnswer(last?.content.trim() ?? "");
    const words = answer.match(/\S+\s*/g) ?? [];
    const deltas = this.tokenDelayMs > 0 ? words : [answer];
    for (const delta of deltas) {
      if (request.signal?.aborted) throw new ModelError("aborted", "the offline model call was aborted");
      if (this.tokenDelayMs > 0) await new Promise((r) => setTimeout(r, this.tokenDelayMs));
      yield { type: "text", delta };
    }
    yield { type: "done", stopReason: "stop", usage: { inputTokens: 0, outputTokens: words.length } };
  }
}
